"""InaSession's collaborators on their own (hosts/ina_silence.py, hosts/ina_recovery.py,
hosts/ina_paths.py): each works from what it is given, with no session around it."""

from __future__ import annotations

import pytest

from hosts.congestion import InFlightWindow, RtoEstimator
from hosts.errors import PeerUnreachable
from hosts.ina_paths import Paths
from hosts.ina_recovery import LossRecovery
from hosts.ina_silence import SilenceRules
from hosts.ina_state import Counters, Flight


def estimator() -> RtoEstimator:
    return RtoEstimator(initial=0.01, minimum=0.002, maximum=0.08)


def silence(*, switch_slots: int = 8, fixed_wait=None) -> SilenceRules:
    paths = Paths(switch_slots, estimator(), estimator())
    return SilenceRules(paths=paths, counters=Counters(), barrier_estimator=estimator(),
                        fixed_wait=fixed_wait)


def test_paths_split_slots_between_the_switch_and_the_host_aggregator() -> None:
    switch, host = estimator(), estimator()
    paths = Paths(4, switch, host)
    assert [paths.path(s) for s in (0, 3, 4, 7)] == [0, 0, 1, 1]
    assert paths.estimator(3) is switch and paths.estimator(4) is host


def test_a_silence_waits_for_the_earliest_chunks_probe() -> None:
    rules = silence(fixed_wait=0.01)
    rules.counters.packets_sent = 10            # and no loss yet
    in_flight0 = {0: Flight(b"a", 0, 0, 1, 0.010, 0.0, 1, 0.0, 0.01),
                  1: Flight(b"b", 1, 0, 1, 0.011, 0.001, 2, 0.001, 0.01)}
    # no data result in the session yet: nothing measured, so each chunk's timer counts
    when, head = rules.expiry(1, in_flight0[1], 0.011, 0.011, in_flight0, [None, None], 8)
    assert (when, head) == (0.011, False)
    rules.data_results = 1                      # a result came: losses now measured rare
    in_flight = {0: Flight(b"a", 0, 0, 1, 0.010, 0.0, 1, 0.0, 0.01),
                 1: Flight(b"b", 1, 0, 1, 0.011, 0.001, 2, 0.001, 0.01)}
    # chunk 1's timer is due first here; the earliest (0) is its path's head: 1 waits for it
    when, head = rules.expiry(1, in_flight[1], 0.011, 0.011, in_flight, [None, None], 8)
    assert (when, head) == (pytest.approx(0.021), False)   # now + fixed wait (0's is past)
    when, head = rules.expiry(0, in_flight[0], 0.010, 0.011, in_flight, [None, None], 8)
    assert (when, head) == (0.010, True)        # the head's own timer counts
    rules.counters.loss_events = 5              # losses common: each chunk's timer counts
    when, head = rules.expiry(1, in_flight[1], 0.011, 0.011, in_flight, [None, None], 8)
    assert (when, head) == (0.011, False)


def test_the_first_result_after_the_max_round_samples_the_barrier_once() -> None:
    rules = silence()
    rules.scale_agreed(1.0, 0.004)
    rules.progress(1.006, 0, 1.0)
    rules.progress(1.007, 1, 1.0)
    assert rules.barrier_estimator.samples == 1 and rules.last_progress_chunk == 1
    rules.new_call()
    assert rules.data_start is None and rules.last_progress_chunk == -1


def test_recovery_gives_up_on_the_earliest_chunk_and_keeps_its_timers() -> None:
    counters, window = Counters(), InFlightWindow(8)
    paths = Paths(8, estimator(), estimator())
    rules = SilenceRules(paths=paths, counters=counters, barrier_estimator=estimator(),
                         fixed_wait=0.01)
    recovery = LossRecovery(job=3, paths=paths, silence=rules, counters=counters,
                            in_flight_window=window, adaptive=False, rto=0.01, rto_min=0.002,
                            rto_max=0.04, max_retx=1, window=8, query=True,
                            window_rule="burst")
    in_flight: dict = {}
    recovery.new_call(in_flight)
    flight = in_flight[0] = Flight(b"\0" * 16, 0, 0, 1, 0.0, 0.0)
    recovery.arm(0, flight, 0.0)
    assert recovery.next_deadline() == 0.01
    assert len(recovery.expire(0.01)) == 1 and counters.timer_retransmissions == 1
    assert recovery.next_deadline() == pytest.approx(0.03)      # backed off: 0.01 + 2 * 0.01
    with pytest.raises(PeerUnreachable):
        recovery.expire(0.03)
    del in_flight[0]
    assert recovery.next_deadline() is None                     # answered: its timers are stale
