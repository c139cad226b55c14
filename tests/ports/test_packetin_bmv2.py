"""`--packet-in` side by side: the same messages to real simple_switch (the oracle) and to
`inaemu switch`, both on p4c's JSON of echo_port.p4, must get the same answers: each port's
frames in the same order and bytes, the same INFO_REP. Each switch is driven once by the
plain-Python peer (so its framing is checked against libnanomsg's server) and inaemu also by
libnanomsg's own client (so inaemu's server is checked against it). Skipped only where the
reference toolchain is not installed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from p4switch.ports.packetin import HEADER, INFO_REQ, PACKET_IN, PACKET_OUT, PORT_ADD
from p4switch.reference import compile_p4, find_toolchain

from .packetinpeer import PROGRAM, TIMEOUT, PacketInSwitch, Peer, frame

TOOLCHAIN = find_toolchain()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")



def messages() -> list[bytes]:
    """Port additions, a request, frames on ports in and past v1model's nine bits, cut by their
    length, empty, and on the drop port; every one something simple_switch defines."""
    out = [HEADER.pack(PORT_ADD, port, 0) for port in (0, 1, 2)]
    out.append(HEADER.pack(INFO_REQ, 2, 0))
    for i, port in enumerate([0, 1, 2, 600, -1, 511, 510, 1 << 16, 2, 0] * 3):
        data = frame(i)
        out.append(HEADER.pack(PACKET_IN, port, len(data)) + data)
    out.append(HEADER.pack(PACKET_IN, 1, 14) + frame(77))          # cut to its Ethernet header
    out.append(HEADER.pack(PACKET_IN, 3, 0) + frame(78))           # an empty frame
    out.append(HEADER.pack(PACKET_IN, 3, 5) + frame(79)[:5])       # shorter than the header
    return out


def answers(send, receive) -> dict[int | str, list[bytes]]:
    """Send every message and collect the answers: port -> its frames in order, "info" -> the
    INFO_REPs. echo_port.p4 sends every frame back but those on port 511 (the drop port), so
    that many are waited for; across ports simple_switch's egress threads may reorder them."""
    sent = messages()
    for message in sent:
        send(message)
    due = 1 + sum(1 for m in sent if HEADER.unpack_from(m)[0] == PACKET_IN
                  and HEADER.unpack_from(m)[1] & 0x1FF != 0x1FF)
    got: dict[int | str, list[bytes]] = {}
    for _ in range(due):
        message = receive()
        assert message is not None, f"{len(got)} answers of {due} came; then none: {got}"
        kind, port, _ = HEADER.unpack_from(message)
        if kind == PACKET_OUT:
            got.setdefault(port, []).append(message[HEADER.size:])
        else:
            got.setdefault("info", []).append(message)
    return got


@pytest.fixture(scope="module")
def p4c_json(tmp_path_factory) -> Path:
    built = compile_p4(TOOLCHAIN, PROGRAM, p4runtime=False,
                       cache_dir=tmp_path_factory.mktemp("p4c"))
    assert built.ok, built.stderr
    return built.json_path


def on_bmv2(json_path: Path, folder: Path) -> dict:
    address = f"ipc://{folder}/bmv2.ipc"
    notify = f"ipc://{folder}/notify.ipc"
    process = subprocess.Popen([str(TOOLCHAIN.simple_switch), "--packet-in", address,
                                "--thrift-port", "0", "--notifications-addr", notify,
                                str(json_path)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(f"{folder}/bmv2.ipc"):
            assert time.monotonic() < deadline and process.poll() is None, "no socket"
            time.sleep(0.05)
        peer = Peer(address)
        got = answers(peer.send_message, peer.message)
        assert peer.message(timeout_s=0.5) is None                   # and nothing more
        return got
    finally:
        process.kill()
        process.wait()


def test_the_same_answers_as_simple_switch(p4c_json, tmp_path):
    expected = on_bmv2(p4c_json, tmp_path)
    assert expected["info"] == [bytes.fromhex("06000000020000000000000001000000")]
    assert set(expected) == {"info", 0, 1, 2, 88, 510, 3}          # port 511 and -1 dropped
    switch = PacketInSwitch(f"ipc://{tmp_path}/inaemu.ipc", p4c_json)
    try:
        peer = Peer(switch.address)
        assert answers(peer.send_message, peer.message) == expected
        assert peer.message(timeout_s=0.5) is None
    finally:
        switch.stop()


def test_libnanomsg_drives_inaemu_as_it_drives_simple_switch(p4c_json, tmp_path):
    from p4switch.reference.nanomsg import PacketSocket
    expected = on_bmv2(p4c_json, tmp_path)
    switch = PacketInSwitch(f"ipc://{tmp_path}/inaemu.ipc", p4c_json)
    try:
        client = PacketSocket(switch.address, timeout_s=TIMEOUT)
        try:
            assert answers(client.send_message, client.receive_message) == expected
        finally:
            client.close()
    finally:
        switch.stop()
