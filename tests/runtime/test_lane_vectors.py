"""Lane groups as numpy code (runtime/pygen/lanes.py, regbanks.py, vheaders.py) against scalar code.

Every test builds the same program twice, vectorised (the default) and with `lanes.ENABLED`
off (the plain per-lane statements), feeds both the same packets and compares outputs and all
register state. Programs: ina.p4 on both JSONs (inaemu's; p4c's when /opt/p4ref is there) and
small synthetic programs with parallel registers that are not ina.p4, including near misses
that must stay scalar.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, Switch
from p4switch.runtime.pygen import lanes
from p4switch.runtime.state.regbanks import BankColumn
from tests.ina.packets import (CONTRIB, MAX_CONTRIB, QUERY, Endpoint, ina_packet, ip)

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, prim, std
from .bmv2_agreement import assert_agrees_with_simple_switch

ROOT = Path(__file__).resolve().parents[2]
P4C = Path("/opt/p4ref/bin/p4c-bm2-ss")
EDGE32 = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]


def both(program: dict) -> tuple[Switch, Switch]:
    """(vectorised switch, scalar switch) of one program."""
    fast = Switch(program)
    lanes.ENABLED = False
    try:
        plain = Switch(program)
    finally:
        lanes.ENABLED = True
    assert "bank_" not in plain.program.untraced.source
    return fast, plain


def same_state(fast: Switch, plain: Switch) -> None:
    for name in plain.registers():
        assert fast.register_read_all(name) == plain.register_read_all(name), name


# ------------------------------------------------------------------------------- ina.p4
K, N, JOB, FAR = 32, 3, 1, 2
AGG = Endpoint(0x000000000100, ip("10.0.0.254"))
HOSTS = [Endpoint(0x080000000000 | (w + 1), ip(f"10.0.{w + 1}.1")) for w in range(4)]


def _configure(sw: Switch) -> None:
    sw.table_add("ina_aggregator_addresses", [ExactKey(AGG.addr)], "ina_aggregate_here")
    # job FAR's cells start near the end of the pool: some slots index past it (BMv2 ignores
    # those register accesses; the vector code takes its out-of-range branch)
    for job, base in ((JOB, 0), (FAR, 2048 - 6)):
        sw.table_add("ina_jobs", [ExactKey(AGG.addr), ExactKey(job)], "ina_root_job",
                     (base, 8, N, job, N))
        for w in range(N):
            sw.table_add("ina_workers", [ExactKey(job), ExactKey(w)], "ina_worker_port", (w + 1,))
            sw.table_add("ina_result_addresses", [ExactKey(job), ExactKey(w)],
                         "ina_address_result", (HOSTS[w].mac, HOSTS[w].addr))
        sw.mc_group_set(job, [(w + 1, w) for w in range(N)])


def _ina_packets(count: int, seed: int) -> list[tuple[int, bytes]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        w = rng.choice([0, 1, 2, 2, 3])          # worker 3 is not in the job
        kind = rng.choice([CONTRIB] * 6 + [MAX_CONTRIB] * 3 + [QUERY])
        values = [rng.choice(EDGE32 + [rng.getrandbits(32)]) for _ in range(K)]
        out.append((w + 1, ina_packet(HOSTS[w], AGG, kind=kind, job=rng.choice([JOB, FAR]),
                                      worker=w, slot=rng.randrange(9), ver=rng.randrange(2),
                                      retx=rng.random() < 0.2, values=values)))
    return out


def _run_ina(program: dict, seed: int) -> Switch:
    fast, plain = both(program)
    for sw in (fast, plain):
        _configure(sw)
    source = fast.program.untraced.source
    assert "bank_" in source and "_vh" in source            # banks and a vector header
    outputs = 0
    for n, (port, data) in enumerate(_ina_packets(500, seed)):
        got = fast.receive(port, data)
        assert got == plain.receive(port, data), f"packet {n}"
        outputs += len(got)
    assert outputs > 100                                     # results really went out
    same_state(fast, plain)
    return fast


def test_ina_own_json_vector_equals_scalar():
    build = compile_file(str(ROOT / "p4src" / "ina.p4"), defines={"INA_K": str(K)})
    fast = _run_ina(build.bmv2, seed=1)
    assert isinstance(fast.program.registers["MyIngress.ina_value_0"].cells, BankColumn)


@pytest.mark.skipif(not P4C.exists(), reason="needs real p4c (/opt/p4ref)")
def test_ina_p4c_json_vector_equals_scalar():
    from p4switch.reference import compile_p4, find_toolchain
    result = compile_p4(find_toolchain(), ROOT / "p4src" / "ina.p4",
                        defines={"INA_K": str(K)}, p4runtime=False)
    assert result.ok, result.stderr
    fast = _run_ina(json.loads(result.json_path.read_text()), seed=2)
    # p4c writes `?:` in an action as jumps: the max lanes become one select
    assert "_np_where" in fast.program.untraced.source


# -------------------------------------------------------------------- synthetic programs
L, CELLS = 16, 4


def _program(lane_prims, width: int = 32, signed: bool = False, lanes_n: int = L,
             reg_width: int | None = None, scratch_width: int = 32) -> dict:
    """h{idx: 8, a0..: width, b0..: width, out: 32} and registers r0..; `lane_prims(j, ...)`
    gives lane j's primitives; then out = scratch, to port 1."""
    prog = ethernet_program()
    fields = [(f"a{j}", width, signed) for j in range(lanes_n)] + \
        [(f"b{j}", width, signed) for j in range(lanes_n)]
    prog.header_type("h_t", [("idx", 8)] + fields + [("out", 32)])
    prog.header("h", "h_t")
    scratch = prog.scalar("t", scratch_width)
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    prims = []
    regs = [prog.register(f"r{j}", CELLS, reg_width or width) for j in range(lanes_n)]
    for j in range(lanes_n):
        prims += lane_prims(j, regs, scratch, fld("h", "idx"))
    prims += [assign(fld("h", "out"), scratch), assign(std("egress_spec"), const(1))]
    prog.run("lanes", prog.action("lanes", prims))
    return prog.build()


