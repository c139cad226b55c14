"""Expressions (BMv2 width and sign rules) and action primitives, one small program each."""

from __future__ import annotations

import pytest

from p4switch.runtime import AssertionFailure, Switch

from .bmv2 import Bmv2Program, assign, const, eth_frame, ethernet_program, fld, op, param, prim, std

H = "h"


def _program(primitives, scalars=(), params=(), extra=None) -> Bmv2Program:
    """eth + h{a, b, r: 32 bits; s: int<32>}; one action running `primitives`, then port 1."""
    prog = ethernet_program()
    prog.header_type("h_t", [("a", 32), ("b", 32), ("r", 32), ("s", 32, True)])
    prog.header(H, "h_t")
    for name, width, signed in scalars:
        prog.scalar(name, width, signed)
    prog.state("start", [prog.extract("eth"), prog.extract(H)])
    if extra:
        extra(prog)
    act = prog.action("act", list(primitives) + [assign(std("egress_spec"), const(1))],
                      [(n, w) for n, w, _ in params])
    prog.table("t", actions=[act], default=(act, [p[2] for p in params]))
    return prog


def _frame(a=0, b=0, r=0, s=0) -> bytes:
    body = b"".join((x & 0xFFFFFFFF).to_bytes(4, "big") for x in (a, b, r, s))
    return eth_frame(ether_type=0x1234, payload=body)


def _fields(out: bytes) -> dict:
    vals = [int.from_bytes(out[14 + 4 * i:18 + 4 * i], "big") for i in range(4)]
    s = vals[3] - (1 << 32) if vals[3] >> 31 else vals[3]
    return {"a": vals[0], "b": vals[1], "r": vals[2], "s": s}


def _run(primitives, scalars=(), params=(), extra=None, **fields) -> dict:
    sw = Switch(_program(primitives, scalars, params, extra).build())
    [(port, out)] = sw.receive(0, _frame(**fields))
    assert port == 1
    return _fields(out)


A, B, R, S = fld(H, "a"), fld(H, "b"), fld(H, "r"), fld(H, "s")


@pytest.mark.parametrize("expr, a, b, want", [
    (op("+", A, B), 0xFFFFFFFF, 2, 1),                     # store truncates to 32 bits
    (op("-", A, B), 1, 2, 0xFFFFFFFF),
    (op("*", A, B), 0x10000, 0x10000, 0),
    (op("<<", A, const(4)), 0xF0000001, 0, 0x10),
    (op(">>", A, const(4)), 0xF0, 0, 0xF),
    (op("<<", A, op("&", B, const(0xFF))), 3, 0x104, 48),   # an 8-bit amount: a plain shift
    (op("<<", A, op("&", B, const(0xFF))), 1, 200, 0),
    (op(">>", A, op("&", B, const(0xFF))), 0x80000000, 0x11F, 1),
    (op("<<", A, B), 1, 0xFFFFFFFF, 0),                      # a 32-bit amount: the helper
    (op("&", op("~", None, A), const(0xFFFFFFFF)), 0x0F0F0F0F, 0, 0xF0F0F0F0),
    (op("^", A, B), 0xFF00, 0x0FF0, 0xF0F0),
    (op("|", A, B), 0xFF00, 0x0FF0, 0xFFF0),
    (op("usat_cast", op("+", A, B), const(32)), 0xFFFFFFF0, 0x100, 0xFFFFFFFF),
    (op("usat_cast", op("-", A, B), const(32)), 1, 5, 0),
    (op("two_comp_mod", op(">>", op("two_comp_mod", A, const(32)), const(4)), const(32)),
     0x80000010, 0, 0xF8000001),
    (op("?", A, B, op(">", op("two_comp_mod", A, const(32)), op("two_comp_mod", B, const(32)))),
     0xFFFFFFFE, 1, 1),                                    # signed compare: -2 < 1
    (op("?", A, B, op(">", A, B)), 0xFFFFFFFE, 1, 0xFFFFFFFE),  # unsigned compare
    (op("b2d", None, op("and", op("==", A, const(3)), op("!=", B, const(3)))), 3, 4, 1),
    (op("b2d", None, op("not", None, op("d2b", None, A))), 0, 0, 1),
    (op("sat_cast", op("+", op("two_comp_mod", A, const(8)), op("two_comp_mod", B, const(8))),
        const(8)), 100, 100, 127),
])
def test_expression_results(expr, a, b, want):
    assert _run([assign(R, expr)], a=a, b=b)["r"] == want


