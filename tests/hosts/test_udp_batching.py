"""The UDP driver's batching: when it pauses for results to queue up, and that a call over real
sockets gives the same sums with and without it."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from hosts import quantize as qz
from hosts import udp_driver
from hosts.bench import echo
from hosts.ina_session import InaSession, State
from hosts.udp_driver import UdpInaDriver

K = 8


def driver(aggregator=("127.0.0.1", 9), batch: bool = True, **options) -> UdpInaDriver:
    settings = dict(job=1, worker=0, n=1, k=K, pool_size=16, window=16, rto=0.05,
                    rto_max=0.4, max_retx=20)
    settings.update(options)
    return UdpInaDriver(InaSession(**settings), aggregator=aggregator[0],
                        aggregator_port=aggregator[1], bind_address="127.0.0.1", bind_port=0,
                        batch=batch)


def into_data_phase(d: UdpInaDriver, chunks: int) -> None:
    """Start a call and answer its MAX round: the window's chunks are then in flight."""
    s = d.session
    vector = np.ones(chunks * K, np.float32)
    step = s.start(vector, 0.0)
    s.receive(echo(step.send[0]), 0.001)
    assert s.state is State.DATA


def test_no_pause_without_a_round_trip_or_a_full_window() -> None:
    with driver(adaptive=False, window=8) as d:
        assert d._pause(0.0, 1.0) == 0.0                  # idle
        into_data_phase(d, 40)
        assert d.session.in_flight == 8
        assert d.session.rto_estimator.srtt is None
        assert d._pause(0.0, 1.0) == 0.0                  # no round trip measured yet
        d.session.rto_estimator.sample(0.002)
        assert d._pause(0.0, 1.0) == pytest.approx(
            0.002 * min(udp_driver.BATCH_RESULTS / 8, udp_driver.PAUSE_FRACTION))
        assert d._pause(0.0, 1.0) <= 0.002 * udp_driver.PAUSE_FRACTION   # a bounded delay
        for c in range(5):                                # 3 of 8 left: less than half
            d.session._in_flight.pop(c)
        assert d._pause(0.0, 1.0) == 0.0


def test_a_pause_never_passes_a_timer_or_the_cap() -> None:
    with driver(adaptive=False, window=8) as d:
        into_data_phase(d, 40)
        d.session.rto_estimator.sample(0.02)
        assert d._pause(5.0, 5.0004) == pytest.approx(0.0004)        # the timer is first
        d.session.rto_estimator.sample(10.0)                         # a huge round trip
        assert d._pause(0.0, 100.0) == udp_driver.BATCH_WAIT_MAX


class EchoAggregator:
    """A one-worker job's aggregator on loopback: each contribution comes back as its result,
    `delay` seconds after the previous one (results trickle in, one per wake-up)."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.address = self.sock.getsockname()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                payload, source = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            if payload[0] in (0, 2):                  # CONTRIB, MAX_CONTRIB
                if self.delay:
                    time.sleep(self.delay)
                self.sock.sendto(echo(payload), source)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.mark.parametrize("batch,delay", [(True, 0.0005), (False, 0.0005), (True, 0.0)])
def test_a_call_over_loopback_sums_the_same_with_or_without_pauses(batch: bool, delay: float,
                                                                  monkeypatch) -> None:
    """Results that trickle in (one every 0.5 ms) get pauses when batching is on; none without
    it; every pause is bounded; the sums are right either way."""
    pauses = []
    pause = UdpInaDriver._pause

    def recording(self, now: float, wake: float) -> float:
        seconds = pause(self, now, wake)
        if seconds > 0:
            pauses.append(seconds)
        return seconds

    monkeypatch.setattr(UdpInaDriver, "_pause", recording)
    aggregator = EchoAggregator(delay)
    try:
        with driver(aggregator.address, batch=batch) as d:
            vector = np.random.default_rng(3).standard_normal(300 * K).astype(np.float32)
            for _ in range(2):
                result = d.allreduce(vector, timeout=30)
                assert np.all(np.abs(result - vector) <= d.session.error_bound())
            assert d.session.counters.packets_received >= 2 * 300
            assert qz.local_max(result) > 0
    finally:
        aggregator.close()
    if delay:
        assert (len(pauses) > 10) == batch
    assert all(0 < pause <= udp_driver.BATCH_WAIT_MAX for pause in pauses)
