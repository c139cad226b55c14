"""Allreducer's INA time is the all-reduce, not the error bound (a per-element diagnostic that
was computed inside the timed call, 15-200 ms of a 16 MiB call on Mininet, while the ring's
bound is computed by its caller after the time is taken)."""

from __future__ import annotations

import numpy as np

import hosts.api as api
from hosts import AllreduceConfig, Allreducer
from hosts.ina_session import InaSession

from tests.hosts.inproc import ina_switch
from tests.hosts.udp_bridge import UdpSwitchBridge


class SteppedClock:
    """perf_counter for hosts.api: moves only when told (no timing in the test)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_the_error_bound_is_outside_the_calls_time(monkeypatch) -> None:
    clock = SteppedClock()
    monkeypatch.setattr(api, "time", clock)
    exact_bound = InaSession.error_bound

    def slow_bound(session):
        clock.now += 100.0                  # what the bound "costs" on the stepped clock
        return exact_bound(session)

    monkeypatch.setattr(InaSession, "error_bound", slow_bound)
    k = 8
    with UdpSwitchBridge(ina_switch(k, job=1, n=1, pool_size=4)) as bridge:
        config = AllreduceConfig(job=1, worker=0, n=1, aggregator=bridge.address[0],
                                 ina_port=bridge.address[1], bind_address="127.0.0.1",
                                 bind_port=0, k=k, pool_size=4, timeout=20)
        with Allreducer(config, algo="ina") as worker:
            bridge.register(0, worker._udp.address)
            x = np.linspace(-1, 1, 50, dtype=np.float32)
            result = worker.allreduce(x)
    assert worker.stats.seconds < 100.0
    assert worker.stats.error_bound is not None and worker.stats.error_bound.shape == x.shape
    assert np.all(np.abs(result - x) <= worker.stats.error_bound)
