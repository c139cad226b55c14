"""The untraced packet code's shortcuts give exactly what the plain code gives.

An untraced switch keeps rewritten fields in locals inside action bodies (`localize.py`) and runs
multicast replicas on the generated fast path; a traced switch runs the same program with
neither (every field access a PHV slot, the general replication flow). Each test runs both and
checks them against each other and against expectations computed here.
"""

from __future__ import annotations

import random

import pytest

from p4switch.runtime import PacketTrace, Switch
from p4switch.runtime.phv.writes import code_writes
from p4switch.runtime.pygen import fastpath
from p4switch.runtime.pygen.localize import localize_fields

from .bmv2 import Bmv2Program, assign, const, eth_frame, ethernet_program, fld, op, prim, std

MASK32 = 0xFFFFFFFF
LANES, CELLS = 8, 4
NORMAL, E2E, REPLICATION = 0, 2, 5


# ------------------------------------------------------------- register lanes, as in ina.p4
def _lane_program(kind: str) -> dict:
    """h{idx: 8, l0..l7: 32, out: 32}; per lane: lane = r_j[idx]; l_j = f(l_j, lane);
    r_j[idx] = l_j; then out = lane (the scratch field's last value), to port 1."""
    prog = ethernet_program()
    lanes = [(f"l{j}", 32) for j in range(LANES)]
    prog.header_type("h_t", [("idx", 8)] + lanes + [("out", 32)])
    prog.header("h", "h_t")
    lane = prog.scalar("lane", 32)
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    idx = fld("h", "idx")
    prims = []
    for j in range(LANES):
        reg = prog.register(f"r{j}", CELLS, 32)
        value = fld("h", f"l{j}")
        if kind == "add":
            new = op("&", op("+", value, lane), const(MASK32))
        else:
            new = op("?", lane, value, op(">", lane, value))
        prims += [prim("register_read", lane, reg, idx), assign(value, new),
                  prim("register_write", reg, idx, value)]
    prims += [assign(fld("h", "out"), lane), assign(std("egress_spec"), const(1))]
    prog.run("lanes", prog.action("lanes", prims))
    return prog.build()


def _lane_frame(idx: int, values: list[int]) -> bytes:
    body = bytes([idx]) + b"".join(x.to_bytes(4, "big") for x in values) + bytes(4)
    return eth_frame(ether_type=0x1234, payload=body)


def _lane_model(kind: str, regs: list[list[int]], idx: int, values: list[int]):
    """(values, out) that the action leaves in the packet; updates `regs`."""
    if not 0 <= idx < CELLS:  # out of range: reads leave `lane` alone, writes are ignored
        return values, 0
    lane = 0
    result = []
    for j, value in enumerate(values):
        lane = regs[j][idx]
        value = (value + lane) & MASK32 if kind == "add" else max(lane, value)
        regs[j][idx] = value
        result.append(value)
    return result, lane


@pytest.mark.parametrize("kind", ["add", "max"])
def test_register_lanes_match_the_plain_code_and_the_model(kind):
    program = _lane_program(kind)
    fast, plain = Switch(program), Switch(program, trace=PacketTrace())
    assert "_l" in fast.program.untraced.source       # the shortcut is really taken
    regs = [[0] * CELLS for _ in range(LANES)]
    rng = random.Random(7)
    edge = [0, 1, MASK32, MASK32 - 1, 1 << 31]
    for n in range(60):
        idx = rng.choice([0, 1, 2, 3, 3, 4, 255])      # 4 and 255 are out of range
        values = [rng.choice(edge + [rng.getrandbits(32)]) for _ in range(LANES)]
        frame = _lane_frame(idx, values)
        want_values, want_out = _lane_model(kind, regs, idx, values)
        [(port, got)] = fast.receive(0, frame)
        assert plain.receive(0, frame) == [(port, got)], f"packet {n}"
        assert port == 1
        body = got[14:]
        assert body[0] == idx
        assert [int.from_bytes(body[1 + 4 * j:5 + 4 * j], "big") for j in range(LANES)] \
            == want_values, f"packet {n}"
        assert int.from_bytes(body[1 + 4 * LANES:], "big") == want_out
    for j in range(LANES):
        assert fast.register_read_all(f"r{j}") == plain.register_read_all(f"r{j}") == regs[j]


