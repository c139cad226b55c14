"""Native (C) controls (`nativegen.py`, `nativebuild.py`, `INAEMU_NATIVE=1`) must give what
the Python controls give: the same packets out, the same registers and counters, packet by
packet. Both variants run side by side in one process on the same inputs."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from p4switch.runtime import LpmKey, Switch
from p4switch.runtime.cgen import nativebuild
from p4switch.runtime.cgen.nativeexpr import CVal, _masked
from p4switch.runtime.keys import ExactKey
from p4switch.runtime.share import codeshare

from .bmv2 import Bmv2Program, assign, const, fld, op, param, prim, std

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_ina_switch as ina_bench  # noqa: E402

M64 = (1 << 64) - 1


@pytest.fixture
def native_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    return tmp_path


def _switch(doc, native: bool, monkeypatch) -> Switch:
    monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
    sw = Switch(doc)
    in_use = sw.program.untraced.native_in_use
    if native:
        assert in_use == ("parse", "ingress", "egress", "deparse"), (nativebuild.why_not,
                                                 sw.program.untraced.native.refused)
    else:
        assert in_use == ()
    return sw


def _state(sw: Switch) -> tuple:
    program = sw.program
    return ({name: list(reg.cells) for name, reg in program.registers.items()},
            {name: (list(c.packets), list(c.bytes)) for name, c in program.counters.items()})


# ------------------------------------------------------------------ arithmetic at the edges
def _arith_program() -> dict:
    """64-bit fields a, b and an 8-bit shift amount s from the packet; the results of the
    operations whose C form needs care (wrap-around, shifts past 64, values wider than 64 bits
    that are compared or shifted right) go back out in o0..o11."""
    prog = Bmv2Program()
    outs = [(f"o{i}", 64) for i in range(12)]
    prog.header_type("h_t", [("a", 64), ("b", 64), ("s", 8), ("c", 8)] + outs)
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    a, b, s = fld("h", "a"), fld("h", "b"), fld("h", "s")
    mask = const(M64)

    def masked(expr):
        return op("&", expr, mask)

    def out(i, expr):
        return assign(fld("h", f"o{i}"), expr)

    big = {"type": "hexstr", "value": hex((1 << 70) | 0xF0F0F0F0F0F0F0F0)}
    compute = prog.action("compute", [
        assign(std("egress_spec"), const(1)),
        out(0, op("+", a, b)),                                   # wraps when stored
        out(1, op("-", a, b)),                                   # negative before the store
        out(2, masked(op("<<", a, s))),                          # s may be >= 64
        out(3, op(">>", a, s)),
        out(4, op("*", a, b)),
        out(5, {"type": "expression", "value": {"op": "~", "left": None, "right": a}}),
        out(6, op(">>", op("+", a, b), const(1))),               # 65 bits shifted right
        out(7, op("?", a, b, cond={"type": "expression",
                                   "value": op("<", op("-", a, b), const(0))})),
        out(8, op("&", big, a)),
        out(9, op("b2d", None, {"type": "expression",
                                "value": op("==", op("+", a, b), const(1 << 64))})),
        out(10, op("|", op("<<", fld("h", "c"), const(56)), op(">>", b, const(8)))),
    ])
    tagged = prog.action("tagged", [assign(fld("h", "o11"), param(0))],
                         params=[("tag", 64)])
    prog.run("t_compute", compute, next_node="c_sum")
    prog.conditional("c_sum", {"type": "expression",
                               "value": op(">", op("+", a, b), const(M64))},
                     "t_tag", None)
    prog.table("t_tag", keys=[("exact", ["h", "s"]), ("exact", ["h", "c"])],
               actions=[tagged], default=(tagged, [7]))
    return prog.build()


EDGES = [0, 1, 2, (1 << 63) - 1, 1 << 63, M64 - 1, M64, 0x0123456789ABCDEF]


def _arith_packets(n: int) -> list[bytes]:
    rng = random.Random(7)
    packets = []
    for i in range(n):
        a = EDGES[i % len(EDGES)] if i < 64 else rng.getrandbits(64)
        b = EDGES[(i // len(EDGES)) % len(EDGES)] if i < 64 else rng.choice(
            [rng.getrandbits(64), a, M64 - a, 0])
        s = rng.choice([0, 1, 7, 63, 64, 65, 127, 255, rng.getrandbits(8)])
        c = rng.getrandbits(8)
        packets.append(a.to_bytes(8, "big") + b.to_bytes(8, "big") + bytes([s, c]) +
                       bytes(8 * 12))
    return packets


def test_arithmetic_edges_match_python(native_cache, monkeypatch):
    doc = _arith_program()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    for sw in (python, native):
        for s in (0, 64, 255):
            sw.table_add("t_tag", [ExactKey(s), ExactKey(3)], "tagged", [0xFEED + s])
    for i, packet in enumerate(_arith_packets(600)):
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want, f"packet {i}: {packet[:18].hex()}"
    # the outputs are not all the same: the cases above are really exercised
    outs = {python.receive(0, p)[0][1][18:] for p in _arith_packets(40)}
    assert len(outs) > 30


# the C reads ints of one and two 30-bit digits without a call (nativebuild.small_value), and
# keeps a slot's int when a write stores the value it holds
DIGIT_EDGES = [0, 1, 255, 256, (1 << 30) - 1, 1 << 30, (1 << 30) + 1, (1 << 31) - 1,
               (1 << 32) - 1, 1 << 32, (1 << 59) + 3, (1 << 60) - 1, 1 << 60, (1 << 60) + 1,
               (1 << 61) - 1, (1 << 62) + 5]


def test_ints_at_digit_edges_match_python(native_cache, monkeypatch):
    doc = _arith_program()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    rng = random.Random(11)
    for i in range(800):
        a, b = rng.choice(DIGIT_EDGES), rng.choice(DIGIT_EDGES)
        if i % 4 == 3:
            a = (a + rng.randrange(-3, 4)) % (1 << 64)
        s = rng.choice([0, 1, 2, 29, 30, 31, 59, 60, 61, 64])
        packet = a.to_bytes(8, "big") + b.to_bytes(8, "big") + bytes([s, i % 256]) + \
            bytes(8 * 12)
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want, f"packet {i}: a={a:#x} b={b:#x} s={s}"


def test_odd_width_fields_parse_and_deparse_as_python(native_cache, monkeypatch):
    """Fields that straddle bytes (3, 5, 13, 1, 7, 9 bits...) read from and written back into
    the packet, one of them changed by the control."""
    prog = Bmv2Program()
    widths = [3, 5, 13, 3, 1, 7, 9, 7, 32, 48, 64, 16]       # 208 bits = 26 bytes
    prog.header_type("o_t", [(f"x{i}", w) for i, w in enumerate(widths)])
    prog.header("o", "o_t")
    prog.state("start", [prog.extract("o")])
    prog.doc["deparsers"][0]["order"] = ["o"]
    bump = prog.action("bump", [
        assign(std("egress_spec"), const(1)),
        assign(fld("o", "x2"), op("&", op("+", fld("o", "x2"), const(1)), const(0x1FFF))),
        assign(fld("o", "x5"), op("^", fld("o", "x5"), fld("o", "x0"))),
    ])
    prog.run("t_bump", bump)
    doc = prog.build()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    rng = random.Random(11)
    for i in range(500):
        packet = rng.randbytes(26 + rng.randrange(0, 6))
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want, f"packet {i}: {packet.hex()}"
        assert want[0][1][:26] != packet[:26]          # x2 changed: really re-serialised


def test_whole_byte_fields_parse_and_deparse_as_python(native_cache, monkeypatch):
    """Headers of whole-byte fields at byte boundaries, of every size from 1 to 8 bytes (read
    and written as big-endian bytes, the header not zeroed first), beside one that straddles
    bytes: the same packets out as the Python parser and deparser, with fields changed."""
    prog = Bmv2Program()
    widths = [8, 24, 40, 56, 16, 64, 48, 32]                 # 288 bits = 36 bytes
    prog.header_type("w_t", [(f"y{i}", w) for i, w in enumerate(widths)])
    prog.header_type("m_t", [("a", 4), ("b", 12), ("c", 16)])
    prog.header("w", "w_t")
    prog.header("m", "m_t")
    prog.state("start", [prog.extract("w"), prog.extract("m")])
    prog.doc["deparsers"][0]["order"] = ["w", "m"]
    changes = [assign(std("egress_spec"), const(1))]
    for i, width in enumerate(widths):
        changes.append(assign(fld("w", f"y{i}"), op("&", op("+", fld("w", f"y{i}"),
                                                            const(i + 1)),
                                                     const((1 << width) - 1))))
    changes.append(assign(fld("m", "c"), op("^", fld("m", "c"), fld("m", "a"))))
    prog.run("t_change", prog.action("change", changes))
    doc = prog.build()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    rng = random.Random(12)
    for i in range(500):
        packet = bytes([0xFF]) * 40 if i == 0 else rng.randbytes(40 + rng.randrange(0, 6))
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want, f"packet {i}: {packet.hex()}"
        assert want[0][1][:36] != packet[:36]          # the fields changed: re-serialised


def test_module_cache_tells_apart_modules_of_alike_code(native_cache):
    """Regression: the cache key was the translated code only, so two programs with the same
    C but a different number of state objects (a control refused after it had bound some)
    shared one module, whose size check then refused the other program's every packet."""
    from p4switch.runtime.cgen.nativemodule import NativeControls
    source = "static PyMethodDef METHODS[] = {\n    {NULL, NULL, 0, NULL}\n};\n"
    one = nativebuild.load(NativeControls(source, ["a"], "", {}, 1, 1))
    two = nativebuild.load(NativeControls(source, ["a", "b"], "", {}, 1, 1))
    assert one is not None and two is not None, nativebuild.why_not
    assert one is not two


