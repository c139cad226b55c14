"""Batched socket calls (p4switch/ports/mmsg.py) on a datagram socket pair: no root needed."""

from __future__ import annotations

import errno
import socket

import pytest

from p4switch.ports import mmsg

pytestmark = pytest.mark.skipif(not mmsg.available(), reason="no recvmmsg/sendmmsg here")


@pytest.fixture
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.setblocking(False)
    b.setblocking(False)
    yield a, b
    a.close()
    b.close()


def test_frames_cross_in_order_with_their_lengths(pair):
    a, b = pair
    tx, rx = mmsg.MessageBatch(4, 2048), mmsg.MessageBatch(4, 2048)
    frames = [bytes([i]) * (1 + 97 * i) for i in range(10)]     # more than one batch
    assert tx.transmit(a.fileno(), frames) == (len(frames), 0)
    got = []
    while True:
        try:
            got += rx.receive(b.fileno(), 64)
        except OSError as error:
            assert error.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
            break
    assert got == frames


def test_receive_takes_at_most_limit(pair):
    a, b = pair
    for i in range(5):
        a.send(b"x%d" % i)
    rx = mmsg.MessageBatch(8, 64)
    assert rx.receive(b.fileno(), 2) == [b"x0", b"x1"]
    assert rx.receive(b.fileno(), 8) == [b"x2", b"x3", b"x4"]


def test_a_frame_longer_than_a_slot_is_dropped_not_cut(pair):
    a, b = pair
    for frame in (b"short", b"y" * 100, b"after"):
        a.send(frame)
    rx = mmsg.MessageBatch(4, 16)
    assert rx.receive(b.fileno(), 4) == [b"short", b"after"]


def test_short_sends_after_long_ones_keep_their_own_length(pair):
    """A receive must not reuse iovec lengths a send shortened (one batch object for both)."""
    a, b = pair
    batch = mmsg.MessageBatch(2, 256)
    assert batch.transmit(a.fileno(), [b"ab", b"c"]) == (2, 0)
    b.send(b"z" * 200)
    assert batch.receive(a.fileno(), 2) == [b"z" * 200]


def test_oversized_and_refused_frames_are_counted(pair):
    a, b = pair
    tx = mmsg.MessageBatch(4, 8)
    assert tx.transmit(a.fileno(), [b"ok", b"much too long", b"ok2"]) == (3, 1)
    assert b.recv(64) == b"ok" and b.recv(64) == b"ok2"
    b.close()                                   # the peer is gone: every frame is lost
    assert tx.transmit(a.fileno(), [b"1", b"2", b"3"]) == (3, 3)


def test_empty_receive_raises_eagain(pair):
    _, b = pair
    with pytest.raises(OSError) as caught:
        mmsg.MessageBatch(2, 64).receive(b.fileno(), 2)
    assert caught.value.errno in (errno.EAGAIN, errno.EWOULDBLOCK)


def test_transmit_stops_where_the_socket_is_full_and_goes_on_later(pair):
    """Back-pressure (output.py): frames the socket refuses are not counted as lost; the
    caller keeps them and sends them once there is room, in order."""
    a, b = pair
    tx = mmsg.MessageBatch(8, 256)
    frames = [i.to_bytes(4, "big") * 16 for i in range(5000)]     # more than the pair holds
    taken, failed = tx.transmit(a.fileno(), frames)
    assert 0 < taken < len(frames) and failed == 0
    got = []
    while taken < len(frames):
        while True:
            try:
                got.append(b.recv(256))
            except BlockingIOError:
                break
        more, failed = tx.transmit(a.fileno(), frames[taken:])
        assert more > 0 and failed == 0
        taken += more
    while True:
        try:
            got.append(b.recv(256))
        except BlockingIOError:
            break
    assert got == frames


def test_transmit_counts_a_frame_longer_than_a_slot_as_lost_and_goes_on(pair):
    a, b = pair
    tx = mmsg.MessageBatch(4, 16)
    assert tx.transmit(a.fileno(), [b"x" * 8, b"y" * 17, b"z" * 16]) == (3, 1)
    assert [b.recv(64), b.recv(64)] == [b"x" * 8, b"z" * 16]
