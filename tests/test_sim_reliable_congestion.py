"""Reno congestion control of the sans-I/O sender (inaemu/sim/reliable.py): slow start from 10
segments, +1 MSS per RTT in congestion avoidance, halving on a fast retransmit (once per
episode), one MSS after a timeout; and "none" keeps the fixed window."""

from __future__ import annotations

import pytest

from inaemu.sim.reliable import Ack, ReliableSender, TransportConfig

MSS = 100


def reno(**options) -> ReliableSender:
    return ReliableSender(TransportConfig(mss=MSS, window_bytes=1_000_000, congestion="reno",
                                          **options))


def test_slow_start_sends_the_initial_window_then_doubles_per_round_trip() -> None:
    sender = reno()
    first = sender.write(bytes(100 * MSS), now=0.0)
    assert len(first) == 10 and sender.cwnd == 10 * MSS and sender.ssthresh == float("inf")
    # one delayed ACK per two segments: the whole first flight acknowledged
    more = []
    for end in range(2 * MSS, 10 * MSS + 1, 2 * MSS):
        more += sender.on_ack(Ack(end), now=0.01)
    assert sender.cwnd == 20 * MSS
    assert len(more) == 20                  # each ACK frees 2 and grows by 2: 4 per ACK
    assert sender.in_flight == 20 * MSS


def test_congestion_avoidance_adds_about_one_mss_per_round_trip() -> None:
    sender = reno(initial_window=20)
    sender.write(bytes(1000 * MSS), now=0.0)
    sender._ssthresh = 20 * MSS             # as after a loss: start in congestion avoidance
    for end in range(MSS, 20 * MSS + 1, MSS):
        sender.on_ack(Ack(end), now=0.01)
    assert sender.cwnd == pytest.approx(21 * MSS, abs=5)   # 100 * 20/20, 20/20.05, ...


def resent(segments) -> list[int]:
    return [s.seq for s in segments if s.retransmission]


def test_three_sacked_segments_halve_the_window_once_per_episode() -> None:
    sender = reno()
    sender.write(bytes(100 * MSS), now=0.0)
    assert sender.in_flight == 10 * MSS
    sender.on_ack(Ack(MSS), now=0.01)               # segment 1 (seq 100) is lost
    for n in (2, 3):
        assert resent(sender.on_ack(Ack(MSS, (n * MSS, (n + 1) * MSS)), now=0.01)) == []
    flight = sender.in_flight
    out = sender.on_ack(Ack(MSS, (4 * MSS, 5 * MSS)), now=0.01)
    assert resent(out) == [MSS]
    assert sender.ssthresh == flight // 2 and sender.cwnd == flight // 2
    assert sender.counters.window_reductions == 1
    # two more holes (seq 500, 600) in the same flight do not halve again
    for n in (7, 8, 9):
        sender.on_ack(Ack(MSS, (n * MSS, (n + 1) * MSS)), now=0.01)
    assert sender.counters.fast_retransmissions == 3
    assert sender.counters.window_reductions == 1 and sender.cwnd == flight // 2
    # nor does the window grow before the episode's data is acknowledged
    sender.on_ack(Ack(6 * MSS), now=0.02)
    assert sender.cwnd == flight // 2


def test_the_window_counts_what_is_in_the_network_not_what_was_sacked() -> None:
    sender = reno(initial_window=4)
    assert len(sender.write(bytes(100 * MSS), now=0.0)) == 4
    # segment 0 is lost; 1 and 2 arrive: SACKed bytes left the network, new data may follow
    assert [s.seq for s in sender.on_ack(Ack(0, (MSS, 2 * MSS)), now=0.01)] == [4 * MSS]
    assert [s.seq for s in sender.on_ack(Ack(0, (2 * MSS, 3 * MSS)), now=0.01)] == [5 * MSS]


def test_a_lost_fast_retransmission_is_resent_after_three_later_segments_arrive() -> None:
    sender = reno()
    sender.write(bytes(100 * MSS), now=0.0)
    for n in (1, 2):
        sender.on_ack(Ack(0, (n * MSS, (n + 1) * MSS)), now=0.01)
    assert resent(sender.on_ack(Ack(0, (3 * MSS, 4 * MSS)), now=0.01)) == [0]
    # segments sent before the retransmission arriving say nothing about it, but free the
    # window for new data
    after = []
    for n in range(4, 12):
        out = sender.on_ack(Ack(0, (n * MSS, (n + 1) * MSS)), now=0.02)
        assert resent(out) == []
        after += [s.seq for s in out]
    assert len(after) >= 3 and min(after) >= 12 * MSS
    # three of the segments sent after the retransmission arrive: seq 0 is resent again
    out = [resent(sender.on_ack(Ack(0, (seq, seq + MSS)), now=0.03)) for seq in after[:3]]
    assert out == [[], [], [0]]


def test_a_timeout_collapses_the_window_to_one_segment_then_slow_start() -> None:
    sender = reno()
    sender.write(bytes(100 * MSS), now=0.0)
    flight = sender.in_flight
    resent = sender.on_timeout(sender.deadline)
    assert [(s.seq, s.retransmission) for s in resent] == [(0, True)]   # one segment's window
    assert sender.cwnd == MSS and sender.ssthresh == flight // 2
    assert sender.counters.window_reductions == 1
    again = sender.on_ack(Ack(MSS), now=0.3)        # slow start: 2 MSS, the next two lost ones
    assert sender.cwnd == 2 * MSS
    assert [(s.seq, s.retransmission) for s in again] == [(MSS, True), (2 * MSS, True)]
    new = sender.on_ack(Ack(10 * MSS), now=0.5)     # the rest had arrived after all
    assert sender.cwnd == 5 * MSS                   # + 9 MSS acknowledged, capped at ssthresh
    assert [s.retransmission for s in new] == [False] * 5
    assert sender.counters.retransmissions == 3


def test_the_send_window_is_the_smaller_of_cwnd_and_window_bytes() -> None:
    sender = ReliableSender(TransportConfig(mss=MSS, window_bytes=4 * MSS, congestion="reno"))
    assert len(sender.write(bytes(100 * MSS), now=0.0)) == 4
    sender.on_ack(Ack(4 * MSS), now=0.01)
    assert sender.cwnd == 14 * MSS and sender.in_flight == 4 * MSS


def test_without_congestion_control_the_window_stays_fixed() -> None:
    sender = ReliableSender(TransportConfig(mss=MSS, window_bytes=30 * MSS))
    assert sender.cwnd is None and sender.ssthresh is None
    assert len(sender.write(bytes(100 * MSS), now=0.0)) == 30
    sender.on_timeout(sender.deadline)
    assert len(sender.on_ack(Ack(30 * MSS), now=1.0)) == 30
    assert sender.counters.window_reductions == 0


def test_an_unknown_congestion_control_is_refused() -> None:
    with pytest.raises(ValueError, match="congestion must be one of none, reno"):
        TransportConfig(congestion="cubic")
    with pytest.raises(ValueError, match="initial_window"):
        TransportConfig(congestion="reno", initial_window=0)