def test_signed_field_store_wraps_to_two_complement():
    out = _run([assign(S, op("+", S, const(1)))], s=0x7FFFFFFF)
    assert out["s"] == -(1 << 31)
    out = _run([assign(S, op("-", const(0), A))], a=5)
    assert out["s"] == -5


def test_action_data_and_jumps():
    # r = (a > p0) ? a : p0 written with _jump_if_zero / _jump, as p4c emits it
    prims = [prim("_jump_if_zero", op("b2d", None, op(">", A, param(0))), const(3)),
             assign(R, A), prim("_jump", const(4)), assign(R, param(0)), assign(B, R)]
    assert _run(prims, params=[("p0", 32, 50)], a=70)["b"] == 70
    assert _run(prims, params=[("p0", 32, 50)], a=20)["b"] == 50


def test_add_remove_and_assign_header():
    def two_headers(prog):
        prog.header("h2", "h_t")
    prims = [prim("add_header", {"type": "header", "value": "h2"}),
             prim("assign_header", {"type": "header", "value": "h2"},
                  {"type": "header", "value": H}),
             assign(fld("h2", "r"), const(0xABC)),
             prim("remove_header", {"type": "header", "value": H})]
    sw = Switch(_program(prims, extra=two_headers).build())
    [(_, out)] = sw.receive(0, _frame(a=1, b=2))
    assert _fields(out) == {"a": 1, "b": 2, "r": 0xABC, "s": 0}
    assert len(out) == 14 + 16   # h removed, h2 emitted in its place


def test_mark_to_drop_then_egress_spec_write_forwards():
    sw = Switch(_program([prim("mark_to_drop", {"type": "header", "value": "standard_metadata"})])
                .build())
    assert sw.receive(0, _frame())[0][0] == 1   # the action's final egress_spec write wins
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    drop = prog.action("drop", [prim("mark_to_drop", {"type": "header",
                                                      "value": "standard_metadata"})])
    prog.run("drop", drop)
    assert Switch(prog.build()).receive(0, eth_frame()) == []


def test_exit_stops_ingress_but_not_egress():
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    leave = prog.action("leave", [assign(std("egress_spec"), const(2)), prim("exit")])
    later = prog.action("later", [assign(std("egress_spec"), const(3))])
    mark = prog.action("mark", [assign(fld("eth", "type"), const(0xE0E0))])
    prog.run("leave", leave, next_node="later")
    prog.run("later", later)
    prog.run("mark", mark, pipeline="egress")
    assert Switch(prog.build()).receive(0, eth_frame()) == [(2, eth_frame(ether_type=0xE0E0))]


def test_registers_read_write_and_out_of_range():
    def reg(prog):
        prog.register("rg", 4, 16)
    rg = {"type": "register_array", "value": "rg"}
    prims = [prim("register_read", R, rg, A),
             prim("register_write", rg, A, op("+", R, B))]
    sw = Switch(_program(prims, extra=reg).build())
    sw.receive(0, _frame(a=2, b=0xFFFF))
    out = _fields(sw.receive(0, _frame(a=2, b=3))[0][1])
    assert out["r"] == 0xFFFF
    assert sw.register_read("rg", 2) == (0xFFFF + 3) & 0xFFFF
    out = _fields(sw.receive(0, _frame(a=9, b=3, r=5))[0][1])
    # out of range: the read leaves r alone and the write is ignored (as BMv2)
    assert out["r"] == 5 and sw.register_read_all("rg") == [0, 0, 2, 0]
    sw.register_write("rg", 0, 7)
    assert sw.register_read("rg", 0) == 7
    sw.register_reset("rg")
    assert sw.register_read_all("rg") == [0] * 4