def _frames(seed: int, count: int, width: int = 32, lanes_n: int = L) -> list[bytes]:
    rng = random.Random(seed)
    top = (1 << width) - 1
    edge = [0, 1, top, top - 1, 1 << (width - 1), (1 << (width - 1)) - 1]
    frames = []
    for _ in range(count):
        idx = rng.choice([0, 1, 2, 3, 3, 4, 200])              # 4 and 200: out of range
        values = [rng.choice(edge + [rng.getrandbits(width)]) for _ in range(2 * lanes_n)]
        body = bytes([idx]) + b"".join(v.to_bytes(width // 8, "big") for v in values)
        frames.append(eth_frame(ether_type=0x1234, payload=body + bytes(4)))
    return frames


def _compare(program: dict, vectorised: bool, seed: int = 3, width: int = 32,
             lanes_n: int = L) -> tuple[Switch, list]:
    fast, plain = both(program)
    assert ("bank_" in fast.program.untraced.source or "_vv" in fast.program.untraced.source) \
        == vectorised
    outs = []
    for n, frame in enumerate(_frames(seed, 150, width, lanes_n)):
        got = fast.receive(0, frame)
        assert got == plain.receive(0, frame), f"packet {n}"
        outs.append(got)
    same_state(fast, plain)
    return fast, outs


def ex(expression: dict) -> dict:
    """An expression as a primitive's parameter (p4c wraps it once more; BMv2 needs that)."""
    return {"type": "expression", "value": expression}


def _sub_xor(j, regs, t, idx):
    """t = r_j[idx]; b_j = (t - a_j) mod 2^32; r_j[idx] = a_j ^ t; a_j = b_j"""
    a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
    return [prim("register_read", t, regs[j], idx),
            assign(b, ex(op("&", op("-", t, a), const(0xFFFFFFFF)))),
            prim("register_write", regs[j], idx, ex(op("^", a, t))),
            assign(a, b)]


def test_parallel_registers_not_ina():
    fast, _ = _compare(_program(_sub_xor), True)
    assert "_vh" in fast.program.untraced.source     # a0..a15 and b0..b15: vector runs


def test_ternary_select_and_clear_and_copies():
    """b_j = a_j > r_j ? a_j : 7; r_j = 0 (clear); a_j = b_j (header to header)."""
    def lane(j, regs, t, idx):
        a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(b, op("?", a, const(7), op(">", a, t))),
                prim("register_write", regs[j], idx, const(0)),
                assign(a, b)]
    _compare(_program(lane), True)


def _diamond_lane(j, regs, t, idx):
    """p4c's shape of `a = t > a ? t : a`: _jump_if_zero / assign / _jump / assign."""
    base = j * 7
    a = fld("h", f"a{j}")
    tmp = fld("scalars", "m")
    return [prim("register_read", t, regs[j], idx),
            prim("_jump_if_zero", ex(op("b2d", None, op(">", t, a))), const(base + 4)),
            assign(tmp, t),
            prim("_jump", const(base + 5)),
            assign(tmp, a),
            assign(a, tmp),
            prim("register_write", regs[j], idx, a)]


def _diamond_program() -> dict:
    program = _program(_diamond_lane)
    _add_scalar(program, "m", 32)
    return program


def test_jump_diamond_like_p4c():
    fast, _ = _compare(_diamond_program(), True)
    assert "_np_where" in fast.program.untraced.source


def _add_scalar(program: dict, name: str, width: int) -> None:
    scalars = next(h for h in program["headers"] if h["name"] == "scalars")
    htype = next(t for t in program["header_types"] if t["name"] == scalars["header_type"])
    htype["fields"].append([name, width, False])


def test_wrap_around_8_bit_lanes_and_registers():
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, op("&", op("+", a, t), const(0xFF))),
                prim("register_write", regs[j], idx, a)]
    fast, outs = _compare(_program(lane, width=8, scratch_width=8), True, width=8)
    fast.register_write("r3", 1, 0xFF)
    frame = eth_frame(ether_type=0x1234, payload=bytes([1]) + bytes([0] * 3 + [2] + [0] * 28)
                      + bytes(4))
    [(_, out)] = fast.receive(0, frame)
    assert out[15 + 3] == 1                                    # 0xFF + 2 wraps to 1
    assert fast.register_read("r3", 1) == 1


