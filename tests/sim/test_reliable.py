"""The ring's transport model: in-order delivery over loss, acknowledgement rules, giving up."""

from __future__ import annotations

import random

import pytest

from inaemu.sim.events import EventLoop
from inaemu.sim.host_node import Timer
from inaemu.sim.link import LinkDirection
from inaemu.sim.reliable import (Ack, ReliableReceiver, ReliableSender, Segment,
                                 TransportConfig, TransportTimeout)


class Pair:
    """A sender and a receiver joined by two lossy 100 Mbit/s link directions; with a
    `nic_budget` the sender is told when each of its frames has left the forward queue."""

    def __init__(self, loss: float, seed: int, config: TransportConfig = TransportConfig(),
                 nic_budget: int | None = None):
        self.loop = EventLoop()
        self.sender = ReliableSender(config, nic_budget)
        self.most_queued = 0
        self.receiver = ReliableReceiver(config)
        self.received = bytearray()
        self.error: Exception | None = None
        self.timer = Timer(self.loop, self._timeout)
        self.delack = Timer(self.loop, self._delayed_ack)
        self.acks_sent: list[tuple[float, Ack]] = []
        rng = random.Random(seed)
        self.forward = LinkDirection(self.loop, "s:0", "r:0", bw_bps=100e6, delay_s=1e-4,
                                     loss=loss, rng=random.Random(rng.random()),
                                     deliver=self._at_receiver)
        self.backward = LinkDirection(self.loop, "r:0", "s:0", bw_bps=100e6, delay_s=1e-4,
                                      loss=loss, rng=random.Random(rng.random()),
                                      deliver=self._at_sender)
        self.segments: dict[int, Segment] = {}

    def write(self, data: bytes) -> None:
        self._send(self.sender.write(data, self.loop.now))

    def _send(self, segments: list[Segment]) -> None:
        for seg in segments:
            key = id(seg)
            self.segments[key] = seg
            on_left = self._left if self.sender.throttles else None
            self.forward.send(key.to_bytes(8, "big") + bytes(len(seg.data) + 54), on_left)
        self.most_queued = max(self.most_queued, self.sender.nic_bytes)
        self.timer.set(self.sender.deadline)

    def _left(self, frame: bytes) -> None:
        self._send(self.sender.on_left(len(frame) - 8, self.loop.now))

    def _at_receiver(self, frame: bytes) -> None:
        data, ack = self.receiver.on_segment(self.segments[int.from_bytes(frame[:8], "big")])
        self.received += data
        if ack is not None:
            self._ack(ack)
        elif self.receiver.delay_started:
            self.delack.set(self.loop.now + self.receiver.config.delayed_ack)

    def _delayed_ack(self) -> None:
        ack = self.receiver.delayed_ack()
        if ack is not None:
            self._ack(ack)

    def _ack(self, ack: Ack) -> None:
        self.acks_sent.append((self.loop.now, ack))
        key = id(ack)
        self.segments[key] = ack
        self.backward.send(key.to_bytes(8, "big") + bytes(66))

    def _at_sender(self, frame: bytes) -> None:
        self._send(self.sender.on_ack(self.segments[int.from_bytes(frame[:8], "big")],
                                      self.loop.now))

    def _timeout(self) -> None:
        try:
            self._send(self.sender.on_timeout(self.loop.now))
        except TransportTimeout as error:
            self.error = error


@pytest.mark.parametrize("budget", [None, 2 * (1448 + 54)])
@pytest.mark.parametrize("loss,seed", [(0.0, 1), (0.01, 2), (0.1, 3), (0.3, 4)])
def test_every_byte_arrives_in_order_despite_loss(loss: float, seed: int, budget) -> None:
    """Also with TCP Small Queues (`budget`: resends wait for room in the NIC queue)."""
    data = random.Random(seed).randbytes(300_000)
    pair = Pair(loss, seed, nic_budget=budget)
    pair.write(data[:100_000])
    pair.loop.at(0.001, pair.write, data[100_000:])
    pair.loop.run(until=120.0, done=lambda: pair.sender.idle)
    assert pair.error is None
    assert bytes(pair.received) == data
    assert pair.sender.idle and pair.sender.acked == len(data)
    if loss >= 0.1:
        assert pair.sender.counters.retransmissions > 0
        assert pair.sender.counters.fast_retransmissions > 0   # SACK recovery, not only RTOs
    if loss == 0:
        assert pair.sender.counters.retransmissions == 0
    if budget is not None:
        assert pair.most_queued == budget and pair.sender.nic_bytes == 0


def test_the_window_limits_unacknowledged_bytes() -> None:
    config = TransportConfig(mss=1000, window_bytes=5000)
    sender = ReliableSender(config)
    first = sender.write(bytes(12_000), now=0.0)
    assert [s.seq for s in first] == [0, 1000, 2000, 3000, 4000]
    more = sender.on_ack(Ack(2000), now=0.001)
    assert [s.seq for s in more] == [5000, 6000]
    assert [s.psh for s in sender.on_ack(Ack(12_000 - 1000), now=0.002)][-1] is True