def test_indexed_counter_counts_packets_and_bytes():
    def ctr(prog):
        prog.counter("ctr", 4)
    sw = Switch(_program([prim("count", {"type": "counter_array", "value": "ctr"}, A)],
                         extra=ctr).build())
    sw.receive(0, _frame(a=1))
    sw.receive(0, _frame(a=1))
    sw.receive(0, _frame(a=7))   # out of range: ignored
    assert sw.counter_read("ctr", 1) == (2, 2 * 30)
    sw.counter_reset("ctr")
    assert sw.counter_read("ctr", 1) == (0, 0)
    # 64 bits, wrapping as BMv2's (the C entry, or the Python one with INAEMU_NATIVE=0)
    sw.counter_write("ctr", 1, (1 << 64) - 1, (1 << 64) - 10)
    sw.receive(0, _frame(a=1))
    assert sw.counter_read("ctr", 1) == (0, 20)


def test_meter_colours_with_virtual_clock():
    def mtr(prog):
        prog.meter("m", 2, unit="packets")
    sw = Switch(_program([prim("execute_meter", {"type": "meter_array", "value": "m"},
                               const(0), R)], extra=mtr).build())
    now = [0.0]
    sw.clock = lambda: now[0]
    assert _fields(sw.receive(0, _frame())[0][1])["r"] == 0   # unconfigured: green
    # committed 1 packet per second (burst 1), peak 2 per second (burst 2)
    sw.meter_set_rates("m", 0, [(1e-6, 1), (2e-6, 2)])
    colours = [_fields(sw.receive(0, _frame())[0][1])["r"] for _ in range(3)]
    assert colours == [0, 1, 2]
    now[0] += 1.0
    assert _fields(sw.receive(0, _frame())[0][1])["r"] == 0


@pytest.mark.parametrize("algo, data, expected", [
    ("crc32", b"123456789", 0xCBF43926),
    ("crc16", b"123456789", 0xBB3D),
    ("csum16", bytes.fromhex("4500001c0000000040110000c0a80001c0a800c7"), 0xF8B8),
    ("identity", b"\x12\x34", 0x1234),
    ("xor16", b"\x12\x34\x00\xFF", 0x12CB),
])
def test_hash_algorithms_through_the_pipeline(algo, data, expected):
    nbits = len(data) * 8

    def calc(prog):
        prog.calculation("c", algo, [{"type": "hexstr", "value": "0x" + data.hex(),
                                      "bitwidth": nbits}])
    prims = [prim("modify_field_with_hash_based_offset", R, const(0),
                  {"type": "calculation", "value": "c"}, const(1 << 32))]
    assert _run(prims, extra=calc)["r"] == expected


def test_hash_over_fields_with_base_and_size():
    def calc(prog):
        prog.calculation("c", "crc16", [A, B])
    prims = [prim("modify_field_with_hash_based_offset", R, const(100),
                  {"type": "calculation", "value": "c"}, const(10))]
    out = _run(prims, extra=calc, a=0x01020304, b=0x05060708)
    from p4switch.runtime.state.hashes import standard_algorithms
    crc = standard_algorithms()["crc16"](bytes(range(1, 9)))
    assert out["r"] == 100 + crc % 10


def test_random_stays_in_range():
    prims = [prim("modify_field_rng_uniform", R, const(5), const(9))]
    sw = Switch(_program(prims).build())
    seen = {_fields(sw.receive(0, _frame())[0][1])["r"] for _ in range(200)}
    assert seen <= set(range(5, 10)) and len(seen) > 1


def test_truncate_shortens_the_output():
    sw = Switch(_program([prim("truncate", const(20))]).build())
    [(_, out)] = sw.receive(0, _frame(a=0x11223344))
    assert out == _frame(a=0x11223344)[:20]


def test_assert_failure_raises():
    sw = Switch(_program([prim("assert", op("==", A, const(0)))]).build())
    sw.receive(0, _frame(a=0))
    with pytest.raises(AssertionFailure):
        sw.receive(0, _frame(a=1))


