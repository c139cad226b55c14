"""The common packet flow as one C call (cgen/nativefast.py, `Engine.entry`) must give what
the generated Python `fast` gives (`Engine.fast`), packet by packet: the same copies out, in
the same order, and the same state left behind, for every way a packet leaves the common path
(a clone or resubmission after ingress, a multicast group, a drop in ingress or egress, a
truncation, recirculation or clone in egress, a length egress reads). Two switches of each
program, one running the C entry and one the Python `fast`, get the same packets."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import LpmKey, Switch
from p4switch.runtime.cgen import nativefast
from p4switch.runtime.phv.layout import word_slots

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, hdr, op, prim, std

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_ina_switch as ina_bench  # noqa: E402

NORMAL = 0
KINDS = {1: "unicast", 2: "ingress clone", 3: "resubmit", 4: "multicast", 5: "ingress drop",
         6: "egress truncate", 7: "egress drop", 8: "recirculate", 9: "egress clone",
         10: "a header added"}


@pytest.fixture
def native_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    monkeypatch.setenv("INAEMU_NATIVE", "1")


def _chain(prog, steps, pipeline: str) -> None:
    """For each (name, test, action) in turn: if the test holds, the action; on to the next
    step either way (the first test is `is_<first name>`)."""
    names = [f"is_{name}" for name, _, _ in steps]
    for i, (name, test, aid) in enumerate(steps):
        after = names[i + 1] if i + 1 < len(steps) else None
        prog.conditional(names[i], test, name, after, pipeline=pipeline)
        prog.run(name, aid, next_node=after, pipeline=pipeline)


def _divergence_program() -> dict:
    """eth + tag{kind, itype, rid: 8, len: 16}: ingress sends to port 2 and then, by kind,
    clones, resubmits, multicasts, drops or adds a header; egress writes what it sees (instance type, rid,
    packet_length) into the tag and then, by kind, truncates, drops, recirculates or clones."""
    prog = ethernet_program()
    prog.header_type("tag_t", [("kind", 8), ("itype", 8), ("rid", 8), ("len", 16)])
    prog.header("tag", "tag_t")
    prog.header_type("extra_t", [("pad", 16)])
    prog.header("extra", "extra_t")             # made valid by ingress: a longer packet
    prog.scalar("keep", 8)
    prog.field_list(1, [("scalars", "keep")])
    prog.state("start", [prog.extract("eth"), prog.extract("tag")])
    kind, itype = fld("tag", "kind"), std("instance_type")

    def when(k: int, first_pass: bool = False):
        test = op("==", kind, const(k))
        return op("and", test, op("==", itype, const(NORMAL))) if first_pass else test

    ing = prog.action("ing", [assign(std("egress_spec"), const(2)),
                              assign(fld("scalars", "keep"), const(7))])
    steps = [("clone_in", when(2), prog.action("clone_in", [
                 prim("clone_ingress_pkt_to_egress", const(5))])),
             ("again", when(3, True), prog.action("again", [prim("resubmit", const(1))])),
             ("group", when(4), prog.action("group", [assign(std("mcast_grp"), const(1))])),
             ("drop_in", when(5), prog.action("drop_in", [
                 prim("mark_to_drop", {"type": "header", "value": "standard_metadata"})])),
             ("grow", when(10), prog.action("grow", [
                 prim("add_header", {"type": "header", "value": "extra"})]))]
    prog.run("ing", ing, next_node="is_clone_in")
    _chain(prog, steps, "ingress")
    prog.start("ing")
    egr = prog.action("egr", [assign(fld("tag", "itype"), itype),
                              assign(fld("tag", "rid"), std("egress_rid")),
                              assign(fld("tag", "len"), op("&", std("packet_length"),
                                                           const(0xFFFF)))])
    steps = [("cut", when(6), prog.action("cut", [prim("truncate", const(15))])),
             ("drop_out", when(7), prog.action("drop_out", [
                 prim("mark_to_drop", {"type": "header", "value": "standard_metadata"})])),
             ("loop", when(8, True), prog.action("loop", [prim("recirculate", const(1))])),
             ("clone_out", when(9, True), prog.action("clone_out", [
                 prim("clone_egress_pkt_to_egress", const(5))]))]
    prog.run("egr", egr, next_node="is_cut", pipeline="egress")
    _chain(prog, steps, "egress")
    prog.start("egr", pipeline="egress")
    return prog.build()


def _pair(make) -> tuple[Switch, Switch]:
    """(a switch whose packets run the C entry, one whose packets run the Python `fast`)."""
    in_c, in_python = make(), make()
    engine = in_c._engine
    assert engine.entry is not engine.fast, "the program has no C fast path"
    assert in_c.program.untraced.native_in_use == ("parse", "ingress", "egress", "deparse")
    in_python._engine.entry = in_python._engine.fast
    return in_c, in_python


def _same(in_c: Switch, in_python: Switch, packets) -> list:
    outs = []
    for i, (port, frame) in enumerate(packets):
        got, want = in_c.receive(port, frame), in_python.receive(port, frame)
        assert got == want, f"packet {i}: {frame.hex()}"
        outs.append(got)
    assert in_c._engine.packet_count == in_python._engine.packet_count
    return outs


def test_every_divergence_leaves_as_from_the_python_fast_path(native_cache):
    program = _divergence_program()

    def make():
        sw = Switch(program)
        sw.mc_group_set(1, [(3, 1), (4, 2), (5, 3)])
        sw.mirroring_add(5, port=9)
        return sw

    in_c, in_python = _pair(make)
    rng = random.Random(5)
    packets = []
    for i in range(400):
        kind = rng.choice(list(KINDS) + [0, 11])
        body = bytes([kind, 0, 0, 0, 0]) + bytes(rng.randrange(0, 40))
        packets.append((rng.randrange(0, 8), eth_frame(ether_type=0x1234, payload=body)))
    outs = _same(in_c, in_python, packets)
    # each kind of packet did what it is for: the test reaches every branch
    by_kind: dict[int, set] = {}
    for (_, frame), out in zip(packets, outs):
        by_kind.setdefault(frame[14], set()).add(tuple(port for port, _ in out))
    assert by_kind[1] == {(2,)} and by_kind[5] == {()} and by_kind[7] == {()}
    assert by_kind[2] == {(9, 2)} and by_kind[4] == {(3, 4, 5)} and by_kind[9] == {(2, 9)}
    assert all(len(out[0][1]) == 15 for (_, f), out in zip(packets, outs) if f[14] == 6)
    # egress saw the length after ingress: the frame's, or 2 more with the added header
    grown = [(f, out) for (_, f), out in zip(packets, outs) if f[14] == 10]
    assert grown and all(int.from_bytes(out[0][1][17:19], "big") == len(f) + 2 ==
                         len(out[0][1]) for f, out in grown)


def test_the_c_multicast_follows_its_group_as_it_changes(native_cache):
    """The C takes a group's copies from the replication's cache of them: a group changed,
    emptied or deleted between packets is what the next packet is copied to."""
    program = _divergence_program()
    in_c, in_python = _pair(lambda: Switch(program))
    frame = eth_frame(ether_type=0x1234, payload=bytes([4, 0, 0, 0, 0]) + bytes(10))
    assert _same(in_c, in_python, [(0, frame)]) == [[]]         # no group 1 yet: no copy
    for members in ([(3, 1), (4, 2)], [(5, 1)], [(6, 1), (3, 2), (7, 3)], []):
        for sw in (in_c, in_python):
            sw.mc_group_set(1, members)
        outs = _same(in_c, in_python, [(0, frame)] * 2)
        assert [tuple(p for p, _ in out) for out in outs] == \
            [tuple(port for port, _ in members)] * 2
    for sw in (in_c, in_python):
        sw.mc_group_delete(1)
    assert _same(in_c, in_python, [(0, frame)]) == [[]]


def test_l3_forward_routes_floods_and_drops_as_the_python_fast_path(native_cache):
    program = compile_file(str(ROOT / "p4src" / "l3_forward.p4")).bmv2

    def make():
        sw = Switch(program)
        for prefix, length, port in ((0x0A000100, 24, 1), (0x0A000200, 24, 2),
                                     (0x0A000280, 25, 3), (0x0A000000, 8, 4)):
            sw.table_add("ipv4_lpm", [LpmKey(prefix, length)], "ipv4_forward",
                         (0x0800_0000_0000 | port, port))
        sw.mc_group_set(1, [(1, 0), (2, 0), (3, 0)])
        from p4switch.runtime import ExactKey
        sw.table_add("arp_flood", [ExactKey(1)], "flood", (1,))
        return sw

    in_c, in_python = _pair(make)
    frames = [bytes.fromhex(h.replace(" ", "")) for h in (
        "000000000100 000000000011 0800 4500001800010000401163D20A0001010A000202 DEADBEEF",
        "000000000100 000000000011 0800 45000018000100004011630C0A0001010A0002C8 DEADBEEF",
        "000000000100 000000000011 0800 45000018000100004011AE2A0A000101C0A80101 DEADBEEF",
        "000000000100 000000000011 0800 45000018000100000111A2D20A0001010A000202 DEADBEEF",
        "000000000100 000000000011 0800 450000180001000040119CD20A0001010A000202 DEADBEEF",
        "FFFFFFFFFFFF 000000000011 0806 0001080006040001 000000000011 0A000101 000000000000"
        " 0A000202")]
    outs = _same(in_c, in_python, [(1 + (i // 6) % 3, frames[i % len(frames)])
                                         for i in range(120)])
    assert {len(out) for out in outs} >= {0, 1, 2}       # dropped, routed and flooded
    for name, counter in in_c.program.counters.items():
        other = in_python.program.counters[name]
        assert (counter.packets, counter.bytes) == (other.packets, other.bytes), name


def test_counters_are_64_bits_and_wrap_in_c_as_in_python(native_cache):
    """BMv2's counters are uint64: a count past 2^64 - 1 wraps, in the C entry as in the
    Python one, and a write that does not fit 64 bits is refused."""
    from p4switch.runtime import ExactKey, InvalidArgument
    program = compile_file(str(ROOT / "p4src" / "l3_forward.p4")).bmv2

    def make():
        sw = Switch(program)
        sw.table_add("ipv4_lpm", [LpmKey(0x0A000200, 24)], "ipv4_forward",
                     (0x0800_0000_0002, 2))
        sw.table_add("arp_flood", [ExactKey(1)], "flood", (1,))
        return sw

    in_c, in_python = _pair(make)
    names = in_c.counters()
    assert names, "l3_forward.p4 counts its packets"
    top = (1 << 64) - 1
    for sw in (in_c, in_python):
        for name in names:
            for index in range(in_c.program.counters[name].size):
                sw.counter_write(name, index, top, top - 10)
        with pytest.raises(InvalidArgument, match="64"):
            sw.counter_write(names[0], 0, 1 << 64, 0)
        with pytest.raises(InvalidArgument):
            sw.counter_write(names[0], 0, -1, 0)
    frame = bytes.fromhex("000000000100 000000000011 0800 4500001800010000401163D20A0001010A000202"
                          " DEADBEEF")
    _same(in_c, in_python, [(1, frame)] * 3)
    counted = 0
    for name in names:
        for index in range(in_c.program.counters[name].size):
            got = in_c.counter_read(name, index)
            assert got == in_python.counter_read(name, index), (name, index)
            if got != (top, top - 10):
                counted += 1
                assert got[0] < 3 and got[1] < 3 * len(frame)     # wrapped past 2^64 - 1
    assert counted > 0


def test_ina_contributions_results_and_routes_as_the_python_fast_path(native_cache):
    program = ina_bench.ina_bmv2_json(8)
    in_c, in_python = _pair(lambda: ina_bench.configured_switch(8, 3, program))
    packets = ina_bench.contributions(8, 3, 40)
    plain = ina_bench.eth_ipv4_udp(ina_bench.host(0), ina_bench.Endpoint(
        ina_bench.SWITCH_MAC, ina_bench.host(1).addr), bytes(48), sport=5000, dport=5000)
    packets = [p for i, p in enumerate(packets) for p in ([p, (1, plain)] if i % 5 == 0
                                                          else [p])]
    outs = _same(in_c, in_python, packets)
    assert sum(len(out) == 3 for out in outs) == 40           # every cell's result multicast
    for name, reg in in_c.program.registers.items():
        assert list(map(int, reg.cells)) == list(map(int, in_python.program.registers[
            name].cells)), name


WIDTHS = (1, 8, 9, 16, 32, 48, 63, 64)      # the parsed header's fields (words)
WIDE = (65, 128)                              # metadata only: wide fields stay in the lists


def _widths_program() -> dict:
    """A header `w` with fields of 1..64 bits (C words) and metadata of 65 and 128 bits (list
    only). Ingress interleaves C statements with Python ones (callbacks: a wide target or a
    wide operand) that read what the C just wrote and write what the C reads next; a `w.a8` of
    7 multicasts to group 1, whose replicas' egress differs per egress_rid and also runs
    Python between C statements and reads a field of a header that was invalid at replication
    (`x`, written by ingress); a `w.a8` of 9 clones after ingress and then writes a field in C
    (the general flow reads the whole PHV)."""
    prog = ethernet_program()
    names = [f"a{w}" for w in WIDTHS]
    prog.header_type("w_t", [(n, w) for n, w in zip(names, WIDTHS)] + [("pad", 7)])
    prog.header("w", "w_t")
    prog.header_type("x_t", [("p", 16)])
    prog.header("x", "x_t")         # never parsed: written while invalid, made valid in egress
    m65, m128 = prog.scalar("m65", 65), prog.scalar("m128", 128)
    prog.state("start", [prog.extract("eth"), prog.extract("w")])
    prog.doc["deparsers"][0]["order"] = ["eth", "w", "x"]
    a = {w: fld("w", f"a{w}") for w in WIDTHS}
    mask = {w: const((1 << w) - 1) for w in WIDTHS + WIDE}

    def put(width, value):       # a store masked to its field, as p4c writes it
        target = a[width] if width in WIDTHS else {65: m65, 128: m128}[width]
        return assign(target, op("&", value, mask[width]))

    work = prog.action("work", [
        put(64, op("+", a[64], a[63])),                                  # C
        put(128, op("+", m128, op("+", op("*", a[64], a[48]), a[9]))),   # Python: reads a64
        #                                    and m128 (0: a fresh packet's, not the last one's)
        put(32, op(">>", m128, const(16))),                              # Python: writes a32
        put(16, op("+", a[32], a[8])),                                   # C: reads a32
        put(65, op("+", a[64], a[64])),                                  # Python
        put(48, op("^", op(">>", m65, const(1)), a[16])),                # Python: reads a16
        put(1, op(">>", m65, const(64))),                                # Python
        put(63, op("^", a[63], op("+", a[48], a[1]))),                   # C: reads both
        assign(fld("x", "p"), op("&", a[16], const(0xFFFF))),            # x is invalid
        assign(std("egress_spec"), const(2))])
    group = prog.action("group", [assign(std("mcast_grp"), const(1))])
    copy_out = prog.action("copy_out", [prim("clone_ingress_pkt_to_egress", const(5))])
    mark = prog.action("mark", [put(16, op("^", a[16], const(0x5A5A)))])    # C, then divergence
    prog.run("work", work, next_node="is_group")
    prog.conditional("is_group", op("==", a[8], const(7)), "group", "is_clone")
    prog.run("group", group, next_node=None)
    prog.conditional("is_clone", op("==", a[8], const(9)), "copy_out", None)
    prog.run("copy_out", copy_out, next_node="mark")
    prog.run("mark", mark, next_node=None)
    prog.start("work")
    rid = std("egress_rid")
    per_rid = prog.action("per_rid", [
        put(9, op("+", a[9], rid)),                                       # C
        put(128, op("+", m128, op("*", rid, a[9]))),                      # Python: reads a9
        put(8, op("+", m128, rid)),                                       # Python: writes a8
        put(32, op("^", a[32], op("<<", a[8], const(8)))),                # C: reads a8
        put(48, op("+", a[48], fld("x", "p"))),   # C: x.p of the invalid x: 0 in a replica
        put(1, op("^", a[1], op("&", rid, const(1)))),                    # C
        prim("add_header", hdr("x")),                                     # Python
        assign(fld("x", "p"), op("&", op("+", fld("x", "p"), rid), const(0xFFFF)))])
    prog.run("per_rid", per_rid, pipeline="egress")
    prog.start("per_rid", pipeline="egress")
    return prog.build()


def test_fields_of_every_width_and_callbacks_between_c_statements(native_cache, monkeypatch):
    """Fields of 1 to 128 bits through the C entry, the Python `fast` and the Python controls
    alone: each C statement sees what the Python before it wrote and the Python sees what the
    C wrote; each multicast replica starts from the packet as ingress left it (its own words
    and lists) with its own egress_rid; a clone after ingress sees the whole PHV."""
    program = _widths_program()

    def make():
        sw = Switch(program)
        sw.mc_group_set(1, [(3, 1), (4, 2), (5, 3), (6, 4)])
        sw.mirroring_add(5, port=9)
        return sw

    in_c, in_python = _pair(make)
    assert in_c._engine.code.native.refused == {}
    assert "call3" in in_c.program.untraced.native.c_source      # Python between C statements
    monkeypatch.setenv("INAEMU_NATIVE", "0")
    pure = make()
    assert pure.program.untraced.native_in_use == ()
    rng = random.Random(11)
    packets = []
    for i in range(300):
        values = [rng.getrandbits(w) for w in WIDTHS]
        if i % 7 == 0:
            values = [(1 << w) - 1 for w in WIDTHS]          # every field at its maximum
        values[1] = rng.choice([7, 7, 9, 1, 2])             # a8: multicast, clone or unicast
        packed = 0
        for value, width in zip(values, WIDTHS):
            packed = packed << width | value
        body = (packed << 7 | rng.getrandbits(7)).to_bytes(31, "big")
        packets.append((rng.randrange(0, 8), eth_frame(ether_type=0x88B5, payload=body
                                                       + bytes(rng.randrange(0, 9)))))
    outs = _same(in_c, in_python, packets)
    for i, (port, frame) in enumerate(packets):
        assert pure.receive(port, frame) == outs[i], f"packet {i} (pure Python)"
    copies = [tuple(p for p, _ in out) for out in outs]
    assert (3, 4, 5, 6) in copies and (9, 2) in copies and (2,) in copies
    # the replicas differ by their rid (x.p: add_header zeroes it, egress adds the rid)
    for out in outs:
        if len(out) == 4:
            assert len({data for _, data in out}) == 4
            assert [int.from_bytes(data[45:47], "big") for _, data in out] == [1, 2, 3, 4]


def test_the_plan_has_a_place_for_every_entry_the_c_reads():
    """The C reads the plan by position (its enum, PL_*): the Python names them in the same
    order, one for one."""
    program = Switch(_divergence_program()).program
    # the words from their one definition, not the built module's: this test reads only the
    # generated source, so it runs on the Python packet code too (INAEMU_NATIVE=0)
    source = nativefast.source(program.layout, word_slots(program.layout), True)
    enum = source[source.index("enum {") + 6:source.index("};", source.index("enum {"))]
    names = [n.strip() for n in enum.split(",") if n.strip()]
    assert names[-1] == "PL_SIZE"
    assert len(names) - 1 == len(nativefast.PLAN_FIELDS)


def test_the_plan_slots_have_a_place_for_every_slot_the_c_reads():
    """The C reads the plan's `slots` bytes by position (S_* and L_*): the Python writes them
    in the same order (SLOT_FIELDS, then SLOT_LISTS' lengths and slots)."""
    program = Switch(_divergence_program()).program
    source = nativefast.source(program.layout, word_slots(program.layout), True)

    def enum(first: str) -> list[str]:
        start = source.index("enum { " + first)
        body = source[start + 6:source.index("};", start)]
        return [n.strip() for n in body.split(",") if n.strip()]
    assert enum("S_IN_PORT") == ["S_IN_PORT", "S_PKT_LEN", "S_IN_LEN", "S_MCAST", "S_SPEC",
                                 "S_EPORT", "S_ITYPE", "S_RID", "S_FIELDS"]
    assert len(nativefast.SLOT_FIELDS) == 8
    assert enum("L_DIVERT")[:-1] == ["L_DIVERT", "L_ZERO", "L_ZERO_AFTER", "L_EDIVERT"]
    assert nativefast.SLOT_LISTS == ("divert_after_ingress", "zero_before_length",
                                     "zero_after_length", "divert_after_egress")
    plan = {name: i + 1 for i, name in enumerate(nativefast.SLOT_FIELDS)}
    plan.update(divert_after_ingress=(20, 21), zero_before_length=(), zero_after_length=(22,),
                divert_after_egress=(23, 24, 25))
    words = memoryview(nativefast._slots_bytes(plan)).cast("q").tolist()
    assert words == [1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 1, 3, 20, 21, 22, 23, 24, 25]


@pytest.mark.usefixtures("native_cache")
def test_a_plan_whose_slots_do_not_add_up_is_refused_with_a_clear_error():
    """The C checks the slots' lengths against the bytes before it reads a slot: a plan
    changed by hand (or a stale one) raises TypeError, and the switch's state is untouched."""
    in_c, _ = _pair(lambda: Switch(_divergence_program()))
    entry = in_c._engine.entry
    plan = list(entry.args[-1])          # (the module's state, then the plan)
    at = nativefast.PLAN_FIELDS.index("slots")
    good = plan[at]
    frame = eth_frame(payload=bytes([1, 0, 0, 0, 0]))
    want = in_c.receive(0, frame)
    for bad in (good[:-8], good + bytes(8), good[:8 * 8] + (10**6).to_bytes(8, "little") +
                good[9 * 8:], b"", None):
        plan[at] = bad
        broken = type(entry)(entry.func, *entry.args[:-1], tuple(plan))
        with pytest.raises(TypeError, match="slots of another layout"):
            broken(0, frame)
    assert in_c.receive(0, frame) == want
