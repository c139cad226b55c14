"""The UDP driver runs a call as SCHED_BATCH, without the cyclic garbage collector, and restores
both after it (docs/hosts.md, "Agent cost per chunk", session 22): its wake-ups must not preempt
the switch."""

from __future__ import annotations

import os
import socket
import time

import numpy as np
import pytest

from hosts.errors import AllreduceTimeout
from hosts.ina_session import InaSession
from hosts.udp_driver import UdpInaDriver

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setscheduler"),
                                reason="no scheduling policies on this system")


def silent_driver(policies: list, **options) -> tuple[UdpInaDriver, socket.socket]:
    """A driver whose aggregator never answers; its clock notes the policy at every read."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))

    def clock() -> float:
        policies.append(os.sched_getscheduler(0))
        return time.monotonic()

    session = InaSession(job=1, worker=0, n=2, k=8, pool_size=4, window=4, rto=0.5,
                         rto_max=1.0, max_retx=20)
    driver = UdpInaDriver(session, aggregator="127.0.0.1", aggregator_port=sink.getsockname()[1],
                          bind_address="127.0.0.1", bind_port=0, clock=clock, **options)
    return driver, sink


def call_until_the_deadline(driver: UdpInaDriver) -> None:
    with pytest.raises(AllreduceTimeout):
        driver.allreduce(np.ones(20, np.float32), timeout=0.05)


def test_a_call_runs_as_sched_batch_and_the_policy_is_restored_after_it() -> None:
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    policies: list[int] = []
    driver, sink = silent_driver(policies)
    try:
        call_until_the_deadline(driver)      # (ends by an exception: restored all the same)
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
        assert policies and set(policies) == {os.SCHED_BATCH}
    finally:
        driver.close()
        sink.close()


def test_without_yielding_the_policy_is_left_alone() -> None:
    policies: list[int] = []
    driver, sink = silent_driver(policies, yield_to_aggregator=False)
    try:
        call_until_the_deadline(driver)
        assert policies and set(policies) == {os.SCHED_OTHER}
    finally:
        driver.close()
        sink.close()


def test_a_policy_the_caller_chose_is_kept() -> None:
    """A process already SCHED_IDLE (or any policy but the default) keeps it, during and after."""
    policies: list[int] = []
    driver, sink = silent_driver(policies)
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    try:
        call_until_the_deadline(driver)
        assert os.sched_getscheduler(0) == os.SCHED_IDLE
        assert policies and set(policies) == {os.SCHED_IDLE}
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        driver.close()
        sink.close()


def test_a_call_runs_without_the_cyclic_collector_and_restores_it() -> None:
    """The per-chunk path makes no cycles; the collector's passes were ~5 % of an agent's CPU."""
    import gc
    states: list[bool] = []
    drivers = [silent_driver([]) for _ in range(2)]
    drivers[0][0].clock = lambda: (states.append(gc.isenabled()), time.monotonic())[1]
    try:
        assert gc.isenabled()
        call_until_the_deadline(drivers[0][0])
        assert gc.isenabled() and states and not any(states)
        gc.disable()                      # a caller that turned it off keeps it off
        call_until_the_deadline(drivers[1][0])
        assert not gc.isenabled()
    finally:
        gc.enable()
        for driver, sink in drivers:
            driver.close()
            sink.close()


def test_the_load_average_does_not_turn_batch_scheduling_off(monkeypatch) -> None:
    """A gate on the 1-minute load average (SCHED_BATCH only below 2 per core) read the
    experiment's own load (a Mininet star's agents and switch: 3-5 on 2 cores) and turned
    itself off in back-to-back runs, INA's unshaped calls ~15 % slower: a call is SCHED_BATCH
    whatever the load average says."""
    monkeypatch.setattr(os, "getloadavg", lambda: (1e6, 1e6, 1e6))
    policies: list[int] = []
    driver, sink = silent_driver(policies)
    try:
        call_until_the_deadline(driver)
        assert policies and set(policies) == {os.SCHED_BATCH}
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
    finally:
        driver.close()
        sink.close()