"""RawSocketPort.send_batch on a real veth pair (root): a few frames go one send() each, more
go through sendmmsg; either way every frame arrives, in order, with its own length."""

from __future__ import annotations

import pytest

from p4switch.ports import rawsock
from p4switch.ports.rawsock import RawSocketPort

from .vethnet import VethNet, receive_frames

ETHER_TYPE = 0x88B7


@pytest.fixture
def net():
    network = VethNet(1, prefix="h13sb")
    yield network
    network.close()


def _frame(seq: int, extra: int) -> bytes:
    return bytes.fromhex("020000000002020000000001") + ETHER_TYPE.to_bytes(2, "big") + \
        seq.to_bytes(4, "big") + bytes(46 + extra)


@pytest.mark.root
def test_small_and_large_batches_arrive_whole_and_in_order(net):
    port = RawSocketPort(1, net.switch_ends[1])
    host = net.host_socket(1)
    try:
        sent = []
        seq = 0
        for size in (1, 2, rawsock.MMSG_MIN_FRAMES - 1, rawsock.MMSG_MIN_FRAMES, 40):
            batch = [_frame(seq + i, (seq + i) * 7 % 300) for i in range(size)]
            seq += size
            assert port.send_batch(batch) == 0
            sent += batch
        assert receive_frames(host, ETHER_TYPE, expected=len(sent)) == sent
    finally:
        host.close()
        port.close()
