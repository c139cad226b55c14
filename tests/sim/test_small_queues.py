"""TCP Small Queues in the simulator (reliable.py, link.py's `on_left`): a connection keeps at
most its budget of frames in its host's NIC queue, so the ACKs a host returns on the same uplink
wait behind a few frames, not behind a whole window. The regression: a zero-loss ring over 16
workers used to retransmit thousands of segments (the peer's 200 ms timer fired while its ACKs
sat behind 256 KiB of data in the host's queue); Linux TCP on Mininet retransmits none."""

from __future__ import annotations

from collections import defaultdict, deque

import numpy as np
import pytest

from inaemu.sim import SimJob, TransportConfig, gradient, simulate
from inaemu.sim.frames import HEADERS_TCP, PROTO_TCP, parse
from inaemu.sim.link import LinkDirection
from inaemu.sim.reliable import (TSQ_LIMIT_OUTPUT_BYTES, Ack, ReliableSender, sender_for,
                                 tsq_budget)
from topologies.builders import star

MSS = 1448
FRAME = MSS + HEADERS_TCP


def ring(n: int, bw: float, size: int, *, loss: float = 0.0, small_queues: bool = True,
         algo: str = "ring", seed: int = 1):
    topology = star(n)
    return simulate(topology, [SimJob(1, tuple(h.name for h in topology.hosts))], algo=algo,
                    size_bytes=size, elems_k=32, bw=bw, loss=loss, seed=seed, time_limit=300,
                    transport=TransportConfig(small_queues=small_queues))


