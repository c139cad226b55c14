"""`inaemu switch --packet-in`: every port behind one nanomsg PAIR socket, driven here by a
plain-Python peer (packetinpeer.py), by pynng (the library PTF's nn platform uses) and by the
socket alone (PacketInSocket without a switch)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4switch.ports.errors import PortConfigError, PortError
from p4switch.ports.packetin import HEADER, INFO_REQ, PACKET_OUT, PORT_ADD, PORT_SET_STATUS
from p4switch.ports.packetin_socket import PacketInSocket, parse_address

from .packetinpeer import TIMEOUT, PacketInSwitch, Peer, compiled_echo, frame, ingress_of


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    return compiled_echo(tmp_path_factory.mktemp("echo"))


@pytest.fixture
def address(tmp_path) -> str:
    return f"ipc://{tmp_path}/packets.ipc"


def test_frames_come_back_on_their_ports_in_order(program, address):
    switch = PacketInSwitch(address, program)
    try:
        assert f"ports on packet-in {address}" in switch.ready
        peer = Peer(address)
        sent = [(port, frame(i)) for i, port in enumerate([0, 1, 7, 510, 1, 0, 300] * 20)]
        for port, data in sent:
            peer.send(port, data)
        got = [peer.receive() for _ in sent]
        assert [port for port, _ in got] == [port for port, _ in sent]
        assert [data[12:] for _, data in got] == [data[12:] for _, data in sent]
        assert all(ingress_of(data) == port for port, data in got)
        assert peer.receive(timeout_s=0.3) is None
    finally:
        out, err = switch.stop()
    assert "packet-in " + address + ": 140 packets in, 140 out, 1 peer" in out
    assert "port 510 (-): rx 20 tx 20" in out


def test_ports_past_nine_bits_keep_their_low_bits_and_minus_one_drops(program, address):
    switch = PacketInSwitch(address, program)
    try:
        peer = Peer(address)
        for port in (600, -1, 1 << 20):
            peer.send(port, frame(1))
        assert [port for port, _ in (peer.receive(), peer.receive())] == [88, 0]
        assert peer.receive(timeout_s=0.3) is None             # -1 is port 511: dropped
    finally:
        switch.stop()


def test_requests_refusals_and_the_thrift_port_table(program, address):
    switch = PacketInSwitch(address, program, "--thrift-port", "0")
    try:
        peer = Peer(address)
        peer.send_message(HEADER.pack(INFO_REQ, 7, 0))
        assert peer.message() == bytes.fromhex("06000000070000000000000001000000")
        for port in (3, 1):
            peer.send_message(HEADER.pack(PORT_ADD, port, 0))
        peer.send_message(HEADER.pack(PORT_SET_STATUS, 3, 0))          # BMv2's 0: down
        peer.send_message(b"\x03\x00")                                  # too short
        peer.send_message(HEADER.pack(3, 2, 50) + b"abc")               # says 50, has 3
        peer.send_message(HEADER.pack(PACKET_OUT, 2, 0))                # the switch's own type
        peer.send(2, frame(9))                                          # still served after
        assert peer.receive()[0] == 2
        thrift_port = int(switch.ready.rsplit("thrift ", 1)[1])
        from p4switch.thrift.client import RuntimeClient
        with RuntimeClient(port=thrift_port) as client:
            ports = client.call("standard", "bm_dev_mgr_show_ports")
        assert [(p["port_num"], p["iface_name"], p["is_up"]) for p in ports] == \
            [(1, "N/A", True), (3, "N/A", False)]
    finally:
        out, err = switch.stop()
    assert "shorter than the 12-byte header" in err
    assert "says 50 bytes, but 3 follow the header" in err
    assert "PACKET_OUT received" in err
    assert "3 messages refused" in out


def test_a_peer_that_is_not_sp_is_closed_and_the_next_is_served(program, address):
    switch = PacketInSwitch(address, program)
    try:
        path = address.removeprefix("ipc://")
        with socket.socket(socket.AF_UNIX) as stranger:
            stranger.connect(path)
            stranger.sendall(b"GET / HTTP/1.1\r\n\r\n")
            stranger.settimeout(TIMEOUT)
            assert stranger.recv(100) == b"\x00SP\x00\x00\x10\x00\x00"   # its greeting, then
            assert stranger.recv(100) == b""                              # closed
        peer = Peer(address)
        peer.send(4, frame(4))
        assert peer.receive()[0] == 4
    finally:
        out, err = switch.stop()
    assert "not an SP greeting" in err and "connection closed" in err
    assert "1 connections closed for protocol errors" in out


def test_one_peer_at_a_time_then_the_next(program, address):
    switch = PacketInSwitch(address, program)
    try:
        first = Peer(address)
        first.send(1, frame(1))
        assert first.receive()[0] == 1
        second = Peer(address)
        assert second.message(timeout_s=5) is None and second.closed   # a PAIR has one peer
        first.send(2, frame(2))
        assert first.receive()[0] == 2
        first.close()
        deadline = time.monotonic() + TIMEOUT
        while True:                          # the switch sees the first leave, then takes one
            third = Peer(address)
            got = None
            if not third.closed:
                try:
                    third.send(3, frame(3))
                    got = third.receive(timeout_s=1.0)
                except (BrokenPipeError, ConnectionResetError):
                    got = None               # still refused: the first's leaving not yet seen
            if got is not None or time.monotonic() > deadline:
                break
            third.close()
        assert got is not None and got[0] == 3
    finally:
        out, _ = switch.stop()
    assert "2 peers" in out and "refused while a peer was connected" in out


def test_pynng_as_ptf_uses_it(program, address):
    import pynng        # a pinned test dependency (pyproject.toml)
    switch = PacketInSwitch(address, program)
    try:
        with pynng.Pair0(recv_timeout=int(TIMEOUT * 1000), send_timeout=int(TIMEOUT * 1000)) \
                as sock:
            sock.dial(address, block=True)
            for port in (0, 5):                                       # PTF adds its ports
                sock.send(HEADER.pack(PORT_ADD, port, 0))
            for port in (5, 0, 5):
                sock.send(HEADER.pack(3, port, 30) + frame(port, 16))
            got = [sock.recv() for _ in range(3)]
        assert [HEADER.unpack_from(m)[:2] for m in got] == [(PACKET_OUT, 5), (PACKET_OUT, 0),
                                                            (PACKET_OUT, 5)]
        assert all(HEADER.unpack_from(m)[2] == len(m) - HEADER.size == 30 for m in got)
    finally:
        switch.stop()


def test_frames_sent_with_no_peer_wait_for_one():
    sock = PacketInSocket("tcp://127.0.0.1:0".replace(":0", f":{_free_port()}"), capacity=3)
    sock.start()
    try:
        assert sock.transmit_port(4, [b"a", b"b"]) == (2, 0)
        assert sock.transmit_port(5, [b"c", b"d"]) == (2, 0)        # the 4th is over capacity
        peer = Peer(sock.address)
        assert [peer.receive() for _ in range(3)] == [(4, b"a"), (4, b"b"), (5, b"c")]
        assert peer.receive(timeout_s=0.3) is None
        sock.transmit_port(6, [b"e"])
        assert peer.receive() == (6, b"e")
        assert sock.dropped_no_peer == 1 and sock.packets_out == 4
    finally:
        sock.close()


def test_packets_wait_in_order_when_the_driver_is_slow():
    sock = PacketInSocket(f"tcp://127.0.0.1:{_free_port()}", capacity=4)
    sock.start()
    try:
        peer = Peer(sock.address)
        for i in range(10):
            peer.send(i % 3, bytes([i]))
        taken = []
        deadline = time.monotonic() + TIMEOUT
        while len(taken) < 10 and time.monotonic() < deadline:
            for port, frames in sock.receive_tagged(3):
                taken += [(port, f[0]) for f in frames]
            time.sleep(0.01)
        assert taken == [(i % 3, i) for i in range(10)]
    finally:
        sock.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the command line --------------------------------------------------------------------------
def run_switch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inaemu", "switch", "--no-grpc", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, words", [
    (["--packet-in", "udp://x:1"], "expected ipc://PATH or tcp://HOST:PORT"),
    (["--packet-in", "ipc://"], "no path after ipc://"),
    (["--packet-in", "tcp://host"], "expected tcp://HOST:PORT"),
    (["--packet-in", "tcp://*:0"], "is not in 1..65535"),
    (["--packet-in", "ipc:///tmp/x.ipc", "--use-files", "0"], "exclude each other"),
    (["--packet-in", "ipc:///tmp/x.ipc", "--loss", "0.1"], "with --packet-in there are none"),
])
def test_bad_options_are_one_line_and_exit_2(program, args, words):
    done = run_switch(str(program), *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("inaemu switch: error: ") and words in done.stderr


def test_an_unusable_ipc_path_stops_the_switch(program, tmp_path):
    taken = tmp_path / "file.ipc"
    taken.write_text("not a socket")
    done = run_switch(str(program), "--packet-in", f"ipc://{taken}")
    assert done.returncode == 1 and "exists and is not a socket" in done.stderr
    assert taken.read_text() == "not a socket"                   # untouched
    live = tmp_path / "live.ipc"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(live))
        listener.listen()
        done = run_switch(str(program), "--packet-in", f"ipc://{live}")
    assert done.returncode == 1 and "another process listens" in done.stderr


def test_a_stale_ipc_file_is_replaced_and_removed_at_exit(program, tmp_path):
    stale = tmp_path / "stale.ipc"
    with socket.socket(socket.AF_UNIX) as old:
        old.bind(str(stale))                     # bound, never listening: what a crash leaves
    switch = PacketInSwitch(f"ipc://{stale}", program, "-i", "1@veth9")
    try:
        peer = Peer(f"ipc://{stale}")
        peer.send(1, frame(1))
        assert peer.receive()[0] == 1
    finally:
        _, err = switch.stop()
    assert "-i 1@veth9: ignored with --packet-in" in err
    assert not os.path.exists(stale)


def test_parse_address():
    assert parse_address("ipc://rel/p.ipc") == ("ipc", "rel/p.ipc")
    assert parse_address("tcp://*:9") == ("tcp", ("0.0.0.0", 9))
    assert parse_address("tcp://[::1]:9") == ("tcp", ("::1", 9))
    with pytest.raises(PortConfigError):
        parse_address("ipc:/x")


def test_a_taken_tcp_port_is_a_port_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        sock = PacketInSocket(f"tcp://127.0.0.1:{taken.getsockname()[1]}")
        with pytest.raises(PortError, match="cannot bind"):
            sock.start()
        sock.close()


def test_a_peer_that_reads_nothing_does_not_keep_the_switch_from_stopping(program, address):
    switch = PacketInSwitch(address, program)
    peer = Peer(address)
    peer.sock.settimeout(0.2)
    sent = 0
    try:
        while sent < 100_000:            # until the switch's sends and then ours block
            peer.send(1, frame(sent % 256, 1400))
            sent += 1
    except TimeoutError:
        pass
    assert sent > 1000                   # the switch took frames and its sends to us filled up
    started = time.monotonic()
    out, _ = switch.stop()
    assert switch.process.returncode == 0
    assert time.monotonic() - started < 15
    assert "packet-in " + address in out