def test_add_lanes_wrap_around_32_bits():
    sw = Switch(_lane_program("add"))
    sw.register_write("r0", 2, MASK32)
    sw.register_write("r7", 2, 5)
    [(_, out)] = sw.receive(0, _lane_frame(2, [3] + [0] * 6 + [MASK32 - 1]))
    assert out[15:19] == (2).to_bytes(4, "big")                  # 0xFFFFFFFF + 3
    assert out[15 + 28:19 + 28] == (3).to_bytes(4, "big")        # 5 + 0xFFFFFFFE
    assert sw.register_read("r0", 2) == 2 and sw.register_read("r7", 2) == 3


# ------------------------------------------------------------------ multicast replicas
def _replica_program(effects=("clone", "drop", "cut")) -> dict:
    """Egress writes instance type and rid into tag; replica rid 2 clones itself (E2E, session
    5 to port 9), rid 3 drops itself, rid 4 truncates itself to 15 bytes (those in `effects`)."""
    prog = ethernet_program()
    prog.header_type("tag_t", [("itype", 8), ("rid", 8)])
    prog.header("tag", "tag_t")
    prog.state("start", [prog.extract("eth"), prog.extract("tag")])
    prog.run("ing", prog.action("ing", [assign(std("mcast_grp"), const(1))]))
    rid, itype = std("egress_rid"), std("instance_type")
    egr = prog.action("egr", [assign(fld("tag", "itype"), itype), assign(fld("tag", "rid"), rid)])
    clone = prog.action("clone", [prim("clone_egress_pkt_to_egress", const(5))])
    drop = prog.action("drop", [prim("mark_to_drop", {"type": "header",
                                                      "value": "standard_metadata"})])
    cut = prog.action("cut", [prim("truncate", const(15))])
    chain = [name for name in ("clone", "drop", "cut") if name in effects]
    tests = {"clone": op("and", op("==", rid, const(2)), op("==", itype, const(REPLICATION))),
             "drop": op("==", rid, const(3)), "cut": op("==", rid, const(4))}
    actions = {"clone": clone, "drop": drop, "cut": cut}
    prog.run("egr", egr, next_node=f"is_{chain[0]}" if chain else None, pipeline="egress")
    for i, name in enumerate(chain):
        after = f"is_{chain[i + 1]}" if i + 1 < len(chain) else None
        prog.conditional(f"is_{name}", tests[name], name, after, pipeline="egress")
        prog.run(name, actions[name], next_node=after, pipeline="egress")
    return prog.build()


@pytest.fixture(params=["in place", "copies"])
def replica_mode(request, monkeypatch):
    """Replicas on the ingress PHV with restored slots, or on copies (forced here)."""
    if request.param == "copies":
        monkeypatch.setattr(fastpath, "MAX_RESTORED", -1)
    return request.param


def _replica_switches(replicas, effects=("clone", "drop", "cut")):
    program = _replica_program(effects)
    switches = [Switch(program), Switch(program, trace=PacketTrace())]
    for sw in switches:
        sw.mc_group_set(1, replicas)
        sw.mirroring_add(5, port=9)
    return switches


def _ports_and_tags(outputs):
    return [(port, len(out), out[14:16]) for port, out in outputs]


def test_replicas_that_diverge_in_egress_keep_the_general_order(replica_mode):
    fast, plain = _replica_switches([(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)])
    frame = eth_frame(ether_type=0x1234, payload=bytes([0xEE, 0xEE]) + bytes(10))
    got = fast.receive(0, frame)
    assert got == plain.receive(0, frame)
    assert _ports_and_tags(got) == [
        (1, 26, bytes([REPLICATION, 1])),
        (2, 26, bytes([REPLICATION, 2])),
        (4, 15, bytes([REPLICATION])),          # truncated: 14 + 1 bytes
        (5, 26, bytes([REPLICATION, 5])),
        (9, 26, bytes([E2E, 0])),               # the egress clone of rid 2 comes last
    ]


@pytest.mark.parametrize("replicas", [
    [(1, 1)], [(3, 3)], [(7, 0), (8, 0), (9, 1)], [(4, 4), (6, 6)], [(2, 2)],
    [(511, 0), (6, 0)], [(6, 3), (7, 3), (8, 2)],
])
def test_replica_sets_match_the_general_flow(replicas, replica_mode):
    fast, plain = _replica_switches(replicas)
    frame = eth_frame(ether_type=0x1234, payload=bytes(12))
    assert fast.receive(0, frame) == plain.receive(0, frame)
    assert fast.receive(0, frame) == plain.receive(0, frame)   # and the replica state is fresh


