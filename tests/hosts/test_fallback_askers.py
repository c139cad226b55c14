"""hosts/fallback.py: a member that retransmitted while its cell was pending gets the RESULT to
itself when the cell completes, beside the multicast (issue 31, last gap: its timer backed off
while it waited for the others, so a lost multicast copy used to cost it up to rto_max)."""

from __future__ import annotations

import pytest

from hosts.fallback import VIA_SWITCH, FallbackAggregator
from hosts.ina_header import FLAG_NEXT, FLAG_RETX, HEADER, Kind
from hosts.ina_wire import InaPacket, decode, encode

K, JOB = 4, 5


def packet(kind, worker, values=(1, 1, 1, 1), *, chunk=3, slot=3, ver=0, retx=False) -> bytes:
    payload = encode(InaPacket(kind=kind, job=JOB, worker=worker, slot=slot, ver=ver, retx=retx,
                               chunk=chunk, count=0,
                               values=[] if kind == Kind.QUERY else list(values)))
    return payload[:1] + bytes([payload[1] | FLAG_NEXT]) + payload[2:]


def hashed(**options) -> FallbackAggregator:
    return FallbackAggregator(job=JOB, n=3, k=K, first_slot=0, pool_size=8, via_switch=True,
                              hashed=True, **options)


def test_members_that_asked_while_pending_get_the_result_at_completion() -> None:
    agg = hashed()
    assert agg.receive(packet(Kind.CONTRIB, 0)) == []
    assert agg.receive(packet(Kind.CONTRIB, 1)) == []
    assert agg.receive(packet(Kind.CONTRIB, 0, retx=True)) == []     # a duplicate: pending
    assert agg.receive(packet(Kind.QUERY, 1)) == []                  # its piece is in: pending
    nack = agg.receive(packet(Kind.QUERY, 2))                        # its piece is missing
    assert [HEADER.unpack_from(p)[0] for _, p in nack] == [Kind.NACK]
    done = agg.receive(packet(Kind.CONTRIB, 2))
    assert [t for t, _ in done] == [VIA_SWITCH, 0, 1]                # not 2: it sent it now
    multicast = HEADER.unpack_from(done[0][1])
    assert multicast[1] & FLAG_NEXT and not multicast[1] & FLAG_RETX
    for target, payload in done[1:]:
        kind, flags, _job, worker, *_ = HEADER.unpack_from(payload)
        assert (kind, worker) == (Kind.RESULT, target) and flags & FLAG_RETX
        assert not flags & FLAG_NEXT                  # an answer to one worker claims nothing
        assert decode(payload, K).values.tolist() == [3, 3, 3, 3]
    assert agg.counters.askers_answered == 2 and agg.counters.results_multicast == 1
    # answered once: the next round of the cell starts with no askers
    for worker in range(3):
        out = agg.receive(packet(Kind.CONTRIB, worker, chunk=19))
    assert [t for t, _ in out] == [VIA_SWITCH]


def test_a_new_round_forgets_the_old_rounds_askers() -> None:
    agg = hashed()
    agg.receive(packet(Kind.CONTRIB, 0, chunk=3))
    agg.receive(packet(Kind.CONTRIB, 0, chunk=3, retx=True))         # asked in round 3
    for worker in range(3):                                          # round 19 here instead
        out = agg.receive(packet(Kind.CONTRIB, worker, chunk=19))
    assert [t for t, _ in out] == [VIA_SWITCH]


@pytest.mark.parametrize("options", [{"hashed": False}, {"answer_askers": False}])
def test_off_for_the_flat_aggregator_and_on_request(options) -> None:
    """The flat (static) aggregator answers as ina.p4 does, byte for byte
    (tests/ina/test_fallback_differential.py): no list of askers there."""
    agg = FallbackAggregator(job=JOB, n=2, k=K, first_slot=0, pool_size=8, via_switch=True,
                             **options)
    agg.receive(packet(Kind.CONTRIB, 0))
    agg.receive(packet(Kind.CONTRIB, 0, retx=True))
    assert [t for t, _ in agg.receive(packet(Kind.CONTRIB, 1))] == [VIA_SWITCH]
