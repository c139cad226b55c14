"""INA packets as a worker or a child switch sends them to a host aggregator, for the
fallback tests: one builder, the `next` flag set on the wire as ina.p4 reads it."""

from __future__ import annotations

from hosts.ina_header import FLAG_NEXT, Kind
from hosts.ina_wire import InaPacket, encode

JOB = 9


def packet(kind, worker, values, *, chunk=7, slot=3, ver=1, retx=False, next_=False,
           count=0, job=JOB) -> bytes:
    payload = encode(InaPacket(kind=kind, job=job, worker=worker, slot=slot, ver=ver,
                               retx=retx, chunk=chunk, count=count,
                               values=[] if kind in (Kind.QUERY, Kind.NACK) else values))
    return payload[:1] + bytes([payload[1] | (FLAG_NEXT if next_ else 0)]) + payload[2:]
