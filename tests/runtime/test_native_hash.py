"""Hashes in the native (C) controls: `modify_field_with_hash_based_offset` by a standard CRC
runs in C (the calculation's inputs packed as calcgen packs them, `Crc.c_source`'s routine,
primexterns' `_hash_offset`), and must give what the Python controls give, packet by packet;
a reconfigurable (`_custom`) CRC stays a Python callback."""

from __future__ import annotations

import random

import pytest

from p4switch.runtime import Switch
from p4switch.runtime.keys import ExactKey
from p4switch.runtime.state.hashes import standard_algorithms

from .bmv2 import Bmv2Program, assign, const, fld, op, param, prim, std
from .test_native import _switch, native_cache  # noqa: F401 - the fixture

CRCS = ["crc16", "crc32", "crcCCITT", "crc8"]


def _hash_program(algo: str) -> dict:
    """Header h (odd widths, a 64-bit field, the size selector s), then g only when s's low bit
    is 1; r = base + hash(...) mod size over h's fields, g's (counted only while g is valid),
    g's validity bit, a constant and a metadata field, with size 0, 1, an action's parameter
    or an expression of it, chosen by s."""
    prog = Bmv2Program()
    prog.header_type("h_t", [("a", 3), ("b", 13), ("c", 48), ("d", 64), ("s", 8), ("r", 32),
                             ("r2", 16)])
    prog.header_type("g_t", [("x", 7), ("y", 9)])
    prog.header_type("m_t", [("z", 12)])
    prog.header("h", "h_t")
    prog.header("g", "g_t")
    prog.header("m", "m_t", metadata=True)
    prog.state("start", [prog.extract("h")], key=[fld("h", "s")],
               transitions=[(1, 1, "with_g"), (None, None, None)])
    prog.state("with_g", [prog.extract("g")])
    calc = prog.calculation("c", algo, [
        fld("h", "a"), fld("h", "b"), fld("h", "c"), fld("g", "x"), fld("g", "$valid$"),
        fld("g", "y"), {"type": "hexstr", "value": "0x5", "bitwidth": 3}, fld("m", "z"),
        fld("h", "d")])
    calc_short = prog.calculation("c2", algo, [fld("h", "a")])
    hashed = prog.action("hashed", [
        assign(std("egress_spec"), const(1)),
        assign(fld("m", "z"), op("&", fld("h", "c"), const(0xFFF))),
        prim("modify_field_with_hash_based_offset", fld("h", "r"), param(0), calc, param(1)),
        prim("modify_field_with_hash_based_offset", fld("h", "r2"), const(7), calc_short,
             op("<<", param(1), const(2))),
    ], params=[("base", 32), ("size", 32)])
    prog.table("t", keys=[("exact", ["h", "s"])], actions=[hashed], default=(hashed, [3, 0]))
    return prog.build()


@pytest.mark.parametrize("algo", CRCS)
def test_a_crc_hash_in_c_matches_python(native_cache, monkeypatch, algo):  # noqa: F811
    doc = _hash_program(algo)
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    assert f"crc_{algo}(" in native.program.untraced.native.c_source      # in C, not Python
    sizes = {0: 0, 2: 1, 4: 1000, 6: 0xFFFFFFFF, 8: 3}
    for sw in (python, native):
        for s, size in sizes.items():
            for low in (0, 1):
                sw.table_add("t", [ExactKey(s | low)], "hashed", [s * 1000 + 1, size])
    rng = random.Random(algo)
    outs = set()
    for i in range(400):
        s = rng.choice(list(sizes)) | rng.randrange(2)
        if i % 5 == 0:
            s = rng.randrange(256)               # (no entry: the default action)
        head = rng.randbytes(16) + bytes([s]) + bytes(6)
        packet = head + (rng.randbytes(2) if s & 1 else b"") + rng.randbytes(rng.randrange(4))
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want, f"packet {i}: {packet.hex()}"
        outs.add(want[0][1][17:23])
        entry_size = sizes.get(s & ~1, 0)           # (the default action's size is 0)
        if entry_size == 0:                         # simple_switch takes a size of 0 as 1:
            base = (s & ~1) * 1000 + 1 if (s & ~1) in sizes else 3   # the result is the base
            assert int.from_bytes(want[0][1][17:21], "big") == base, f"packet {i}"
    assert len(outs) > 100                         # the hashes really vary


def test_the_python_and_c_crc_routines_agree_on_empty_and_long_inputs(native_cache,  # noqa: F811
                                                                      monkeypatch):
    """A calculation over a lone invalid header hashes no bytes at all; over a metadata
    field of 64 bits, eight. Both against the CRC's own Python."""
    for algo in CRCS:
        prog = Bmv2Program()
        prog.header_type("h_t", [("d", 64), ("r", 32)])
        prog.header_type("g_t", [("x", 16)])
        prog.header("h", "h_t")
        prog.header("g", "g_t")                  # never extracted: invalid
        prog.state("start", [prog.extract("h")])
        empty = prog.calculation("e", algo, [fld("g", "x")])
        act = prog.action("a", [
            assign(std("egress_spec"), const(1)),
            prim("modify_field_with_hash_based_offset", fld("h", "r"), const(0), empty,
                 const(1 << 32)),           # (a size past every 32-bit CRC: the CRC itself)
        ])
        prog.table("t", actions=[act], default=(act, []))
        doc = prog.build()
        python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
        packet = bytes(range(12))
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want
        crc = standard_algorithms()[algo]
        assert int.from_bytes(want[0][1][8:12], "big") == crc(b"") & 0xFFFFFFFF


def test_a_custom_crc_stays_python(native_cache, monkeypatch):  # noqa: F811
    doc = _hash_program("crc16_custom")
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    assert "crc_crc16_custom(" not in native.program.untraced.native.c_source
    for sw in (python, native):
        sw.table_add("t", [ExactKey(4)], "hashed", [9, 1000])
    packet = bytes(range(16)) + bytes([4]) + bytes(6)
    assert native.receive(0, packet) == python.receive(0, packet)
