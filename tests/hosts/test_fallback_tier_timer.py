"""hosts/fallback_tier.py's own timer (issue 31, last gap): a child tier's host aggregator whose
cell waits for the parent sends its partial sum up again when the parent's RESULT is overdue,
instead of waiting for a member's timer; never summed twice at the parent."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.fallback import VIA_SWITCH, FallbackAggregator
from hosts.fallback_tier import VIA_PARENT, TierAggregator
from hosts.ina_header import FLAG_NEXT, FLAG_RETX, HEADER, Kind
from hosts.ina_wire import decode
from tests.hosts.fallback_packets import packet

K, JOB, MEMBER = 4, 9, 1




def tier(**options) -> TierAggregator:
    options = {"rto": 0.01, "rto_min": 0.001, "rto_max": 0.04, **options}
    return TierAggregator(job=JOB, n=2, k=K, pool_size=8, parent_member=MEMBER, **options)


def wait_for_parent(agg: TierAggregator, now: float = 1.0, chunk: int = 7) -> list:
    """Both members' contributions in at `now`: the partial sum goes up."""
    assert agg.receive(packet(Kind.CONTRIB, 0, [1, 2, 3, 4], chunk=chunk, next_=True), now) == []
    return agg.receive(packet(Kind.CONTRIB, 1, [10, 20, 30, 40], chunk=chunk, next_=True), now)


def test_an_overdue_parent_gets_the_partial_sum_again_with_backoff() -> None:
    agg = tier()
    assert agg.next_deadline() is None                  # nothing waits yet
    up = wait_for_parent(agg)
    assert [t for t, _ in up] == [VIA_PARENT]
    assert agg.next_deadline() == pytest.approx(1.01)  # the initial RTO
    assert agg.expire(1.009) == []
    again = agg.expire(1.01)
    assert [t for t, _ in again] == [VIA_PARENT] and agg.timer_resends == 1
    kind, flags, job, worker, _pad, slot, chunk, count, _exp = HEADER.unpack_from(again[0][1])
    assert (kind, job, worker, slot, chunk, count) == (Kind.CONTRIB, JOB, MEMBER, 3, 7, 0)
    assert flags & FLAG_RETX and flags & FLAG_NEXT and flags & 1     # retx; next, ver kept
    assert decode(again[0][1], K).values.tolist() == [11, 22, 33, 44]
    # doubled per expiry of the cell, up to rto_max
    assert agg.next_deadline() == pytest.approx(1.01 + 0.02)
    agg.expire(1.03)
    assert agg.next_deadline() == pytest.approx(1.03 + 0.04)
    agg.expire(1.07)
    assert agg.next_deadline() == pytest.approx(1.07 + 0.04)
    assert agg.partials_up == 4


def test_the_parents_result_stops_the_timer_and_is_a_sample() -> None:
    agg = tier()
    wait_for_parent(agg, now=2.0)
    down = agg.receive(packet(Kind.RESULT, MEMBER, [5, 5, 5, 5], count=4, next_=True), 2.003)
    assert [t for t, _ in down] == [VIA_SWITCH]
    assert agg.next_deadline() is None and agg.expire(9.0) == []
    assert agg.rto.samples == 1 and agg.rto.srtt == pytest.approx(0.003)
    assert agg.rto.rto == pytest.approx(0.009)     # RFC 6298's first sample: R + 4·R/2


def test_a_resent_cells_sample_runs_from_its_first_send() -> None:
    """The wait for the parent includes the wait for its other members, so the answer to a
    resent partial sum is timed from the first send (never shorter than the true wait)."""
    agg = tier()
    wait_for_parent(agg, now=3.0)
    agg.expire(3.01)
    agg.receive(packet(Kind.RESULT, MEMBER, [5, 5, 5, 5], count=4), 3.012)
    assert agg.rto.srtt == pytest.approx(0.012)


def test_a_new_round_of_the_cell_stops_the_old_rounds_timer() -> None:
    agg = tier()
    wait_for_parent(agg, chunk=7)
    # the parent's result was lost to this tier, the members moved on (a later use of the
    # slot, the same version, came here): the old round is over
    agg.receive(packet(Kind.CONTRIB, 0, [1, 1, 1, 1], chunk=23, next_=True), 1.005)
    assert agg.next_deadline() is None and agg.expire(5.0) == []


def test_the_timer_gives_up_after_max_sends_and_members_still_climb() -> None:
    agg = tier(max_sends=3)
    wait_for_parent(agg)
    now, sent = 1.0, 1
    while (deadline := agg.next_deadline()) is not None:
        now = deadline
        sent += len(agg.expire(now))
    assert sent == 3 and agg.timer_gave_up == 1 and agg.timer_resends == 2
    dup = agg.receive(packet(Kind.CONTRIB, 0, [1, 2, 3, 4], retx=True, next_=True), now + 1)
    assert [t for t, _ in dup] == [VIA_PARENT]


