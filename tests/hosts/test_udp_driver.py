"""The UDP driver end to end: worker sockets, a UDP bridge to the real ina.p4, real timers."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from hosts.errors import AllreduceTimeout, PeerUnreachable
from hosts.ina_session import InaSession
from hosts.udp_driver import UdpInaDriver

from tests.hosts.inproc import ina_switch
from tests.hosts.threads import run_in_threads
from tests.hosts.udp_bridge import UdpSwitchBridge

K, JOB = 8, 2


def driver(w: int, n: int, aggregator: tuple[str, int], **session_options) -> UdpInaDriver:
    options = dict(job=JOB, worker=w, n=n, k=K, pool_size=4, window=4, rto=0.02, rto_max=0.1,
                   max_retx=40)
    options.update(session_options)
    return UdpInaDriver(InaSession(**options), aggregator=aggregator[0],
                        aggregator_port=aggregator[1], bind_address="127.0.0.1", bind_port=0)


@pytest.mark.parametrize("loss", [0.0, 0.05])
def test_three_workers_over_udp_through_ina_p4(loss: float) -> None:
    n = 3
    rng = np.random.default_rng(11)
    with UdpSwitchBridge(ina_switch(K, job=JOB, n=n, pool_size=4), loss=loss, seed=5) as bridge:
        drivers = [driver(w, n, bridge.address) for w in range(n)]
        for w, d in enumerate(drivers):
            bridge.register(w, d.address)
        try:
            for length in (150, 33):           # two calls on the same sockets and sessions
                xs = [rng.standard_normal(length).astype(np.float32) for _ in range(n)]
                outcomes = run_in_threads([lambda d=d, x=x: d.allreduce(x, timeout=30)
                                           for d, x in zip(drivers, xs)])
                exact = np.sum(np.array(xs, np.float64), axis=0)
                for d, result in zip(drivers, outcomes):
                    assert not isinstance(result, BaseException), result
                    assert np.all(np.abs(result - exact) <= d.session.error_bound())
        finally:
            for d in drivers:
                d.close()
    if loss:
        assert bridge.dropped > 0
        assert sum(d.session.counters.retransmissions for d in drivers) > 0


def silent_aggregator() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def test_an_unanswered_call_raises_peer_unreachable() -> None:
    with silent_aggregator() as sink:
        with driver(0, 2, sink.getsockname(), rto=0.01, rto_max=0.02, max_retx=3) as d:
            with pytest.raises(PeerUnreachable, match="job 2: no result for the MAX round "
                                                      "after 4 transmissions"):
                d.allreduce(np.ones(5, np.float32), timeout=30)


def test_the_hard_deadline_ends_a_call() -> None:
    with silent_aggregator() as sink:
        with driver(0, 2, sink.getsockname(), rto=0.01, rto_max=0.05, max_retx=1000) as d:
            with pytest.raises(AllreduceTimeout, match="job 2: all-reduce not finished after "
                                                       "0.2 s"):
                d.allreduce(np.ones(5, np.float32), timeout=0.2)
