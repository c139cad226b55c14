"""hosts/fallback_tier.py: the host aggregator standing in for a child tier's cell of a hashed
tree job (docs/protocol.md §3.3 "Tiers", §6): partial sums go up as the tier's member of the
parent's job, the parent's RESULT comes back through the child switch, and waiting cells climb
as ina.p4's child role does."""

from __future__ import annotations

from hosts.fallback import VIA_SWITCH
from hosts.fallback_tier import VIA_PARENT, TierAggregator
from hosts.ina_header import FLAG_NEXT, FLAG_RETX, HEADER, Kind
from hosts.ina_wire import decode
from tests.hosts.fallback_packets import packet

K, JOB, N, MEMBER = 4, 9, 2, 3




def fields(payload: bytes) -> tuple:
    return HEADER.unpack_from(payload)


def test_a_tier_sends_its_partial_up_and_multicasts_the_parents_result() -> None:
    tier = TierAggregator(job=JOB, n=N, k=K, pool_size=8, parent_member=MEMBER)
    assert tier.receive(packet(Kind.CONTRIB, 0, [1, 2, 3, 4], next_=True)) == []
    up = tier.receive(packet(Kind.CONTRIB, 1, [10, 20, 30, 40], next_=True))
    assert [target for target, _ in up] == [VIA_PARENT]
    kind, flags, job, worker, _pad, slot, chunk, count, _exp = fields(up[0][1])
    assert (kind, job, worker, slot, chunk, count) == (Kind.CONTRIB, JOB, MEMBER, 3, 7, 0)
    assert flags & FLAG_NEXT and not flags & FLAG_RETX      # the parent claims on `next`
    assert decode(up[0][1], K).values.tolist() == [11, 22, 33, 44]
    # waiting for the parent: a member's duplicate (half an RTO or more after the last send
    # up: tests/hosts/test_fallback_tier_timer.py) and the parent's NACK send it up again,
    # member 0's QUERY climbs, member 1's does not
    again = tier.receive(packet(Kind.CONTRIB, 1, [10, 20, 30, 40], retx=True, next_=True),
                         1.0)
    assert again[0][0] == VIA_PARENT and fields(again[0][1])[1] & FLAG_RETX
    assert decode(again[0][1], K).values.tolist() == [11, 22, 33, 44]
    nacked = tier.receive(packet(Kind.NACK, MEMBER, []))
    assert nacked[0][0] == VIA_PARENT and fields(nacked[0][1])[1] & FLAG_NEXT
    query = tier.receive(packet(Kind.QUERY, 0, []))
    assert [(t, fields(p)[0], fields(p)[3]) for t, p in query] == [(VIA_PARENT, Kind.QUERY,
                                                                     MEMBER)]
    assert tier.receive(packet(Kind.QUERY, 1, [])) == []
    assert tier.partials_up == 3
    # the parent's RESULT (4 workers in all, it claimed): to the child switch, which
    # multicasts it and claims too; and to each member that asked while the cell waited
    # (both did: member 1's duplicate, the QUERYs), retx and without `next`
    down = tier.receive(packet(Kind.RESULT, MEMBER, [100, 200, 300, 400], count=4,
                               next_=True))
    assert [target for target, _ in down] == [VIA_SWITCH, 0, 1]
    kind, flags, _job, _worker, _pad, _slot, _chunk, count, _exp = fields(down[0][1])
    assert (kind, count) == (Kind.RESULT, 4) and flags & FLAG_NEXT
    for _target, payload in down:
        assert decode(payload, K).values.tolist() == [100, 200, 300, 400]
    for target, payload in down[1:]:
        kind, flags, _job, worker, _pad, _slot, _chunk, count, _exp = fields(payload)
        assert (kind, worker, count) == (Kind.RESULT, target, 4)
        assert flags & FLAG_RETX and not flags & FLAG_NEXT
    assert tier.counters.askers_answered == 2
    # complete: a member that lost it gets the global sum from here; the parent's RESULT
    # again is a duplicate
    lost = tier.receive(packet(Kind.CONTRIB, 0, [1, 2, 3, 4], retx=True))
    assert [t for t, _ in lost] == [0]
    assert decode(lost[0][1], K).values.tolist() == [100, 200, 300, 400]
    assert fields(lost[0][1])[7] == 4               # the whole tree's count, not this tier's
    before = tier.counters.duplicates
    assert tier.receive(packet(Kind.RESULT, MEMBER, [1, 1, 1, 1], count=4)) == []
    assert tier.counters.duplicates == before + 1


def test_a_result_for_another_round_is_ignored() -> None:
    tier = TierAggregator(job=JOB, n=1, k=K, pool_size=8, parent_member=0)
    tier.receive(packet(Kind.CONTRIB, 0, [5, 5, 5, 5], chunk=7))
    assert tier.receive(packet(Kind.RESULT, 0, [9, 9, 9, 9], chunk=15, count=2)) == []
    assert tier.receive(packet(Kind.RESULT, 0, [9, 9, 9, 9], chunk=7, count=2))[0][0] == \
        VIA_SWITCH
