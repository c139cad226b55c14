"""The raw port's receive ring (p4switch/ports/ring.py, PACKET_RX_RING) on real veths (root):
frames come whole and in order across the ring's wrap-around, the port's own sends never come
back, frames longer than a slot come whole through the kernel's copy on the socket's queue, in
their place, and a cut frame whose whole copy the kernel could not keep is dropped and counted."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from p4switch.ports import ring
from p4switch.ports.rawsock import ETH_P_ALL, RawSocketPort

from .vethnet import VethNet

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not ring.available(), reason="no packet rings here")]

ETHER_TYPE = 0x88B7


@pytest.fixture
def net():
    network = VethNet(1, prefix=f"rng{os.getpid() % 10000}")
    yield network
    network.close()


def _frame(seq: int, size: int) -> bytes:
    head = bytes.fromhex("020000000001020000000002") + ETHER_TYPE.to_bytes(2, "big")
    return head + seq.to_bytes(4, "big") + bytes([seq % 251]) * (size - 18)


def _receive(take, expected: int, limit_s: float = 10.0) -> list[bytes]:
    """Frames of the test's EtherType from `take(limit)` until `expected` came."""
    frames: list[bytes] = []
    deadline = time.monotonic() + limit_s
    while len(frames) < expected and time.monotonic() < deadline:
        got = take(64)
        frames += [f for f in got if f[12:14] == ETHER_TYPE.to_bytes(2, "big")]
        if not got:
            time.sleep(0.01)
    return frames


def _set_mtu(net: VethNet, mtu: int) -> None:
    subprocess.run(["ip", "link", "set", net.switch_ends[1], "mtu", str(mtu)], check=True)
    subprocess.run(["ip", "-n", net.namespace, "link", "set", net.host_ends[1], "mtu",
                    str(mtu)], check=True)


def test_frames_arrive_in_order_across_the_rings_wrap_around(net):
    port = RawSocketPort(1, net.switch_ends[1], ring_bytes=1 << 16)     # one block: 32 slots
    host = net.host_socket(1)
    try:
        assert port.receive_ring is not None and port.receive_ring.slots == 32
        sent: list[bytes] = []
        got: list[bytes] = []
        for round_ in range(5):             # 5 x 20 frames through 32 slots
            frames = [_frame(20 * round_ + i, 60 + 61 * i) for i in range(20)]
            for frame in frames:
                host.send(frame)
            sent += frames
            got += _receive(port.receive_batch, len(frames))
            assert port.send_batch([_frame(999, 100)]) == 0     # never comes back
        assert got == sent
        assert port.receive_batch(64) == []
        assert port.receive_ring.dropped == 0
    finally:
        host.close()
        port.close()


def test_receive_takes_at_most_limit(net):
    port = RawSocketPort(1, net.switch_ends[1])
    host = net.host_socket(1)
    try:
        frames = [_frame(i, 64) for i in range(5)]
        for frame in frames:
            host.send(frame)
        time.sleep(0.2)
        first = port.receive_batch(2)
        assert len(first) == 2
        assert first + _receive(port.receive_batch, 3) == frames
    finally:
        host.close()
        port.close()


def test_frames_longer_than_a_slot_come_whole_and_in_their_place(net):
    port = RawSocketPort(1, net.switch_ends[1])          # slots sized for MTU 1500: 2 KiB
    host = net.host_socket(1)
    try:
        assert port.receive_ring.slot_bytes == 2048
        _set_mtu(net, 9000)
        frames = [_frame(0, 100), _frame(1, 5000), _frame(2, 1514), _frame(3, 9014),
                  _frame(4, 60)]
        for frame in frames:
            host.send(frame)
        assert _receive(port.receive_batch, len(frames)) == frames
        assert port.receive_ring.dropped == 0
    finally:
        host.close()
        port.close()


def test_a_cut_frame_without_a_whole_copy_is_dropped_and_counted(net):
    _set_mtu(net, 9000)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sock.setblocking(False)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)     # the kernel's minimum
    receive_ring = ring.ReceiveRing(sock, largest_frame=1514, ring_bytes=1 << 16,
                                    max_frame=65600)
    sock.bind((net.switch_ends[1], ETH_P_ALL))
    host = net.host_socket(1)
    try:
        big = [_frame(i, 8000) for i in range(3)]
        for frame in big:          # the first copy fills the tiny buffer: no room for more
            host.send(frame)
        host.send(_frame(3, 100))
        got = _receive(receive_ring.receive, 2, limit_s=2.0)
        assert got == [big[0], _frame(3, 100)]
        assert receive_ring.dropped == 2
        host.send(_frame(4, 8000))     # the buffer is empty again: whole once more
        assert _receive(receive_ring.receive, 1) == [_frame(4, 8000)]
    finally:
        host.close()
        receive_ring.close()
        sock.close()


def test_without_a_ring_the_port_receives_through_recvmmsg(net):
    port = RawSocketPort(1, net.switch_ends[1], ring_bytes=0)
    host = net.host_socket(1)
    try:
        assert port.receive_ring is None
        frames = [_frame(i, 64 + i) for i in range(10)]
        for frame in frames:
            host.send(frame)
        assert _receive(port.receive_batch, len(frames)) == frames
    finally:
        host.close()
        port.close()


def test_an_interface_going_down_does_not_keep_waking_the_port(net):
    """The kernel sets ENETDOWN on the socket when its interface goes down, and epoll reports
    the socket while that error stands; recvmmsg read it, the ring makes no call that would:
    an empty read clears it, or the driver would spin (found in session 23)."""
    import select
    port = RawSocketPort(1, net.switch_ends[1])
    poller = select.epoll()
    try:
        assert port.receive_ring is not None
        poller.register(port.fileno(), select.EPOLLIN)
        subprocess.run(["ip", "link", "set", net.switch_ends[1], "down"], check=True)
        wakeups = 0
        for _ in range(5):
            if poller.poll(0.1):
                wakeups += 1
                assert port.receive_batch(64) == []
        assert wakeups == 1
        subprocess.run(["ip", "link", "set", net.switch_ends[1], "up"], check=True)
        host = net.host_socket(1)
        try:
            host.send(_frame(7, 64))
            assert _receive(port.receive_batch, 1) == [_frame(7, 64)]
        finally:
            host.close()
    finally:
        poller.close()
        port.close()
