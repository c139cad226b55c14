"""Switch.receive_batch runs the generated fast path directly when no trace is attached and no
egress queue is in use (runtime/switch.py): the same outputs, in the same order, as one
receive() per packet; bytearrays are taken, bad input still raises; with a trace attached
(the general flow) the batch gives the same outputs again."""

from __future__ import annotations

import pytest

from pathlib import Path

from p4switch.compiler import compile_file
from p4switch.runtime import InvalidArgument, PacketTrace, Switch

from .test_lane_vectors import K, _configure, _ina_packets

ROOT = Path(__file__).resolve().parents[2]


def _switch() -> Switch:
    build = compile_file(str(ROOT / "p4src" / "ina.p4"), defines={"INA_K": str(K)})
    sw = Switch(build.bmv2)
    _configure(sw)
    return sw


def test_batch_equals_one_by_one_and_traced():
    packets = _ina_packets(200, seed=9)
    one, batch, traced = _switch(), _switch(), _switch()
    traced.trace = PacketTrace()
    want = [out for port, data in packets for out in one.receive(port, data)]
    assert len(want) > 20
    items = [(port, bytearray(data) if n % 7 == 0 else data)
             for n, (port, data) in enumerate(packets)]
    assert batch.receive_batch(items) == want
    assert traced.receive_batch(packets) == want
    assert batch._engine.packet_count == len(packets)
    for name in one.registers():
        assert batch.register_read_all(name) == one.register_read_all(name)


def test_bad_input_in_a_batch_raises():
    sw = _switch()
    with pytest.raises(InvalidArgument):
        sw.receive_batch([(1, b"\x00" * 60), (-1, b"\x00" * 60)])
    with pytest.raises(InvalidArgument):
        sw.receive_batch([(1, "not bytes")])