def test_receiver_acknowledges_every_second_segment_psh_and_out_of_order_at_once() -> None:
    receiver = ReliableReceiver(TransportConfig(mss=10, ack_every=2))
    assert receiver.on_segment(Segment(0, b"a" * 10, False)) == (b"a" * 10, None)
    assert receiver.on_segment(Segment(10, b"b" * 10, False)) == (b"b" * 10, Ack(20))
    assert receiver.on_segment(Segment(30, b"d" * 10, False)) == (b"", Ack(20, (30, 40)))
    assert receiver.on_segment(Segment(20, b"c" * 10, False)) == (b"c" * 10 + b"d" * 10, Ack(40))
    assert receiver.on_segment(Segment(40, b"e" * 5, True)) == (b"e" * 5, Ack(45))
    assert receiver.on_segment(Segment(0, b"a" * 10, False)) == (b"", Ack(45))   # duplicate
    assert receiver.duplicates == 1


def test_in_order_data_held_back_is_acknowledged_by_the_delayed_ack_timer() -> None:
    receiver = ReliableReceiver(TransportConfig(mss=10, ack_every=3, delayed_ack=0.04))
    assert receiver.delayed_ack() is None                  # nothing held back
    assert receiver.on_segment(Segment(0, b"a" * 10, False)) == (b"a" * 10, None)
    assert receiver.delay_started                          # the first held back: set the timer
    assert receiver.on_segment(Segment(10, b"b" * 10, False)) == (b"b" * 10, None)
    assert not receiver.delay_started                      # the timer stays where it is
    assert receiver.delayed_ack() == Ack(20)
    assert receiver.delayed_ack() is None                  # acknowledged: nothing more
    assert receiver.on_segment(Segment(20, b"c" * 10, False)) == (b"c" * 10, None)
    assert receiver.on_segment(Segment(30, b"d" * 10, False)) == (b"d" * 10, None)
    assert receiver.on_segment(Segment(40, b"e" * 10, False)) == (b"e" * 10, Ack(50))
    assert receiver.delayed_ack() is None                  # the third segment's ACK took it


def test_a_two_segment_window_losing_its_second_gets_the_first_acknowledged() -> None:
    """Reno after a timeout sends two segments; when the second is lost the receiver holds
    the first back (ack_every = 2). The delayed-ACK timer acknowledges it 40 ms later, new data
    acknowledged, so the sender's RTO is back to its samples' and its next timeout resends
    only the lost one. Without the timer the first waited for the RTO too, was resent, gave
    no RTT sample, and a ring at 3 % loss stalled past its 10 s stall timer."""
    config = TransportConfig(mss=1000, congestion="reno", initial_window=2, delayed_ack=0.04)
    pair = Pair(0.0, 1, config)
    pair.forward.loss = 0.0
    dropped = []
    deliver = pair.forward.deliver

    def lose_the_second(frame: bytes) -> None:
        seg = pair.segments[int.from_bytes(frame[:8], "big")]
        if seg.seq == 1000 and not dropped:
            dropped.append(pair.loop.now)
            return
        deliver(frame)

    pair.forward.deliver = lose_the_second
    pair.write(bytes(2000))
    pair.loop.run(until=5.0)
    assert pair.received == bytes(2000)
    first_ack_at, first_ack = pair.acks_sent[0]
    assert first_ack == Ack(1000)
    assert first_ack_at == pytest.approx(dropped[0] + 0.04, abs=1e-3)
    assert pair.sender.counters.retransmissions == 1      # only the lost segment, once


def test_an_ack_of_a_resend_gives_no_rtt_sample() -> None:
    """After a timeout every segment was resent; the ACK that then covers the last resends and
    a new segment sent once may answer either (Karn's rule over the whole ACK, as Linux
    without timestamps): no sample, so the RTO stays at its initial 200 ms instead of
    srtt + 4 rttvar of a 100 ms sample (300 ms)."""
    sender = ReliableSender(TransportConfig(mss=100, window_bytes=400))
    sender.write(bytes(500), now=0.0)                    # four sent, the fifth waits
    assert len(sender.on_timeout(0.2)) == 4              # all four resent
    assert [s.seq for s in sender.on_ack(Ack(100), now=0.25)] == [400]   # sent once
    sender.on_ack(Ack(500), now=0.35)
    sender.write(bytes(100), now=0.35)
    assert sender.deadline == pytest.approx(0.35 + 0.2)