def test_signed_lanes_wrap_two_complement():
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, op("two_comp_mod", op("+", a, t), const(16)))]
    _compare(_program(lane, width=16, signed=True, reg_width=16, scratch_width=16), True,
             width=16)


def test_near_miss_cross_lane_stays_scalar():
    """Lane j reads lane j+1's field: copies are not independent, no vector code."""
    def lane(j, regs, t, idx):
        nxt = fld("h", f"a{(j + 1) % L}")
        return [prim("register_read", t, regs[j], idx),
                assign(fld("h", f"a{j}"), op("&", op("+", nxt, t), const(0xFFFFFFFF)))]
    _compare(_program(lane), False)


def test_near_miss_accumulator_stays_scalar():
    """t = t + a_j: the scratch field carries a value from lane to lane."""
    def lane(j, regs, t, idx):
        return [assign(t, op("&", op("+", t, fld("h", f"a{j}")), const(0xFFFFFFFF))),
                prim("register_write", regs[j], idx, t)]
    _compare(_program(lane), False)


def test_near_miss_one_register_in_every_lane_stays_scalar():
    def lane(j, regs, t, idx):
        return [prim("register_write", regs[0], idx, fld("h", f"a{j}"))]
    _compare(_program(lane), False)


def test_register_api_sees_banked_cells():
    fast, _ = both(_program(_sub_xor))
    assert isinstance(fast.program.registers["r5"].cells, BankColumn)
    fast.register_write("r5", 2, 0xDEADBEEF)
    assert fast.register_read("r5", 2) == 0xDEADBEEF
    assert fast.register_read_all("r5") == [0, 0, 0xDEADBEEF, 0]
    body = bytes([2]) + b"".join((j + 1).to_bytes(4, "big") for j in range(2 * L)) + bytes(4)
    [(_, out)] = fast.receive(0, eth_frame(ether_type=0x1234, payload=body))
    assert fast.register_read("r5", 2) == 6 ^ 0xDEADBEEF       # a5 ^ old cell
    assert int.from_bytes(out[15 + 20:15 + 24], "big") == (0xDEADBEEF - 6) & 0xFFFFFFFF
    fast.register_reset("r5")
    assert fast.register_read_all("r5") == [0] * CELLS
    assert fast.register_read("r4", 2) == 5                    # the other columns stay


