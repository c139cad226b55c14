"""The UDP driver's segmented sends (UDP GSO, docs/hosts.md session 23): runs of equal-sized
payloads go to the kernel in one sendmsg, which must put the same datagrams on the wire, in
order; a kernel that refuses falls back to one send per datagram, and nothing is lost."""

from __future__ import annotations

import errno
import socket
import sys

import pytest

from hosts import udp_driver
from hosts.ina_session import InaSession
from hosts.udp_driver import UdpInaDriver

CONTRIB, QUERY = 1472, 16        # a CONTRIB at k = 364 (a 1500-byte MTU) and a QUERY


def sink() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUFFORCE if hasattr(
        socket, "SO_RCVBUFFORCE") else socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    return sock


def make_driver(aggregator: socket.socket, **options) -> UdpInaDriver:
    session = InaSession(job=1, worker=0, n=1, k=364, pool_size=64, window=64, rto=0.05,
                         rto_max=0.2, max_retx=20)
    return UdpInaDriver(session, aggregator="127.0.0.1",
                        aggregator_port=aggregator.getsockname()[1],
                        bind_address="127.0.0.1", bind_port=0, **options)


def payloads(sizes: list[int]) -> list[bytes]:
    """Distinct payloads of these sizes (each starts with its index)."""
    return [i.to_bytes(2, "big") + bytes([i % 251]) * (size - 2) for i, size in enumerate(sizes)]


def received(sock: socket.socket, count: int) -> list[bytes]:
    return [sock.recv(65535) for _ in range(count)]


needs_gso = pytest.mark.skipif(
    not udp_driver._kernel_segments(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
    reason="the kernel has no UDP_SEGMENT (Linux < 4.18)")

MIXED = ([CONTRIB] * 5 + [QUERY] + [CONTRIB] * 3 + [QUERY, QUERY] + [CONTRIB]
         + [144] * 70 + [CONTRIB, 144, QUERY] + [CONTRIB] * 100)


@needs_gso
@pytest.mark.parametrize("connect", [True, False])
def test_mixed_sizes_arrive_as_the_same_datagrams_in_order(connect: bool) -> None:
    with sink() as aggregator, make_driver(aggregator, connect=connect) as driver:
        assert driver.connected is connect and driver.segmenting
        sent = payloads(MIXED)
        driver._send(tuple(sent))
        assert received(aggregator, len(sent)) == sent
        aggregator.setblocking(False)
        with pytest.raises(BlockingIOError):
            aggregator.recv(65535)                        # nothing more, nothing merged
        assert driver.gso_sends >= 5 and driver.gso_datagrams > len(sent) // 2
        assert driver.gso_failed == driver.gso_refused == driver.send_errors == 0


@needs_gso
def test_more_than_the_kernels_segments_or_bytes_per_send() -> None:
    with sink() as aggregator, make_driver(aggregator) as driver:
        small = payloads([144] * 150)                     # 64 segments at most per send
        driver._send(small)
        assert received(aggregator, 150) == small
        assert driver.gso_sends == 3 and driver.gso_datagrams == 150
        big = payloads([CONTRIB] * 100)                   # 44 * 1472 <= 65,507 bytes
        driver._send(big)
        assert received(aggregator, 100) == big
        assert driver.gso_sends == 3 + 3


class FakeSocket:
    """Records every send; sendmsg answers as told (an exception, or a byte count)."""

    def __init__(self, sendmsg_answers=()):
        self.sent: list[bytes] = []
        self.sendmsg_calls: list[tuple[list[bytes], int]] = []
        self.answers = list(sendmsg_answers)

    def send(self, payload) -> int:
        self.sent.append(bytes(payload))
        return len(payload)

    def sendto(self, payload, address) -> int:
        return self.send(payload)

    def sendmsg(self, buffers, control, flags=0, address=None) -> int:
        (level, kind, data), = control
        assert (level, kind) == (udp_driver.SOL_UDP, udp_driver.UDP_SEGMENT)
        size = int.from_bytes(data, sys.byteorder)        # a native u16, as the kernel reads
        self.sendmsg_calls.append(([bytes(b) for b in buffers], size))
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, BaseException):
            raise answer
        total = sum(len(b) for b in buffers)
        count = total if answer is None else answer
        for b in buffers:       # on the wire: the whole segments the count covers
            if count < len(b):
                break
            self.sent.append(bytes(b))
            count -= len(b)
        return total if answer is None else answer

    def close(self) -> None:
        pass