def test_a_segment_sacked_before_the_cumulative_ack_gives_no_rtt_sample() -> None:
    """Segment 0 is lost and resent after three SACKs; the ACK that repairs it 0.5 s later also
    covers segments 1-3, SACKed within 12 ms: their 0.5 s is the repair's, not the path's."""
    sender = ReliableSender(TransportConfig(mss=100, dupthresh=3))
    sender.write(bytes(400), now=0.0)
    sender.on_ack(Ack(0, (100, 200)), now=0.010)
    sender.on_ack(Ack(0, (200, 300)), now=0.011)
    resent = sender.on_ack(Ack(0, (300, 400)), now=0.012)
    assert [(s.seq, s.retransmission) for s in resent] == [(0, True)]
    sender.on_ack(Ack(400), now=0.5)
    sender.write(bytes(100), now=0.5)
    assert sender.deadline == pytest.approx(0.5 + 0.2)


def test_three_sacked_segments_above_a_hole_retransmit_it_once() -> None:
    sender = ReliableSender(TransportConfig(mss=100, dupthresh=3))
    sender.write(bytes(600), now=0.0)
    assert sender.on_ack(Ack(100), now=0.01) == []
    assert sender.on_ack(Ack(100, (200, 300)), now=0.01) == []
    assert sender.on_ack(Ack(100, (300, 400)), now=0.01) == []
    resent = sender.on_ack(Ack(100, (400, 500)), now=0.01)
    assert [(s.seq, s.retransmission) for s in resent] == [(100, True)]
    assert sender.on_ack(Ack(100, (500, 600)), now=0.01) == []
    assert sender.counters.fast_retransmissions == 1


def test_a_silent_peer_ends_the_connection_after_the_retries() -> None:
    config = TransportConfig(rto_initial=0.2, rto_min=0.2, rto_max=1.0, max_retx=3)
    sender = ReliableSender(config)
    sender.write(bytes(3000), now=0.0)
    times = []
    with pytest.raises(TransportTimeout, match="byte 0 after 4 timeouts"):
        while True:
            now = sender.deadline
            times.append(now)
            resent = sender.on_timeout(now)
            assert len(resent) == 3
    assert times == pytest.approx([0.2, 0.6, 1.4, 2.4])


@pytest.mark.parametrize("congestion", ["none", "reno"])
def test_new_data_acknowledged_after_timeouts_ends_the_backoff(congestion) -> None:
    """A retransmitted segment gives no RTT sample (Karn), so the doubled RTO used to stay
    until a segment sent once was acknowledged: a Reno flow whose losses each ended on a
    timeout waited rto_max per loss (a ring stalled past its stall timer at 3 % loss)."""
    config = TransportConfig(mss=100, rto_initial=0.2, rto_min=0.2, rto_max=2.0,
                             window_bytes=200, congestion=congestion)
    sender = ReliableSender(config)
    sender.write(bytes(400), now=0.0)
    sender.on_ack(Ack(100), now=0.010)                  # a sample: srtt 10 ms, RTO at rto_min
    assert sender.deadline == pytest.approx(0.210)
    for expiry in range(3):                             # 200 ms, then 400, then 800
        sender.on_timeout(sender.deadline)
    assert sender.deadline == pytest.approx(0.210 + 0.4 + 0.8 + 1.6)
    now = sender.deadline - 1.0
    sender.on_ack(Ack(200), now=now)                    # the resent segment, acknowledged
    assert sender.deadline == pytest.approx(now + 0.2)  # the RTO of the samples, not 1.6 s
    for _ in range(2):
        sender.on_timeout(sender.deadline)
    fresh = ReliableSender(config)                      # no sample yet: back to rto_initial
    fresh.write(bytes(400), now=0.0)
    fresh.on_timeout(fresh.deadline)
    fresh.on_ack(Ack(100), now=0.5)
    assert fresh.deadline == pytest.approx(0.5 + 0.2)


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="window_bytes >= mss"):
        TransportConfig(mss=1500, window_bytes=1000)
    with pytest.raises(ValueError, match="rto"):
        TransportConfig(rto_min=1.0, rto_initial=0.5)
    with pytest.raises(ValueError, match="delayed_ack"):
        TransportConfig(delayed_ack=0.6)


def test_an_ack_and_its_sack_block_round_trip_through_the_frame_options():
    """One definition of the ACK's wire form (`Ack.options`, `Ack.of`), used by the ring,
    the plan collectives and the background flows: a SACK block after two NOPs, nothing else
    taken for one."""
    from inaemu.sim.reliable import SACK, Ack
    for ack in (Ack(1000), Ack(1448, (2896, 4344)), Ack(0, (0, 1))):
        assert Ack.of(ack.cumulative, ack.options()) == ack
    assert Ack(5).options() == b""
    assert Ack(5, (7, 9)).options() == SACK.pack(1, 1, 5, 10, 7, 9)
    assert Ack.of(5, SACK.pack(1, 1, 8, 10, 7, 9)) == Ack(5)        # another option kind
    assert Ack.of(5, SACK.pack(1, 1, 5, 10, 7, 9)[:-1]) == Ack(5)   # cut short