def test_replicas_dropped_in_egress_yield_nothing_on_the_common_path(replica_mode):
    fast, plain = _replica_switches([(1, 1), (3, 3), (5, 5), (6, 3)], effects=("drop",))
    source = fast._engine.fast.__globals__["multicast"].__code__.co_names
    assert "slow_after_replica" not in source              # a drop alone never hands over
    frame = eth_frame(ether_type=0x1234, payload=bytes(12))
    got = fast.receive(0, frame)
    assert got == plain.receive(0, frame)
    assert [(port, out[14:16]) for port, out in got] == [(1, bytes([REPLICATION, 1])),
                                                         (5, bytes([REPLICATION, 5]))]


def test_unicast_dropped_in_egress():
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    prog.run("ing", prog.action("ing", [assign(std("egress_spec"), const(4))]))
    drop = prog.action("drop", [prim("mark_to_drop", {"type": "header",
                                                      "value": "standard_metadata"})])
    prog.conditional("odd", op("==", fld("eth", "type"), const(0x1234)), "drop", None,
                     pipeline="egress")
    prog.run("drop", drop, pipeline="egress")
    prog.start("odd", pipeline="egress")
    sw = Switch(prog.build())
    assert sw.receive(0, eth_frame(ether_type=0x1234)) == []
    assert [port for port, _ in sw.receive(0, eth_frame(ether_type=0x1235))] == [4]


# ------------------------------------------------------------------- the rewrite itself
def test_localize_keeps_rewritten_fields_in_locals_and_writes_them_back_once():
    lines = ["f[7] = r1[i]", "f[10] = (f[10] + f[7]) & 255", "r1[i] = f[10]",
             "f[7] = r2[i]", "f[11] = (f[11] + f[7]) & 255", "r2[i] = f[11]"]
    assert localize_fields(lines) == [
        "r1[i] = _l10 = (f[10] + r1[i]) & 255",   # the first _l7 is used once: folded in
        "_l7 = r2[i]",                            # the last one is written back
        "r2[i] = _l11 = (f[11] + _l7) & 255",
        "f[7] = _l7", "f[10:12] = [_l10, _l11]"]


def test_localize_folds_only_pure_single_uses():
    lines = ["f[7] = g(1)", "f[8] = f[7]", "f[7] = 2", "f[8] = f[8] + f[7] + f[7]",
             "f[7] = 3", "f[9] = f[7]"]
    assert localize_fields(lines) == [
        "_l8 = _l7 = g(1)",          # a call is not moved, only chained
        "_l7 = 2", "_l8 = _l8 + _l7 + _l7",   # two uses: kept
        "f[9] = _l7 = 3", "f[7:9] = [_l7, _l8]"]


def test_localize_writes_back_before_any_barrier_and_leaves_it_alone():
    lines = ["f[3] = 1", "f[3] = f[3] + 1", "x = calc(f, v, b'')", "f[4] = f[3]",
             "if f[3]:", "    f[5] = 2", "    f[5] = f[5] * 2", "else:", "    return",
             "f[6] = 1", "f[6] += f[5]", "f[9] = f[6]"]
    assert localize_fields(lines) == [
        "_l3 = 1", "_l3 = _l3 + 1", "f[3] = _l3",
        "x = calc(f, v, b'')", "f[4] = f[3]",
        "if f[3]:", "    _l5 = 2", "    _l5 = _l5 * 2", "    f[5] = _l5",
        "else:", "    return",
        "_l6 = 1", "_l6 += f[5]", "f[9] = _l6", "f[6] = _l6"]


def test_localize_never_stores_into_a_prefetched_copy():
    """Regression (issue 10): lanes read as one slice (`_r10.. = f[10:18]`) and then each
    written once were stored into the prefetched locals, which are never written back, so a
    32-lane `r.read(t, i); t = t + h.d; r.write(i, t); h.d = t` action lost every `h.d = t`."""
    lanes = range(10, 18)
    lines = []
    for slot in lanes:
        lines += [f"f[5] = r{slot}[i]", f"f[5] = (f[5] + f[{slot}]) & 255",
                  f"r{slot}[i] = f[5]", f"f[{slot}] = f[5]"]
    out = localize_fields(list(lines))
    assert out[0].endswith(f"= f[10:18]")
    for slot in lanes:   # each lane's store reaches the PHV slot itself
        assert any(line.startswith(f"f[{slot}] = ") for line in out), slot
    f_plain, f_local = list(range(20)), list(range(20))
    for code, phv in ((lines, f_plain), (out, f_local)):
        env = {"f": phv, "i": 0, **{f"r{slot}": [slot * 3] for slot in lanes}}
        exec("\n".join(code), env)  # noqa: S102 - the test's own lines
    assert f_local == f_plain


