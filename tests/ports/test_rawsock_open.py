"""A raw port sees only its own interface's frames, from the moment it exists.

An AF_PACKET socket opened with a protocol receives frames of every interface until bind()
narrows it to one; frames queued in that moment (on a Mininet host: the loopback's P4Runtime
traffic) were read as if they had arrived on the switch port. The port now opens with no protocol
and takes one only in bind()."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from p4switch.ports.rawsock import RawSocketPort

from .vethnet import VethNet

pytestmark = pytest.mark.root


def test_a_fresh_port_holds_no_frame_of_another_interface():
    if os.geteuid() != 0:
        pytest.skip("raw sockets need root")
    net = VethNet(1, prefix=f"rso{os.getpid() % 10000}")
    stop = threading.Event()
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))

    def flood() -> None:   # loopback traffic while the port opens, bounded by the test
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            for _ in range(2_000_000):
                if stop.is_set():
                    return
                tx.sendto(b"x" * 64, sink.getsockname())

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    foreign = 0
    try:
        for _ in range(200):   # the interface itself is quiet: anything read is foreign
            port = RawSocketPort(1, net.switch_ends[1])
            try:
                foreign += len([f for f in port.receive_batch(64) if f[12:14] == b"\x08\x00"])
            finally:
                port.close()
    finally:
        stop.set()
        flooder.join()
        sink.close()
        net.close()
    assert foreign == 0