def test_a_members_duplicate_climbs_no_sooner_than_half_an_rto_after_the_last_send() -> None:
    """The tier's timer re-asks on its own; a duplicate within half an RTO of the last send up
    would only multiply packets (one tier's timer resends are the next tier's duplicates)."""
    agg = tier()                                         # RTO 10 ms before a sample
    wait_for_parent(agg, now=1.0)
    dup = packet(Kind.CONTRIB, 0, [1, 2, 3, 4], retx=True, next_=True)
    assert agg.receive(dup, 1.004) == []                 # 4 ms after the send: not yet
    assert [t for t, _ in agg.receive(dup, 1.006)] == [VIA_PARENT]     # over half an RTO
    assert agg.receive(dup, 1.010) == []                 # the last send was at 1.006
    # the members that asked get the RESULT beside the multicast
    down = agg.receive(packet(Kind.RESULT, MEMBER, [2, 2, 2, 2], count=4), 1.02)
    assert [t for t, _ in down] == [VIA_SWITCH, 0]


def test_without_the_timer_every_duplicate_climbs() -> None:
    agg = tier(timer=False)
    wait_for_parent(agg, now=1.0)
    dup = packet(Kind.CONTRIB, 0, [1, 2, 3, 4], retx=True, next_=True)
    assert [t for t, _ in agg.receive(dup, 1.0)] == [VIA_PARENT]


def test_no_timer_when_switched_off() -> None:
    agg = tier(timer=False)
    wait_for_parent(agg)
    assert agg.next_deadline() is None and agg.expire(100.0) == []


@pytest.mark.parametrize("bad", [{"rto": 0}, {"rto_min": 0}, {"rto_min": 1, "rto_max": 0.5},
                                 {"max_sends": 0}])
def test_bad_timer_options_are_refused(bad) -> None:
    with pytest.raises(ValueError):
        tier(**bad)


def test_a_repeated_partial_is_never_summed_twice_at_the_parent() -> None:
    """The parent (a root's host aggregator, members: this tier and another) takes the timer's
    copy as a duplicate: no sum before the other member's piece, one sum after it, and the
    copies after that are answered with the stored sum."""
    child = tier()
    root = FallbackAggregator(job=JOB, n=2, k=K, first_slot=0, pool_size=8, via_switch=True,
                              hashed=True, result_count=4)
    up = wait_for_parent(child)[0][1]
    assert root.receive(up) == []
    assert root.receive(child.expire(1.01)[0][1]) == []          # a duplicate, still pending
    done = root.receive(packet(Kind.CONTRIB, 0, [100, 100, 100, 100], next_=True))
    assert [t for t, _ in done] == [VIA_SWITCH, MEMBER]           # the child asked: to it too
    assert decode(done[0][1], K).values.tolist() == [111, 122, 133, 144]
    answer = root.receive(child.expire(1.03)[0][1])              # both copies were lost
    assert [t for t, _ in answer] == [MEMBER]
    assert decode(answer[0][1], K).values.tolist() == [111, 122, 133, 144]
    assert root.counters.contributions == 2 and root.counters.duplicates == 2
    assert root.counters.results_multicast == 1
    # the answer completes the tier's cell: to the child switch, the timer stopped
    down = child.receive(answer[0][1], 1.031)
    assert [t for t, _ in down] == [VIA_SWITCH] and child.next_deadline() is None
    assert np.array_equal(decode(down[0][1], K).values, [111, 122, 133, 144])


class FakeNode:
    """What SimFallbackServer uses of a simulated host: an event loop, an address, a link
    (`sent`) and local delivery (`received`)."""

    class Addressing:
        ip = bytes([10, 0, 0, 2])

        @staticmethod
        def udp_frame(to, sport, dport, payload, ident):
            return (to, sport, dport, payload)

    def __init__(self):
        from inaemu.sim.events import EventLoop
        self.loop = EventLoop()
        self.addressing = self.Addressing()
        self.sent, self.received, self.handlers = [], [], {}

    def listen(self, proto, port, handler):
        self.handlers[port] = handler

    def unlisten(self, proto, port, handler):
        self.handlers.pop(port, None)

    def next_ident(self):
        return 0

    def send_frame(self, frame):
        self.sent.append((self.loop.now, frame))

    def receive(self, frame):
        self.received.append((self.loop.now, frame))