def test_localize_leaves_computed_slots_and_single_writes_alone():
    lines = ["f[2] = 5", "f[8 + f[1]] = f[2]", "f[2] = 6", "f[4] = f[1]"]
    assert localize_fields(lines) == lines


# ------------------------------------------------- headers shared by multicast replicas
def test_write_sets_of_generated_code():
    src = "\n".join([
        "def egress(f, v):", "    f[3] = 1", "    f[10:10 + 3] = f[20:23]",
        "    reg_1[_t1] = _l4 = f[5]", "    f[9] = _l7 = 3", "    v[2] = 0",
        "    x = calcname_1(f, v, payload)", "    a, p, e = prof_3.resolve(tbl, r, f, v)",
        "    if f[3] == f[4]:", "        f[6] += 1", "    return n0_x(f, v)",
        "def n0_x(f, v):", "    f[30] = 1"])
    writes = code_writes(src)
    assert not writes.anything
    assert writes.fields == {3, 6, 9, 10, 11, 12, 30} and writes.valid == {2}
    for escaping in ["_stack_push(f, v, 1, 2, 3, 4, 5, 1)", "f[f[3]] = 1", "g = f",
                     "v[1:f[2]] = [0]", "helper(v)"]:
        assert code_writes(f"def egress(f, v):\n    {escaping}\n").anything, escaping


def _shared_header_program() -> dict:
    """eth, a (egress writes a.x from egress_rid), b (only read), c (egress sets it invalid
    for rid 2); every header is emitted; multicast group 1."""
    prog = ethernet_program()
    prog.header_type("w_t", [("x", 8), ("y", 16), ("z", 4), ("q", 4)])
    for name in ("a", "b", "c"):
        prog.header(name, "w_t")
    prog.state("start", [prog.extract("eth"), prog.extract("a"), prog.extract("b"),
                         prog.extract("c")])
    prog.run("ing", prog.action("ing", [assign(std("mcast_grp"), const(1)),
                                        assign(fld("b", "y"), const(0xBEEF))]))
    rid = std("egress_rid")
    egr = prog.action("egr", [assign(fld("a", "x"), rid),
                              assign(fld("eth", "type"), fld("b", "y"))])
    hide = prog.action("hide", [prim("remove_header", {"type": "header", "value": "c"})])
    prog.run("egr", egr, next_node="rid2", pipeline="egress")
    prog.conditional("rid2", op("==", rid, const(2)), "hide", None, pipeline="egress")
    prog.run("hide", hide, pipeline="egress")
    return prog.build()


def test_replicas_reuse_only_the_headers_nothing_after_ingress_changes(replica_mode):
    program = _shared_header_program()
    fast, plain = Switch(program), Switch(program, trace=PacketTrace())
    code = fast.program.untraced
    assert code.deparse_replica is not None and code.replica_memo_size == 1   # only b
    for sw in (fast, plain):
        sw.mc_group_set(1, [(1, 1), (2, 2), (3, 3)])
    frame = eth_frame(ether_type=0x1234, payload=bytes(range(1, 13)))
    got = fast.receive(0, frame)
    assert got == plain.receive(0, frame)
    b_bytes = bytes([5]) + b"\xbe\xef" + bytes([8])
    assert [(port, out[12:14], out[14], out[18:22], len(out)) for port, out in got] == [
        (1, b"\xbe\xef", 1, b_bytes, 26), (2, b"\xbe\xef", 2, b_bytes, 22),
        (3, b"\xbe\xef", 3, b_bytes, 26)]


def test_localize_fetches_long_stretches_of_read_slots_with_one_slice():
    lines = [f"r{j}[i] = f[{20 + j}]" for j in range(8)] + ["f[21] = 0", "x = f[21] + f[2]"]
    names = ", ".join(f"_r{20 + j}" for j in range(8))
    assert localize_fields(lines) == [f"{names}, = f[20:28]"] + \
        [f"r{j}[i] = _r{20 + j}" for j in range(8)] + \
        ["_l21 = 0", "x = _l21 + f[2]", "f[21] = _l21"]   # after its write, not the prefetch
    short = [f"r{j}[i] = f[{20 + j}]" for j in range(7)]
    assert localize_fields(short) == short
