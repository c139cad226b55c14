"""The host agents' decoders of what arrives from the network.

`host_ina`: aggregation packets (hosts/ina_wire.py, header layout in hosts/ina_header.py).
`decode` lets out only `WireError` (a ValueError with the reason), and whatever it accepts must
encode back to the same bytes. The worker's session (`InaSession.receive`, documented "never
raises for its content") gets the same payloads in the middle of an integer or float call.
Input: mode byte (call kind and lane format), then up to 8 payloads `length u16 | bytes`.

`host_ring`: ring messages over a byte stream (hosts/ring_wire.py). `StreamDecoder.feed` and
`RingSession.receive` let out only `RingProtocolError`; the decoder's messages must encode back
to exactly the bytes consumed, however the stream is cut. Input: a cut byte, then the stream.
"""

from __future__ import annotations

import numpy as np

from hosts import ina_wire, ring_wire
from hosts.errors import PeerUnreachable, RingProtocolError
from hosts.ina_session import InaSession
from hosts.ring_session import RingSession

from .common import Finding, Reader

MAX_PAYLOADS = 8
FORMATS = ("int32", "int16", "int8")


def payloads_of(reader: Reader) -> list[bytes]:
    payloads = []
    while reader.left and len(payloads) < MAX_PAYLOADS:
        payloads.append(reader.take(reader.int(2)))
    return payloads


def encode_payloads(mode: int, payloads) -> bytes:
    return bytes([mode]) + b"".join(len(p).to_bytes(2, "big") + p for p in payloads)


def _check_round_trip(payload: bytes) -> None:
    try:
        packet = ina_wire.decode(payload)
    except ina_wire.WireError:
        return
    again = ina_wire.encode(packet)
    if again != payload:
        raise Finding(f"decode/encode changed {payload.hex()} into {again.hex()}")
    header = ina_wire.decode_header(payload, packet.k or None)
    if header[:5] != (packet.kind, packet.job, packet.worker, packet.slot, packet.chunk):
        raise Finding(f"decode_header {header} disagrees with decode {packet}")


def _session(mode: int) -> tuple[InaSession, list[bytes]]:
    floats = bool(mode & 1)
    session = InaSession(job=1, worker=0, n=2, k=4, pool_size=4, window=4, rto=0.01,
                         rto_max=0.1, max_retx=3, fmt=FORMATS[(mode >> 1) % 3] if floats
                         else "int32")
    if floats:
        step = session.start(np.linspace(-2, 2, 16, dtype=np.float32), 0.0)
    else:
        step = session.start_integers(np.arange(16, dtype=np.int32), 0.0)
    return session, list(step.send)


def ina(data: bytes) -> None:
    reader = Reader(data)
    mode = reader.byte()
    payloads = payloads_of(reader)
    for payload in payloads:
        _check_round_trip(payload)
    session, _ = _session(mode)
    now = 0.0
    for payload in payloads:
        now += 0.001
        session.receive(payload, now)
    try:
        session.timeout(now + 0.05)
    except PeerUnreachable:
        pass


def ring(data: bytes) -> None:
    reader = Reader(data)
    cut = reader.byte() + 1
    stream = reader.rest()
    decoder, consumed = ring_wire.StreamDecoder(), 0
    try:
        for start in range(0, len(stream), cut):
            for message in decoder.feed(stream[start:start + cut]):
                size = len(ring_wire.encode(message))
                if ring_wire.encode(message) != stream[consumed:consumed + size]:
                    raise Finding(f"{message} does not encode back to the bytes it came from")
                consumed += size
    except RingProtocolError:
        pass
    session = RingSession(rank=1, n=2)
    session.start(np.arange(8, dtype=np.float32))
    try:
        for start in range(0, len(stream), cut):
            session.receive(stream[start:start + cut])
    except RingProtocolError:
        pass