def test_two_comp_mod_examples_from_the_spec():
    out = _run([assign(S, op("two_comp_mod", const(257), const(8)))])
    assert out["s"] == 1
    out = _run([assign(S, op("two_comp_mod", const(-129), const(8)))])
    assert out["s"] == 127


def test_metadata_program_without_headers():
    prog = Bmv2Program()
    prog.state("start")
    meta = prog.scalar("m", 8)
    act = prog.action("a", [assign(meta, const(0x1FF)),
                            assign(std("egress_spec"), meta)])
    prog.run("a", act)
    assert Switch(prog.build()).receive(0, b"x") == [(0xFF, b"x")]


def test_custom_crc_parameters_can_be_set_per_calculation():
    def calc(prog):
        prog.calculation("c", "crc16_custom", [{"type": "hexstr", "value": "0x313233343536373839",
                                                "bitwidth": 72}])
    prims = [prim("modify_field_with_hash_based_offset", R, const(0),
                  {"type": "calculation", "value": "c"}, const(1 << 16))]
    sw = Switch(_program(prims, extra=calc).build())
    assert _fields(sw.receive(0, _frame())[0][1])["r"] == 0xBB3D      # defaults: crc16
    assert sw.crc_calculations() == ["c"]
    sw.set_crc_parameters("c", 0x1021, 0xFFFF, 0, False, False)       # CRC-16/CCITT-FALSE
    assert _fields(sw.receive(0, _frame())[0][1])["r"] == 0x29B1


def test_legacy_primitives():
    prims = [prim("add", R, A, B), prim("bit_xor", S, A, B),
             prim("modify_field_with_shift", B, A, const(4), const(0xF0))]
    out = _run(prims, a=0x12345678, b=0x0000000F)
    assert out["r"] == 0x12345687 and out["s"] == 0x12345677
    assert out["b"] == (0x0F & ~0xF0) | ((0x12345678 >> 4) & 0xF0)


def test_register_index_reread_after_the_index_field_changes():
    def reg(prog):
        prog.register("rg", 8, 32)
    rg = {"type": "register_array", "value": "rg"}
    prims = [prim("register_write", rg, A, const(11)),
             assign(A, op("&", op("+", A, const(1)), const(0xFFFFFFFF))),
             prim("register_write", rg, A, const(22)),
             prim("register_read", R, rg, A)]
    sw = Switch(_program(prims, extra=reg).build())
    out = _fields(sw.receive(0, _frame(a=3))[0][1])
    assert sw.register_read_all("rg") == [0, 0, 0, 11, 22, 0, 0, 0]
    assert out["r"] == 22 and out["a"] == 4
    sw.receive(0, _frame(a=7))           # 7 in range, 8 is not: the second write is ignored
    assert sw.register_read("rg", 7) == 11


def test_many_registers_at_one_index_in_and_out_of_range():
    """Enough register calls on one index for the hoisted bounds check to kick in."""
    def regs(prog):
        for i in range(6):
            prog.register(f"rg{i}", 4, 32)
    prims = []
    for i in range(6):
        rg = {"type": "register_array", "value": f"rg{i}"}
        prims += [prim("register_read", R, rg, A),
                  assign(R, op("&", op("+", R, B), const(0xFFFFFFFF))),
                  prim("register_write", rg, A, R)]
    sw = Switch(_program(prims, extra=regs).build())
    source = sw.program.untraced.source
    assert source.count("< 4") == 1 and "else:" in source  # one check, body split on it
    sw.receive(0, _frame(a=1, b=5))
    out = _fields(sw.receive(0, _frame(a=1, b=5))[0][1])
    assert out["r"] == 10 and all(sw.register_read(f"rg{i}", 1) == 10 for i in range(6))
    out = _fields(sw.receive(0, _frame(a=4, b=5, r=70))[0][1])
    assert out["r"] == 70 + 6 * 5                          # reads skipped, the adds still run
    assert all(sw.register_read_all(f"rg{i}") == [0, 10, 0, 0] for i in range(6))