def test_a_hand_written_module_is_built_with_its_own_flags_and_cached_apart(native_cache):
    """`load_source(flags=)`: the flags reach the compiler after the defaults, and the same
    text under other flags is another module (the simulator's core is built at -O2)."""
    source = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
#ifndef FLAGGED
#define FLAGGED 0
#endif
static PyObject *flagged(PyObject *self, PyObject *unused) { return PyLong_FromLong(FLAGGED); }
static PyMethodDef methods[] = {{"flagged", flagged, METH_NOARGS, ""}, {NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "MODULE_NAME", "", -1, methods};
PyMODINIT_FUNC PyInit_MODULE_NAME(void) { return PyModule_Create(&def); }
"""
    plain = nativebuild.load_source("inaemu_flags_test_", source)
    flagged = nativebuild.load_source("inaemu_flags_test_", source, flags=("-DFLAGGED=7",))
    assert plain is not None and flagged is not None, nativebuild.why_not
    assert plain.flagged() == 0 and flagged.flagged() == 7 and plain is not flagged


# ------------------------------------------------------------------------ setValid / setInvalid
def _validity_program() -> dict:
    """h{op, a} parsed, then lanes v (16 x 32 bits, a vector run) when op & 4; by op's bits the
    ingress adds and removes header x (a wide and a signed field), v, and the members of union
    u, and writes x.p between two adds of x (the second must keep it)."""
    prog = Bmv2Program()
    prog.header_type("h_t", [("op", 8), ("a", 32)])
    prog.header_type("x_t", [("p", 16), ("w", 80), ("s", 8, True)])
    prog.header_type("v_t", [(f"l{i}", 32) for i in range(16)])
    prog.header_type("m1_t", [("q", 8)])
    prog.header_type("m2_t", [("r", 16)])
    prog.header("h", "h_t")
    prog.header("v", "v_t")
    prog.header("x", "x_t")
    prog.union("u", {"m1": "m1_t", "m2": "m2_t"})
    prog.state("start", [prog.extract("h")], key=[fld("h", "op")],
               transitions=[(0x04, 0x04, "lanes"), (None, None, None)])
    prog.state("lanes", [prog.extract("v")])

    def header(name: str) -> dict:
        return {"type": "header", "value": name}

    def bit(mask: int) -> dict:
        return {"type": "expression",
                "value": op("!=", op("&", fld("h", "op"), const(mask)), const(0))}

    steps = [("add_x", 1, [prim("add_header", header("x"))]),
             ("touch_x", 128, [assign(fld("x", "p"), const(7)),
                               prim("add_header", header("x"))]),
             ("rm_x", 2, [prim("remove_header", header("x"))]),
             ("add_v", 8, [prim("add_header", header("v"))]),
             ("rm_v", 32, [prim("remove_header", header("v"))]),
             ("add_m1", 16, [prim("add_header", header("u.m1"))]),
             ("add_m2", 64, [prim("add_header", header("u.m2")),
                             assign(fld("u.m2", "r"), fld("h", "a"))])]
    fwd = prog.action("fwd", [assign(std("egress_spec"), const(1))])
    prog.run("fwd", fwd, next_node="is_add_x")
    for i, (name, mask, prims) in enumerate(steps):
        after = f"is_{steps[i + 1][0]}" if i + 1 < len(steps) else None
        prog.conditional(f"is_{name}", bit(mask), name, after)
        prog.run(name, prog.action(name, prims), next_node=after)
    prog.start("fwd")
    return prog.build()


def test_set_valid_and_invalid_run_as_c_and_match_python(native_cache, monkeypatch):
    """setValid/setInvalid (add_header/remove_header) as C statements, not Python callbacks:
    every field zeroed where it lives (a word, the list for the wide and signed ones, the int
    0 for a vector run), a valid header left alone, a union's other member made invalid."""
    doc = _validity_program()
    python = _switch(doc, False, monkeypatch)
    monkeypatch.setenv("INAEMU_NATIVE", "1")
    native = Switch(doc)      # (its deparser stays Python: x has a wide and a signed field)
    assert "ingress" in native.program.untraced.native_in_use, nativebuild.why_not
    controls = native.program.untraced.native
    assert "call3(" not in controls.c_source and "list_zero(" in controls.c_source
    rng = random.Random(11)
    outputs = set()
    for i in range(400):
        code = i if i < 256 else rng.getrandbits(8)
        packet = bytes([code]) + rng.getrandbits(32).to_bytes(4, "big") + (
            rng.randbytes(64) if code & 4 else b"") + rng.randbytes(rng.choice([0, 3, 40]))
        got, want = native.receive(0, packet), python.receive(0, packet)
        assert got == want, f"packet {i}: op {code:#04x}"
        outputs.add(len(want[0][1]) if want else -1)
    assert len(outputs) > 8       # headers of every kind really came and went

def test_masked_store_of_inexact_values():
    assert _masked(CVal("x", 8), 8) == "x"
    assert _masked(CVal("x", 9), 8) == "(x & 255ULL)"
    assert _masked(CVal("x", None), 64) == "(x & 18446744073709551615ULL)"


# ---------------------------------------------------------------------------- ina.p4
@pytest.mark.parametrize("k", [4, 64])
def test_ina_contributions_match_python(native_cache, monkeypatch, k):
    """Every contribution of several rounds through ina.p4 (absorbed, completing with a
    multicast, duplicates): the same packets out and the same registers and counters."""
    doc = ina_bench.ina_bmv2_json(k)
    switches = []
    for native in (False, True):
        monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
        sw = ina_bench.configured_switch(k, 4, program=doc)
        want = ("parse", "ingress", "egress", "deparse") if native else ()
        assert sw.program.untraced.native_in_use == want
        switches.append(sw)
    python, native = switches
    packets = ina_bench.contributions(k, 4, 16)
    packets += packets[:40]        # resent contributions: duplicates and stale slots
    for i, (port, data) in enumerate(packets):
        assert native.receive(port, data) == python.receive(port, data), f"packet {i}"
    assert _state(native) == _state(python)


def test_without_a_compiler_the_controls_stay_python(native_cache, monkeypatch):
    monkeypatch.setenv("INAEMU_NATIVE", "1")
    monkeypatch.setenv("PATH", str(native_cache / "empty"))
    monkeypatch.setenv("CC", "")
    codeshare.clear()
    doc = _arith_program()
    doc["actions"][0]["primitives"].append(assign(fld("h", "c"), const(9)))  # a new C source
    sw = Switch(doc)
    assert sw.program.untraced.native_in_use == ()
    assert any("no C compiler" in why for why in nativebuild.why_not.values())
    out = sw.receive(0, _arith_packets(1)[0])
    assert out and out[0][1][17] == 9


def test_ina_parser_edges_match_python(native_cache, monkeypatch):
    """Packets the C parser must stop on as the Python one does: cut short inside each
    header (PacketTooShort, payload from there), a wrong IPv4 checksum (checksum_error),
    another protocol, random bytes behind an IPv4 EtherType."""
    doc = ina_bench.ina_bmv2_json(4)
    switches = []
    for native in (False, True):
        monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
        switches.append(ina_bench.configured_switch(4, 4, program=doc))
    python, native = switches
    good = ina_bench.contributions(4, 4, 4)
    rng = random.Random(3)
    packets = []
    for port, data in good[:8]:
        for cut in (0, 5, 13, 14, 20, 33, 34, 40, 41, 42, 50, 57, 58, len(data) - 1):
            packets.append((port, data[:cut]))
        bad = bytearray(data)
        bad[24] ^= 0x5A                       # the IPv4 header checksum
        packets.append((port, bytes(bad)))
        other = bytearray(data)
        other[23] = 6                         # TCP instead of UDP
        packets.append((port, bytes(other)))
        packets.append((port, data[:14] + rng.randbytes(rng.randrange(0, 80))))
    for i, (port, data) in enumerate(packets):
        assert native.receive(port, data) == python.receive(port, data), f"packet {i}"
    assert _state(native) == _state(python)
    errors = python.program.counters
    assert sum(sum(c.packets) for c in errors.values()) > 0


def test_processes_starting_together_compile_a_module_once(native_cache, tmp_path):
    """Switches of one topology start at once; the first builds the module, the others wait
    for it and load it (each compiling it again took minutes on 2 cores with 20 switches)."""
    import os
    import shutil
    import subprocess
    log = tmp_path / "cc.log"
    wrapper = tmp_path / "cc"
    real = shutil.which("cc") or shutil.which("gcc")
    assert real, "a C compiler is part of this machine (docs/runtime.md)"
    wrapper.write_text(f"#!/bin/sh\necho run >> {log}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    script = ("import sys; sys.path.insert(0, 'scripts'); import bench_ina_switch as b; "
              "sw = b.configured_switch(4, 4, program=b.ina_bmv2_json(4)); "
              "assert sw.program.untraced.native_in_use, 'not native'")
    env = {**os.environ, "INAEMU_NATIVE": "1", "CC": str(wrapper),
           "INAEMU_NATIVE_CACHE": str(tmp_path / "shared-cache"),
           "INAEMU_TEMPLATE_CACHE": "0"}
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env)
             for _ in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    assert log.read_text().count("run") == 1