def test_stores_truncate_without_explicit_masks():
    """BMv2 truncates on every store: a + t into a 32-bit field, 3 * a into a 16-bit
    register, a - t into a signed 16-bit field (no `&`, no two_comp_mod in the JSON)."""
    def lane(j, regs, t, idx):
        a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, op("+", a, t)),
                prim("register_write", regs[j], idx, op("*", a, const(3))),
                assign(b, op("-", b, t))]
    fast, _ = _compare(_program(lane, reg_width=16), True)
    assert all(0 <= x < 1 << 16 for x in fast.register_read_all("r0"))

    def signed_lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx), assign(a, op("-", a, t)),
                prim("register_write", regs[j], idx, op("+", a, const(40000)))]
    _compare(_program(signed_lane, width=16, signed=True, reg_width=16, scratch_width=16),
             True, width=16)


# ------------------------------------------------------------------ P4Runtime on banked cells
def test_p4runtime_reads_and_writes_banked_lane_registers(tmp_path):
    """A controller reading and writing ina.p4's lane registers over P4Runtime sees and sets
    the cells the vector code works on."""
    from controller.client import SwitchClient
    from p4switch.server import P4RuntimeServer
    build = compile_file(str(ROOT / "p4src" / "ina.p4"), defines={"INA_K": str(K)})
    (tmp_path / "ina.p4info.txtpb").write_text(build.p4info_text())
    (tmp_path / "ina.json").write_text(json.dumps(build.bmv2))
    switch = Switch(None)
    server = P4RuntimeServer(switch, device_id=1, cpu_port=None, address="127.0.0.1:0",
                             packet_out=lambda data: None)
    server.start()
    try:
        with SwitchClient("s1", f"127.0.0.1:{server.bound_port}", 1, timeout=10) as client:
            client.set_pipeline_files(tmp_path / "ina.p4info.txtpb", tmp_path / "ina.json")
            with switch.lock:
                _configure(switch)
                assert "bank_" in switch.program.untraced.source
                rng = random.Random(5)
                vectors = [[rng.getrandbits(32) for _ in range(K)] for _ in range(N)]
                for w in range(2):
                    assert switch.receive(w + 1, ina_packet(
                        HOSTS[w], AGG, kind=CONTRIB, job=JOB, worker=w, slot=1,
                        values=vectors[w])) == []
            cells = client.read_register("ina_value_5")
            [(cell, value)] = [(c, x) for c, x in cells.items() if x]
            assert value == (vectors[0][5] + vectors[1][5]) & 0xFFFFFFFF
            client.write_register("ina_value_5", cell, 0xFFFFFFF0)
            assert client.read_register("ina_value_5", cell) == {cell: 0xFFFFFFF0}
            with switch.lock:
                out = switch.receive(3, ina_packet(HOSTS[2], AGG, kind=CONTRIB, job=JOB,
                                                   worker=2, slot=1, values=vectors[2]))
            assert len(out) == N
            lane5 = out[0][1][58 + 4 * 5:58 + 4 * 6]
            assert int.from_bytes(lane5, "big") == (0xFFFFFFF0 + vectors[2][5]) & 0xFFFFFFFF
    finally:
        server.stop(grace=0)


# ------------------------------------------------------------------------- against BMv2
def _stores_lane(j, regs, t, idx):
    a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
    return [prim("register_read", t, regs[j], idx), assign(a, ex(op("+", a, t))),
            prim("register_write", regs[j], idx, ex(op("*", a, const(3)))),
            assign(b, ex(op("-", b, t)))]


@pytest.mark.skipif(not Path("/opt/p4ref/bin/simple_switch").exists(),
                    reason="needs real simple_switch (/opt/p4ref)")
