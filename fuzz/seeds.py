"""Seed inputs for every target, made from the repository's own programs, tests and packets
(`scripts/fuzz.py --seed` writes them into fuzz/corpus/<target>/; a few KB per target)."""

from __future__ import annotations

import json

import numpy as np

from hosts import ina_wire, ring_wire

from .common import ROOT, compiled
from .hosts import encode_payloads
from .packets import PROGRAMS, encode_packets

SMALL_PROGRAMS = ("tests/p4/empty_pipeline.p4", "tests/p4/subparser_out.p4",
                  "tests/p4/action_profile.p4", "tests/p4/varbit_local.p4")


def _stf_packets(stf_path: str, count: int) -> list[tuple[int, bytes]]:
    from p4switch.stf.commands import SendPacket
    from p4switch.stf.parser import parse_stf_file

    test = parse_stf_file(ROOT / stf_path)
    return [(cmd.port, cmd.data) for cmd in test.commands if isinstance(cmd, SendPacket)][:count]


def _frontend():
    return [(ROOT / p).read_bytes() for p in SMALL_PROGRAMS]


def _bmv2_json():
    return [json.dumps(compiled(p)[0], separators=(",", ":")).encode()
            for p in SMALL_PROGRAMS[:2]]


def _stf():
    text = (ROOT / "p4src/l3_forward.stf").read_text().splitlines()
    return [(ROOT / "tests/p4/clone.stf").read_bytes(),
            "\n".join(text[:40]).encode(), "\n".join(text[40:]).encode()]


def _packets(target: str):
    _, stf = PROGRAMS[target]
    sent = _stf_packets(stf, 12)
    return [encode_packets(sent[i:i + 3]) for i in range(0, len(sent), 3)]


def _p4rt(requests: int):
    # even first byte: a base request (its index in the next byte) with n mutations
    return [bytes([0, index, 0]) for index in range(requests)] + \
           [bytes([0, index, 3, 0, 5, 2, 7, 1, 1]) for index in range(requests)]


def _p4rt_write():
    from .p4runtime import WRITE_PROGRAM, base_updates
    from p4.v1 import p4runtime_pb2 as pb

    seeds = [bytes([n % 3, index, 0, 0]) for index in range(len(base_updates(WRITE_PROGRAM)))
             for n in (0,)]
    wire = pb.WriteRequest(device_id=0, updates=base_updates(WRITE_PROGRAM)[:3])
    return seeds[:12] + [bytes([0, 0, 1]) + wire.SerializeToString()]


def _p4rt_read():
    from .p4runtime import WRITE_PROGRAM, base_reads
    return [bytes([index, 0]) for index in range(len(base_reads(WRITE_PROGRAM)))]


def _p4rt_stream():
    # fuzz/stream.py's steps: a byte (client + 3 * action), then the action's bytes
    from p4.v1 import p4runtime_pb2 as pb

    def arbitrate(client, election):            # device 0, election id `election` (0: none)
        return bytes([client, 0, election, 0])

    def packet_out(client, port):               # egress_port metadata, a 14-byte frame
        frame = bytes(range(1, 13)) + b"\x08\x00"
        return bytes([client + 6, 1, 0, 1, port, len(frame)]) + frame

    wire = pb.StreamMessageRequest()
    wire.arbitration.device_id = 0
    wire.arbitration.election_id.low = 9
    serialized = wire.SerializeToString()
    return [
        arbitrate(0, 1) + packet_out(0, 1) + packet_out(0, 64),  # primary: out and back in
        arbitrate(0, 2) + arbitrate(1, 1) + packet_out(1, 2)      # a backup's PacketOut
        + arbitrate(2, 0) + bytes([0 + 21]) + packet_out(1, 3),   # primary gone: 1 takes over
        arbitrate(0, 1) + arbitrate(1, 1) + bytes([12 + 2]),      # a taken id; an empty message
        bytes([15, len(serialized)]) + serialized + bytes([1, 3, 0, 0]),   # wrong device
    ]


def _host_ina():
    values = np.arange(4, dtype=np.int32)
    result = ina_wire.encode(ina_wire.InaPacket(kind=ina_wire.Kind.RESULT, job=1, worker=0,
                                                slot=0, chunk=0, values=values, count=2))
    second = ina_wire.encode(ina_wire.InaPacket(kind=ina_wire.Kind.RESULT, job=1, worker=0,
                                                slot=1, chunk=1, values=values, count=2))
    max_result = ina_wire.encode(ina_wire.InaPacket(kind=ina_wire.Kind.MAX_RESULT, job=1,
                                                    worker=0, slot=0, chunk=0, values=values,
                                                    count=2))
    nack = ina_wire.encode(ina_wire.InaPacket(kind=ina_wire.Kind.NACK, job=1, worker=0, slot=2,
                                              chunk=2, values=()))
    return [encode_payloads(0, [result, second, nack]), encode_payloads(1, [max_result, result]),
            encode_payloads(3, [max_result, second, nack]), encode_payloads(0, [result[:20]])]


def _host_ring():
    hello = ring_wire.encode(ring_wire.Hello(job=1, rank=0, n=2))
    segment = ring_wire.encode(ring_wire.Segment(
        kind=ring_wire.RingKind.REDUCE_SCATTER, call=0, step=0, index=0,
        values=np.arange(4, dtype=np.float32)))
    gather = ring_wire.encode(ring_wire.Segment(
        kind=ring_wire.RingKind.ALL_GATHER, call=0, step=1, index=1,
        values=np.arange(4, dtype=np.float64)))
    return [bytes([255]) + segment + gather, bytes([6]) + hello + segment, bytes([0]) + segment]


SEEDS = {
    "frontend": _frontend,
    "bmv2_json": _bmv2_json,
    "stf": _stf,
    "packet_ina": lambda: _packets("packet_ina"),
    "packet_l3": lambda: _packets("packet_l3"),
    "packet_clone": lambda: _packets("packet_clone"),
    "packet_recirc": lambda: _packets("packet_recirc"),
    "p4rt_set": lambda: _p4rt(4),
    "p4rt_write": _p4rt_write,
    "p4rt_read": _p4rt_read,
    "p4rt_stream": _p4rt_stream,
    "host_ina": _host_ina,
    "host_ring": _host_ring,
}