def check_sum(result, n: int, size: int, seed: int = 1) -> None:
    exact = np.sum([gradient(seed, w, size // 4).astype(np.float64) for w in range(n)], axis=0)
    assert result.stop == "done" and result.correct
    for record in result.records:
        assert record.error is None, record.error
        assert np.max(np.abs(record.result.astype(np.float64) - exact)) <= record.err_bound


# -- the budget ----------------------------------------------------------------------------------

def test_the_budget_is_two_frames_or_a_millisecond_of_the_link_capped_like_linux() -> None:
    assert tsq_budget(10e6, MSS) == 2 * FRAME                 # 1 ms is 1,220 bytes: 2 frames
    assert tsq_budget(1e9, MSS) == int(1e9 / 8) >> 10         # 122,070 bytes: ~1 ms
    assert tsq_budget(100e9, MSS) == TSQ_LIMIT_OUTPUT_BYTES == 4 << 20
    assert tsq_budget(None, MSS) is None                      # unshaped: nothing ever waits
    config = TransportConfig()
    assert sender_for(config, 10e6).nic_budget == 2 * FRAME
    assert sender_for(config, 10e6).throttles
    # a budget that holds the whole 256 KiB window cannot bind: no bookkeeping at 100 Gbit/s
    assert not sender_for(config, 100e9).throttles
    assert not sender_for(config, None).throttles
    assert not sender_for(TransportConfig(small_queues=False), 10e6).throttles


def test_a_throttled_sender_hands_out_what_fits_and_more_as_frames_leave() -> None:
    sender = ReliableSender(TransportConfig(), nic_budget=2 * FRAME)
    assert [s.seq for s in sender.write(bytes(10 * MSS), 0.0)] == [0, MSS]
    assert sender.nic_bytes == 2 * FRAME and sender.in_flight == 2 * MSS   # the rest is unsent
    assert [s.seq for s in sender.on_left(FRAME, 0.001)] == [2 * MSS]
    assert sender.nic_bytes == 2 * FRAME
    # an ACK frees window, not NIC room: nothing more until a frame leaves
    assert sender.on_ack(Ack(2 * MSS), 0.002) == []
    assert [s.seq for s in sender.on_left(FRAME, 0.003)] == [3 * MSS]


def test_after_a_timeout_the_resends_wait_for_room_and_go_before_new_data() -> None:
    sender = ReliableSender(TransportConfig(), nic_budget=2 * FRAME)
    sender.write(bytes(6 * MSS), 0.0)
    for step in range(6):                       # all six leave the NIC, none is acknowledged
        sender.on_left(FRAME, 0.001 * (step + 1))
    assert sender.in_flight == 6 * MSS and sender.nic_bytes == 0
    resent = sender.on_timeout(sender.deadline)
    assert [(s.seq, s.retransmission) for s in resent] == [(0, True), (MSS, True)]
    assert sender.write(bytes(MSS), 0.5) == []          # new data: no room, and resends first
    assert [(s.seq, s.retransmission) for s in sender.on_left(FRAME, 1.0)] == [(2 * MSS, True)]
    # an ACK for what still waits takes it off the list: the next room goes to the rest
    assert sender.on_ack(Ack(4 * MSS), 1.01) == []
    rest = sender.on_left(FRAME, 1.02) + sender.on_left(FRAME, 1.03)
    assert [(s.seq, s.retransmission) for s in rest] == [(4 * MSS, True), (5 * MSS, True)]
    assert sender.counters.retransmissions == 5
    assert [(s.seq, s.retransmission) for s in sender.on_left(FRAME, 1.04)] == [(6 * MSS, False)]


# -- the regression: a zero-loss ring of 16 ------------------------------------------------------

# sizes whose ring chunk (size / 16) is 128-256 KiB, ~210 ms at the link rate: without TSQ that
# sat in the host queue in front of the ACKs, beyond the 200 ms minimum timeout
@pytest.mark.parametrize("bw,mib", [pytest.param(10, 4, marks=pytest.mark.slow), (5, 2)])
def test_a_zero_loss_ring_of_16_retransmits_nothing(bw: float, mib: int) -> None:
    size = mib << 20
    result = ring(16, bw, size)
    check_sum(result, 16, size)
    # exactly none: no loss, no queue overflows (a connection's NIC share is 2 frames) and the
    # round trip (a few frame times at each hop) is far below the 200 ms minimum timeout
    assert [r.retransmissions for r in result.records] == [0] * 16
    assert sum(link["dropped_queue"] for link in result.links) == 0


def test_without_small_queues_the_same_ring_retransmits() -> None:
    """The test above can fail: the old model (every segment the window allows queued at once)
    still retransmits at 5 Mbit/s."""
    result = ring(16, 5, 2 << 20, small_queues=False)
    assert result.correct
    assert sum(r.retransmissions for r in result.records) > 1000


# -- what the NIC queue holds --------------------------------------------------------------------

class QueueWatch:
    """Follows every frame a host hands to its uplink, with its own departure arithmetic
    (serialisation after the frames ahead): per connection the frame bytes still queued, and
    how long each ACK waited before its serialisation began."""

    def __init__(self, monkeypatch, hosts: set[str]):
        self.queued: dict[tuple, deque] = defaultdict(deque)   # connection -> (leaves, size)
        self.most: dict[tuple, int] = defaultdict(int)
        self.ack_wait = 0.0
        self.acks = 0
        busy: dict[str, float] = defaultdict(float)
        original = LinkDirection.send
        watch = self

        def send(link, frame, on_left=None):
            dropped = link.counters.dropped_queue
            original(link, frame, on_left)
            if link.src.split(":")[0] not in hosts:
                return
            assert link.counters.dropped_queue == dropped
            now = link.loop.now
            start = max(now, busy[link.name])
            leaves = busy[link.name] = start + len(frame) * link.seconds_per_byte
            datagram = parse(frame)
            assert datagram is not None and datagram.proto == PROTO_TCP
            if not datagram.payload:
                watch.acks += 1
                watch.ack_wait = max(watch.ack_wait, start - now)
                return
            key = (link.name, datagram.dst_ip, datagram.dport)
            frames = watch.queued[key]
            while frames and frames[0][0] <= now:
                frames.popleft()
            frames.append((leaves, len(frame)))
            watch.most[key] = max(watch.most[key], sum(size for _, size in frames))

        monkeypatch.setattr(LinkDirection, "send", send)


@pytest.mark.parametrize("algo,n,bw", [("ring", 16, 10), ("ps", 8, 10), ("ring", 4, 100)])
def test_a_connection_never_queues_more_than_its_budget(monkeypatch, algo, n, bw) -> None:
    watch = QueueWatch(monkeypatch, {f"h{i}" for i in range(1, n + 1)})
    size = 512 << 10
    result = ring(n, bw, size, algo=algo)
    check_sum(result, n, size)
    budget = tsq_budget(bw * 1e6, MSS)
    assert watch.most and max(watch.most.values()) <= budget
    # and the budget is used: some connection had it full (the window alone would allow more)
    assert max(watch.most.values()) > budget - FRAME
    # an ACK waits behind at most the budgets of the connections sharing its uplink (the ring:
    # one; the parameter server: one per peer), never behind a window
    connections = n - 1 if algo == "ps" else 1
    assert watch.acks and watch.ack_wait <= (connections * budget + FRAME) * 8 / (bw * 1e6)


# -- loss recovery still works -------------------------------------------------------------------

@pytest.mark.parametrize("algo,n,mib", [("ring", 16, 1), ("dbtree", 8, 0.25)])
def test_one_percent_loss_is_recovered_with_small_queues(algo: str, n: int, mib: float) -> None:
    size = int(mib * (1 << 20))
    result = ring(n, 10, size, loss=1.0, algo=algo, seed=3)
    check_sum(result, n, size, seed=3)
    assert sum(link["lost_packets"] for link in result.links) > 10
    assert sum(r.retransmissions for r in result.records) > 10