@pytest.mark.parametrize("lane", [_sub_xor, _stores_lane, _diamond_lane],
                         ids=["sub_xor", "stores", "diamond"])
def test_vector_code_agrees_with_simple_switch(lane, tmp_path):
    program = _diamond_program() if lane is _diamond_lane else \
        _program(lane, reg_width=16 if lane is _stores_lane else None)
    fast = Switch(program)
    assert "bank_" in fast.program.untraced.source
    frames = _frames(11, 24)
    assert_agrees_with_simple_switch(program, fast, frames, tmp_path)


def test_scratch_from_a_zeroed_vector_run():
    """setValid on an invalid header stores the int 0 for its vector run; a lane group that
    copies those lanes into a scratch field must still leave the last lane's value (0) there
    (raised TypeError before: int(0[-1]))."""
    prog = ethernet_program()
    prog.header_type("h_t", [(f"a{j}", 32) for j in range(L)] + [("out", 32)])
    prog.header("h", "h_t")
    t = prog.scalar("t", 32)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1234, None, "parse_h"), (None, None, None)])
    prog.state("parse_h", [prog.extract("h")])
    regs = [prog.register(f"r{j}", CELLS, 32) for j in range(L)]
    prims = [prim("add_header", {"type": "header", "value": "h"})]
    for j in range(L):
        prims += [assign(t, fld("h", f"a{j}")), prim("register_write", regs[j], const(1), t)]
    prims += [assign(fld("h", "out"), t), assign(std("egress_spec"), const(1))]
    prog.run("lanes", prog.action("lanes", prims))
    fast, plain = both(prog.build())
    assert "_vh" in fast.program.untraced.source
    for frame in (eth_frame(ether_type=0x0800, payload=bytes(20)),
                  eth_frame(ether_type=0x1234, payload=bytes(range(4 * L)) + bytes(4))):
        assert fast.receive(0, frame) == plain.receive(0, frame)
    same_state(fast, plain)


def test_select_between_two_zeroed_vector_runs():
    """Both runs of a select are the int 0 (setValid on an invalid header): numpy gives a 0-d
    array, which must still deparse as k lanes and leave the scratch field 0."""
    prog = ethernet_program()
    prog.header_type("h_t", [(f"a{j}", 32) for j in range(L)] +
                     [(f"b{j}", 32) for j in range(L)] + [("out", 32)])
    prog.header("h", "h_t")
    t = prog.scalar("t", 32)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1234, None, "parse_h"), (None, None, None)])
    prog.state("parse_h", [prog.extract("h")])
    prims = [prim("add_header", {"type": "header", "value": "h"})]
    for j in range(L):
        a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
        prims += [assign(t, ex(op("?", a, b, op(">", a, b)))), assign(a, t)]
    prims += [assign(fld("h", "out"), t), assign(std("egress_spec"), const(1))]
    prog.run("lanes", prog.action("lanes", prims))
    fast, plain = both(prog.build())
    assert "_vh" in fast.program.untraced.source
    for frame in (eth_frame(ether_type=0x0800, payload=bytes(20)),
                  eth_frame(ether_type=0x1234, payload=bytes(range(8 * L)) + bytes(4))):
        assert fast.receive(0, frame) == plain.receive(0, frame)


@pytest.mark.parametrize("attach", [True, False], ids=["attach-trace", "detach-trace"])
def test_queued_packets_survive_a_trace_switch(attach):
    """Packets waiting in an egress queue keep their vector runs right when a trace is
    attached (the traced code wants k ints) or detached (arrays again)."""
    from p4switch.runtime import PacketTrace
    switches = both(_program(_sub_xor))
    outs = []
    for sw in switches:
        now = [0.0]
        sw.clock = lambda: now[0]
        if not attach:
            sw.trace = PacketTrace()
        sw.set_queue_rate(1, 1)
        got = [sw.receive(0, frame) for frame in _frames(21, 4)]
        assert sw.queues.waiting == 3
        sw.trace = PacketTrace() if attach else None
        now[0] = 10.0
        outs.append((got, sw.release_queued()))
    assert outs[0] == outs[1] and len(outs[0][1]) == 3
