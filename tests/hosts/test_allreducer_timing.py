"""Allreducer's INA time is the all-reduce, not the error bound (a per-element diagnostic that
was computed inside the timed call, 15-200 ms of a 16 MiB call on Mininet, while the ring's
bound is computed by its caller after the time is taken); and it is built only when read
(between calls it delayed a worker's next start, which the other workers then waited for)."""

from __future__ import annotations

import numpy as np

import hosts.api as api
from hosts import AllreduceConfig, Allreducer
from hosts.ina_codec import FloatCodec

from tests.hosts.inproc import ina_switch
from tests.hosts.udp_bridge import UdpSwitchBridge


class SteppedClock:
    """perf_counter for hosts.api: moves only when told (no timing in the test)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_the_error_bound_is_outside_the_calls_time_and_built_when_read(monkeypatch) -> None:
    clock = SteppedClock()
    monkeypatch.setattr(api, "time", clock)
    exact_bound = FloatCodec.error_bound
    built = []

    def slow_bound(codec, result):
        clock.now += 100.0                  # what the bound "costs" on the stepped clock
        built.append(result.size)
        return exact_bound(codec, result)

    monkeypatch.setattr(FloatCodec, "error_bound", slow_bound)
    k = 8
    with UdpSwitchBridge(ina_switch(k, job=1, n=1, pool_size=4)) as bridge:
        config = AllreduceConfig(job=1, worker=0, n=1, aggregator=bridge.address[0],
                                 ina_port=bridge.address[1], bind_address="127.0.0.1",
                                 bind_port=0, k=k, pool_size=4, timeout=20)
        with Allreducer(config, algo="ina") as worker:
            bridge.register(0, worker._udp.address)
            first_x = np.linspace(-1, 1, 50, dtype=np.float32)
            first = worker.allreduce(first_x)
            first_stats = worker.stats
            second_x = np.linspace(-30, 7, 90, dtype=np.float32)
            second = worker.allreduce(second_x)
    assert first_stats.seconds < 100.0 and worker.stats.seconds < 100.0
    assert built == []                      # nobody read a bound: none was built
    for stats, result, x in ((first_stats, first, first_x), (worker.stats, second, second_x)):
        bound = stats.error_bound           # the first call's, read after the second call
        assert bound.shape == x.shape and np.all(np.abs(result - x) <= bound)
        assert stats.error_bound is bound   # built once
    assert built == [50, 90]