def fake_driver(fake: FakeSocket) -> UdpInaDriver:
    real = sink()
    driver = make_driver(real)
    real.close()
    driver.sock.close()
    driver.sock = fake
    driver.segmenting = True
    return driver


def test_runs_are_cut_where_the_size_changes() -> None:
    fake = FakeSocket()
    driver = fake_driver(fake)
    sent = payloads([CONTRIB] * 3 + [QUERY] + [CONTRIB] * 2 + [200, 300, 100, 100, 50]
                    + [CONTRIB])
    driver._send(sent)
    assert fake.sent == sent
    # a shorter payload closes a run (the kernel's last segment); a lone one is a plain send
    assert [(len(run), size) for run, size in fake.sendmsg_calls] == [
        (4, CONTRIB), (3, CONTRIB), (2, 300), (2, 100)]
    assert driver.gso_sends == 4 and driver.gso_datagrams == 11


@pytest.mark.parametrize("code", [errno.EIO, errno.EINVAL, errno.ENOPROTOOPT, errno.EMSGSIZE,
                                  errno.EOPNOTSUPP])
def test_a_refused_segmented_send_falls_back_to_plain_sends_for_good(code: int) -> None:
    fake = FakeSocket([OSError(code, "refused")])
    driver = fake_driver(fake)
    first = payloads([CONTRIB] * 5 + [QUERY] + [CONTRIB] * 4)
    driver._send(first)
    assert fake.sent == first                             # nothing lost, same order
    assert len(fake.sendmsg_calls) == 1
    assert not driver.segmenting and driver.gso_refused == 1 and driver.gso_failed == 1
    second = payloads([CONTRIB] * 8)
    driver._send(second)
    assert fake.sent == first + second
    assert len(fake.sendmsg_calls) == 1                   # never asked again


@pytest.mark.parametrize("error", [OSError(errno.ENOBUFS, "no buffer space"),
                                   BlockingIOError(errno.EAGAIN, "again")])
def test_a_transient_failure_resends_that_run_one_by_one_and_keeps_segmenting(error) -> None:
    fake = FakeSocket([error])
    driver = fake_driver(fake)
    sent = payloads([CONTRIB] * 6 + [144] * 3)
    driver._send(sent)
    assert fake.sent == sent
    assert driver.segmenting and driver.gso_failed == 1 and driver.gso_refused == 0
    assert [len(run) for run, _ in fake.sendmsg_calls] == [7, 2]      # 144 closes the first
    assert driver.gso_sends == 1 and driver.gso_datagrams == 2


def test_a_short_count_sends_the_rest_one_by_one() -> None:
    fake = FakeSocket([2 * CONTRIB + 10])                 # two whole segments and a bit
    driver = fake_driver(fake)
    sent = payloads([CONTRIB] * 5)
    driver._send(sent)
    assert fake.sent == sent                              # the third one again, whole
    assert driver.gso_failed == 1 and driver.segmenting


def test_a_kernel_without_udp_segment_is_never_asked() -> None:
    class Old:
        def getsockopt(self, level, option):
            raise OSError(errno.ENOPROTOOPT, "Protocol not available")

        def sendmsg(self, *args):
            raise AssertionError("not to be called")

    assert not udp_driver._kernel_segments(Old())


def test_segmenting_can_be_turned_off() -> None:
    with sink() as aggregator, make_driver(aggregator, segment=False) as driver:
        assert not driver.segmenting
        sent = payloads([CONTRIB] * 4)
        driver._send(sent)
        assert received(aggregator, 4) == sent
        assert driver.gso_sends == 0