def test_the_simulated_host_runs_the_timer_and_delivers_to_its_own_member_locally() -> None:
    """hosts/fallback_node.py: the loop fires the tier's timer (the partial sum goes to the
    parent again, nothing else happens), and a reply to a member on the aggregator's own host
    is delivered there (loopback, as the kernel does), not put on the link."""
    from types import SimpleNamespace

    from hosts.fallback_node import SimFallbackServer
    node = FakeNode()
    member_ips = [FakeNode.Addressing.ip, bytes([10, 0, 0, 1])]    # member 0: this host
    server = SimFallbackServer(node, tier(), member_ips, port=48882,
                               switch_ip=bytes([10, 0, 0, 254]),
                               parent_ip=bytes([10, 0, 0, 252]), per_packet_s=0.0,
                               per_copy_s=0.0)
    deliver = node.handlers[48882]
    for worker, values in ((0, [1, 2, 3, 4]), (1, [10, 20, 30, 40])):
        node.loop.at(0.5, deliver, SimpleNamespace(payload=packet(Kind.CONTRIB, worker, values,
                                                                  next_=True)))
    node.loop.run(until=0.535)
    assert [(round(t, 6), f[0]) for t, f in node.sent] == \
        [(0.5, bytes([10, 0, 0, 252])), (0.51, bytes([10, 0, 0, 252])),
         (0.53, bytes([10, 0, 0, 252]))]                  # sent, then at 10 ms, 10 ms (cap)
    result = packet(Kind.RESULT, MEMBER, [7, 7, 7, 7], count=4)
    node.loop.at(0.536, deliver, SimpleNamespace(payload=result))
    node.loop.at(0.537, deliver, SimpleNamespace(
        payload=packet(Kind.CONTRIB, 0, [1, 2, 3, 4], retx=True)))   # member 0 lost it
    node.loop.run(until=1.0)
    assert [f[0] for _, f in node.sent[3:]] == [bytes([10, 0, 0, 254])]   # to be multicast
    assert [(round(t, 6), f[0]) for t, f in node.received] == [(0.537, member_ips[0])]
    assert server.local_deliveries == 1 and server.aggregator.timer_resends == 2
    assert server.aggregator.next_deadline() is None


def test_a_closed_simulated_host_sends_nothing_more() -> None:
    from types import SimpleNamespace

    from hosts.fallback_node import SimFallbackServer
    node = FakeNode()
    server = SimFallbackServer(node, tier(), [bytes([10, 0, 0, 5]), bytes([10, 0, 0, 6])],
                               port=48882, switch_ip=bytes([10, 0, 0, 254]),
                               parent_ip=bytes([10, 0, 0, 252]), per_packet_s=0.0,
                               per_copy_s=0.0)
    for worker in (0, 1):
        node.handlers[48882](SimpleNamespace(payload=packet(Kind.CONTRIB, worker, [1, 1, 1, 1])))
    node.loop.run(until=0.001)
    server.close()                                 # the job ended with the cell waiting
    node.loop.run(until=5.0)
    assert len(node.sent) == 1 and server.aggregator.timer_resends == 0


def test_the_udp_server_runs_the_timer() -> None:
    """hosts/fallback_udp.py: with no RESULT from the parent the partial sum goes up again,
    flagged retx, from the server's own timer (no datagram needed)."""
    import os
    import socket
    import time

    from hosts.fallback_udp import UdpFallbackServer
    from hosts.ina_header import INA_UDP_PORT
    parent_ip = f"127.32.{os.getpid() % 250}.9"       # a loopback address of this test's own
    parent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    parent.bind((parent_ip, INA_UDP_PORT))
    parent.settimeout(5)
    server = UdpFallbackServer(tier(rto=0.001, rto_min=0.001, rto_max=0.002),
                               ["127.0.0.1", "127.0.0.1"], bind_address="127.0.0.1", port=0,
                               switch="127.0.0.1", parent=parent_ip)
    member = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for worker, values in ((0, [1, 2, 3, 4]), (1, [10, 20, 30, 40])):
            member.sendto(packet(Kind.CONTRIB, worker, values), server.address)
            while not server.drain():
                pass
        first = parent.recv(2048)
        give_up = time.monotonic() + 5
        while not server.expire() and time.monotonic() < give_up:
            time.sleep(0.001)
        again = parent.recv(2048)
    finally:
        for s in (parent, member):
            s.close()
        server.close()
    assert not HEADER.unpack_from(first)[1] & FLAG_RETX
    assert HEADER.unpack_from(again)[1] & FLAG_RETX
    assert decode(again, K).values.tolist() == [11, 22, 33, 44]
    assert server.aggregator.timer_resends == 1


def test_a_negative_udp_tier_timer_cap_is_refused(capsys) -> None:
    """`python -m hosts.fallback_udp --parent ... --tier-rto-max S` (0: no timer)."""
    from hosts.fallback_udp import main
    base = ["--job", "1", "--k", "4", "--first-slot", "0", "--pool", "8", "--workers",
            "10.0.0.2,10.0.0.3", "--parent", "10.0.0.1", "--member", "0", "--hashed",
            "--via-switch", "10.0.0.254"]
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--tier-rto-max", "-1"])
    assert exit_.value.code == 2 and "--tier-rto-max must be 0" in capsys.readouterr().err