def test_the_switch_summary_says_what_ran_as_c(native_cache, monkeypatch):
    import json
    from p4switch.switch_cli import packet_code_line
    doc = json.loads((ROOT / "tests" / "bmv2" / "action_profiles" /
                      "action_profiles.json").read_text())
    monkeypatch.setenv("INAEMU_NATIVE", "1")
    line = packet_code_line(Switch(doc))
    assert line.startswith("packet code: C for parse, egress, deparse; Python for ingress: ")
    assert "action profile" in line
    monkeypatch.setenv("INAEMU_NATIVE", "0")
    assert packet_code_line(Switch(doc)) == "packet code: Python (INAEMU_NATIVE=0)"
    assert packet_code_line(None) is None


# ------------------------------------------------------------------ keyless tables' defaults
def _keyless_program() -> dict:
    """Four keyless tables in a row: a fixed default with data (action and data const), one
    with hit and miss next nodes (a keyless table always misses), one whose action is const
    but whose data the control plane may change, and one the control plane may change whole."""
    prog = Bmv2Program()
    prog.header_type("h_t", [("a", 16), ("o0", 16), ("o1", 16), ("o2", 16), ("o3", 16)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    sets = [prog.action(f"set{i}", [assign(fld("h", f"o{i}"), param(0))]
                        + ([assign(std("egress_spec"), const(1))] if i == 0 else []),
                        params=[("v", 16)]) for i in range(4)]
    wrong = prog.action("wrong", [assign(fld("h", "o1"), const(0xDEAD))])

    def const_default(table, entry_const=True):
        table["default_entry"].update(action_const=True, action_entry_const=entry_const)
        return table
    const_default(prog.table("t_fixed", actions=[sets[0]], default=(sets[0], [7]),
                             next_tables={"set0": "t_hit_miss"}))
    const_default(prog.table("t_hit_miss", actions=[sets[1]], default=(sets[1], [8]),
                             next_tables={"__HIT__": "t_wrong", "__MISS__": "t_data"}))
    prog.run("t_wrong", wrong)
    const_default(prog.table("t_data", actions=[sets[2]], default=(sets[2], [5]),
                             next_tables={"set2": "t_plain"}), entry_const=False)
    prog.table("t_plain", actions=[sets[3]], default=(sets[3], [3]))
    return prog.build()


def test_fixed_keyless_defaults_run_without_reading_the_table_as_python(native_cache,
                                                                        monkeypatch):
    """A keyless table whose action and data are const runs its action's body with that data
    in C, as the Python controls do (controlgen.py), without reading the table's default: a
    default changed behind the control plane's back reaches neither. Defaults the control
    plane may change are read on every packet, in both."""
    doc = _keyless_program()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    packet = bytes(10)
    for sw in (python, native):
        assert sw.receive(0, packet) == [(1, bytes.fromhex("0000" "0007" "0008" "0005" "0003"))]
        sw.table_set_default("t_data", "set2", [6])
        sw.table_set_default("t_plain", "set3", [9])
        for name in ("t_fixed", "t_hit_miss"):
            table = sw.program.tables[name]
            table.default[0] = (0, (99,), None)
    assert native.receive(0, packet) == python.receive(0, packet) == \
        [(1, bytes.fromhex("0000" "0007" "0008" "0006" "0009"))]


# ------------------------------------------------------------------ exact tables' answers
def test_every_change_to_an_exact_table_reaches_the_next_packet(native_cache, monkeypatch):
    """An exact table's answers are remembered between packets by the table's version: an
    entry added, modified, deleted, the table cleared, its default changed, and two switches
    of the same program with tables of their own, each reach the next packet as in Python."""
    prog = Bmv2Program()
    prog.header_type("h_t", [("k", 32), ("o", 16)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    mark = prog.action("mark", [assign(fld("h", "o"), param(0)),
                                assign(std("egress_spec"), const(1))], params=[("v", 16)])
    prog.table("t", keys=[("exact", ["h", "k"])], actions=[mark], default=(mark, [1]))
    doc = prog.build()
    pairs = [(_switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch))
             for _ in range(2)]
    key = 0x0A000102

    def packet(k: int) -> bytes:
        return k.to_bytes(4, "big") + bytes(2)

    def out(sw, k: int) -> int:
        (port, data), = sw.receive(0, packet(k))
        return int.from_bytes(data[4:6], "big")

    def both(change) -> list[int]:
        seen = []
        for python, native in pairs:
            for sw in (python, native):
                change(sw)
            for k in (key, key + 1, 7):
                assert out(native, k) == out(python, k), k
                seen.append(out(native, k))
        return seen

    handles = {}
    assert both(lambda sw: None)[:3] == [1, 1, 1]
    assert both(lambda sw: handles.__setitem__(
        id(sw), sw.table_add("t", [ExactKey(key)], "mark", (5,))))[:3] == [5, 1, 1]
    assert both(lambda sw: sw.table_modify("t", handles[id(sw)], "mark", (6,)))[:3] == [6, 1, 1]
    assert both(lambda sw: sw.table_add("t", [ExactKey(7)], "mark", (8,)))[:3] == [6, 1, 8]
    assert both(lambda sw: sw.table_delete("t", handles[id(sw)]))[:3] == [1, 1, 8]
    assert both(lambda sw: sw.table_set_default("t", "mark", (9,)))[:3] == [9, 9, 8]
    assert both(lambda sw: sw.table_clear("t"))[:3] == [9, 9, 9]
    # the second pair of switches changed nothing the first did not: it answers alike, and a
    # change to one switch's table reaches none of the other's packets
    pairs[0][0].table_add("t", [ExactKey(key + 1)], "mark", (11,))
    pairs[0][1].table_add("t", [ExactKey(key + 1)], "mark", (11,))
    assert out(pairs[0][1], key + 1) == out(pairs[0][0], key + 1) == 11
    assert out(pairs[1][1], key + 1) == out(pairs[1][0], key + 1) == 9


def _data_program() -> dict:
    """An exact table on h.k whose action `wide` copies its eight 64-bit data into o0..o7
    (more than the C decodes, `ANSWER_PARAMS`), and an LPM table on h.k whose action `one`
    copies its single datum into o8."""
    prog = Bmv2Program()
    outs = [(f"o{i}", 64) for i in range(9)]
    prog.header_type("h_t", [("k", 32)] + outs)
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    wide = prog.action("wide", [assign(fld("h", f"o{i}"), param(i)) for i in range(8)] +
                       [assign(std("egress_spec"), const(1))],
                       params=[(f"d{i}", 64) for i in range(8)])
    one = prog.action("one", [assign(fld("h", "o8"), param(0))], params=[("d", 64)])
    prog.table("t", keys=[("exact", ["h", "k"])], actions=[wide],
               default=(wide, [3] * 8), next_tables={"__HIT__": "r", "__MISS__": "r"})
    prog.table("r", keys=[("lpm", ["h", "k"])], actions=[one], default=(one, [4]))
    return prog.build()


def test_table_data_decoded_in_c_match_python(native_cache, monkeypatch):
    """A table's answer is remembered with its first data as C numbers (nativeprelude.py
    `table_answer`): data at the edges of CPython's int digits (up to 2**64 - 1, which the C
    does not decode and reads from the tuple), more data than it decodes, every entry answered
    again from the memo after all the others, and an LPM level's answer, give the Python
    controls' packets. An entry whose data are a list, changed in place between
    packets (no change to the dict), is followed too: such answers are not remembered."""
    doc = _data_program()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    edges = [0, 1, (1 << 30) - 1, 1 << 30, (1 << 60) - 1, 1 << 60, (1 << 63) + 5, M64]
    rng = random.Random(11)
    keys = list(range(1, 600)) + [0xFFFFFFFF]
    data = {k: [rng.choice(edges) if rng.random() < 0.7 else rng.getrandbits(64)
                for _ in range(8)] for k in keys}
    for sw in (python, native):
        for k in keys:
            sw.table_add("t", [ExactKey(k)], "wide", tuple(data[k]))
        sw.table_add("r", [LpmKey(0x100, 24)], "one", (M64,))
        sw.table_add("r", [LpmKey(0x100, 30)], "one", (1 << 60,))

    def packet(k: int) -> bytes:
        return k.to_bytes(4, "big") + bytes(8 * 9)

    def out(sw, k: int) -> list[int]:
        (port, raw), = sw.receive(0, packet(k))
        return [int.from_bytes(raw[4 + 8 * i: 12 + 8 * i], "big") for i in range(9)]

    # every key twice in turn (the second pass from the memo where the first left it), and
    # keys no entry has (misses, remembered too) in between
    for k in keys + [10 ** 6 + i for i in range(3)] + keys[::-1]:
        got = out(native, k)
        assert got == out(python, k), k
        if k in data:
            assert got[:8] == data[k], k
    assert out(native, 0x101)[8] == out(python, 0x101)[8] == 1 << 60
    assert out(native, 0x1FF)[8] == out(python, 0x1FF)[8] == M64
    # data as a list, written behind the control plane, then changed in place
    k = keys[0]
    for sw in (python, native):
        table = sw.program.tables["t"]
        action, _, entry = table.exact[k]
        table.exact[k] = (action, [7] * 8, entry)
    assert out(native, k)[:8] == out(python, k)[:8] == [7] * 8
    for sw in (python, native):
        sw.program.tables["t"].exact[k][1][2] = 99
    assert out(native, k)[:8] == out(python, k)[:8] == [7, 7, 99, 7, 7, 7, 7, 7]
