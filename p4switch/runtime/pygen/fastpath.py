"""The common packet flow, generated for one program: `fast(port, data) -> outputs`.

Almost every packet takes one ingress pass and leaves unicast or to a multicast group, with no
clone, resubmit, recirculation or truncation. A function generated for the program's slots runs
exactly that (every standard_metadata slot a constant), and hands over to the engine's general
flow at the point where a packet diverges, so the outputs and their order are the general
flow's. Requests that no code of the program can make (a slot nothing writes: `writes.py`) are
not even tested. A copy dropped in egress simply yields nothing, as in the general flow.

Multicast replicas: headers nothing after ingress can change are serialised once per packet
(`deparse_replica`). When egress and the deparser write few, known slots, the replicas run one
after the other on the ingress PHV itself, those slots restored before each, instead of a copy
of the whole PHV per replica; otherwise every replica but the last gets a copy.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Callable

from ..phv import layout as L
from ..phv.writes import WriteSet, constant_index
from .codecache import compiled
from .deparsergen import REPLICA_EXTRA
from .primgen import DROP_PORT

REPLICATION = 5
MASK48 = (1 << 48) - 1
MASK32 = (1 << 32) - 1
MAX_RESTORED = 48  # slots + flags restored per replica; beyond, a copy is as cheap


def build_fast_path(engine, queued: bool = False) -> Callable:
    """`fast(port, data)`; with `queued`, the variant used while egress queues are in use:
    a unicast copy goes through its queue (`engine._admit`: it may wait there, and egress
    then runs when it leaves), and multicast takes the general flow."""
    code = engine.code
    after_ingress, anywhere = code.writes_after_ingress, code.writes_anywhere
    multicast = "" if engine.mcast_grp is None or queued else _multicast_source(engine)
    # egress sees the length after ingress; computed only when some code can read it
    new_length = "length_after_ingress(f, v, len(data) - pos)" \
        if engine.egress_reads_length else "length"
    recompute = "" if new_length == "length" else f"""
    length = {new_length}"""
    to_group = "" if engine.mcast_grp is None else f"""
    mgid = f[{engine.mcast_grp}]
    if mgid:
        return multicast(f, v, data[pos:], port, {new_length}, now, mgid)"""
    if queued and engine.mcast_grp is not None:
        to_group = f"""
    if f[{engine.mcast_grp}]:
        return slow_after_ingress(f, v, data, pos, port)"""
    diverted = _any_set([L.CLONE, L.RESUBMIT, L.LEARN], anywhere)
    priority = priority_test(engine, anywhere)
    if priority is not None:
        diverted = priority if diverted is None else f"{diverted} or {priority}"
    after_ingress_check = "" if diverted is None else f"""
    if {diverted}:
        return slow_after_ingress(f, v, data, pos, port)"""
    clock = engine.reads_time or queued
    queue_reset = (f"""
    f[{engine.enq_ts}] = now & {MASK32}""" if clock else "") + "".join(f"""
    f[{slot}] = 0""" for slot in queue_slots_written(engine, anywhere))
    if queued:
        queue_reset = """
    admitted = admit(f, v, data[pos:], eport, 0, length, port)
    if admitted is None:
        return []
    now = int(admitted)"""
    read_clock = "\n    now = int(now_us())" if clock else "\n    now = 0"
    ingress_time = f"\n    f[{engine.ingress_ts}] = now & {MASK48}" if clock else ""
    egress_time = f"\n    f[{engine.egress_ts}] = now & {MASK48}" if clock else ""
    diverges, dropped = _egress_divergence("f", engine.egress_spec, after_ingress, anywhere)
    after_egress_check = "" if diverges is None else f"""
    if {diverges}:
        return slow_after_egress(f, v, data[pos:], eport, length, port)"""
    if dropped is not None:
        after_egress_check += f"""
    if {dropped}:
        return []"""
    source = f"""
def fast(port, data):
    f = init_fields[:]
    v = init_valid[:]{read_clock}
    f[{engine.ingress_port}] = port
    length = len(data)
    f[{engine.packet_length}] = f[{engine.ingress_length}] = length{ingress_time}
    pos = parse(f, v, data)
    ingress(f, v){after_ingress_check}{to_group}
    eport = f[{engine.egress_spec}]
    if eport == {DROP_PORT}:
        return []{recompute}
    f[{engine.egress_port}] = eport
    f[{engine.egress_spec}] = 0
    f[{engine.egress_rid}] = 0
    f[{engine.packet_length}] = length{queue_reset}{egress_time}
    f[{L.EXIT}] = 0
    egress(f, v){after_egress_check}
    return [(eport, deparse(f, v, data[pos:]))]
{multicast}"""
    namespace = {"init_fields": engine.init_fields, "init_valid": engine.init_valid,
                 "now_us": engine.program.now_us, "parse": code.parse,
                 "ingress": code.ingress, "egress": code.egress,
                 "deparse": code.deparse, "deparse_replica": code.deparse_replica,
                 "slow_after_ingress": engine.slow_after_ingress,
                 "slow_after_egress": engine.slow_after_egress,
                 "slow_after_replica": engine.slow_after_replica, "admit": engine._admit,
                 "replicas_of": engine.pre.replicas, "clear_invalid": engine.clear_invalid,
                 "length_after_ingress": engine.length_after_ingress}
    exec(compiled(source, "<p4switch fast path>"), namespace)  # noqa: S102
    return namespace["fast"]


def build_length_after_ingress(layout) -> Callable:
    """`length_after_ingress(f, v, payload_length)`: the packet_length egress sees, as
    simple_switch computes it: every valid (non-metadata) header at the end of ingress, emitted
    by the deparser or not, plus the payload; a varbit header counts its current length."""
    terms = ["n"]
    for inst in layout.header_list:
        if inst.metadata:
            continue
        if inst.varbit_len_slot is None:
            terms.append(f"{inst.htype.fixed_bits // 8} * v[{inst.index}]")
        else:
            terms.append(f"(v[{inst.index}] and "
                         f"({inst.htype.fixed_bits} + f[{inst.varbit_len_slot}]) // 8)")
    lines = ["def length_after_ingress(f, v, n):", "    return " + " + ".join(terms)]
    namespace: dict = {}
    exec(compiled("\n".join(lines), "<p4switch packet length>"), namespace)  # noqa: S102
    return namespace["length_after_ingress"]


def build_clear_invalid(layout, length: int | None = None) -> Callable:
    """`clear_invalid(f, v)`: zero every field of every invalid (non-metadata) header. BMv2
    builds each multicast replica from a fresh PHV and copies only the valid headers into it,
    so a field written while its header was invalid reads 0 in a replica's egress (F13/F16).
    Slots from `length` on are not in the PHV (a vector run's unused slots, `phv_length`)."""
    lines = ["def clear_invalid(f, v):"]
    end = layout.num_slots if length is None else length
    for inst in layout.header_list:
        if inst.metadata:
            continue
        slots = [s for s in range(inst.base, inst.base + len(inst.htype.fields)) if s < end]
        if inst.varbit_len_slot is not None:
            slots.append(inst.varbit_len_slot)
        if slots:
            targets = " = ".join(f"f[{slot}]" for slot in slots)
            lines.append(f"    if not v[{inst.index}]:\n        {targets} = 0")
    if len(lines) == 1:
        lines.append("    pass")
    namespace: dict = {}
    exec(compiled("\n".join(lines), "<p4switch clear invalid>"), namespace)  # noqa: S102
    return namespace["clear_invalid"]


def may_read_slot(source: str, roots: tuple[str, ...], slot: int) -> bool:
    """Whether the functions `roots` of the generated `source`, or the ones they call, may
    read `f[slot]`. Conservative: an index we cannot bound, or `f` handed to code that is not
    in `source`, counts as a read."""
    reads = _slots_read(source, roots)
    return reads.anything or slot in reads.slots or \
        any(low <= slot < high for low, high in reads.ranges)


@dataclass(frozen=True)
class _Reads:
    slots: frozenset            # constant slots read
    ranges: tuple               # (low, high) of constant slices read
    anything: bool              # an index we cannot bound, or `f` escapes


@functools.lru_cache(maxsize=32)   # programs sharing code share its source
def _slots_read(source: str, roots: tuple[str, ...]) -> _Reads:
    """Every slot the functions `roots` (and the ones they call) may read, in one walk (one
    walk per slot asked cost ~0.3 ms each: the engine and the multicast code ask ~10)."""
    defs = _function_defs(source)
    todo, seen = [r for r in roots if r in defs], set()
    slots: set[int] = set()
    ranges: set[tuple[int, int]] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        subscripted: set[int] = set()
        for node in ast.walk(defs[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in defs:
                todo.append(node.func.id)
                subscripted.update(id(a) for a in node.args if _is_name(a, "f"))
            elif isinstance(node, ast.Subscript) and _is_name(node.value, "f"):
                subscripted.add(id(node.value))
                if not isinstance(node.ctx, ast.Store) and \
                        not _add_index(node.slice, slots, ranges):
                    return _Reads(frozenset(), (), True)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                    and _is_name(node.target.value, "f") and \
                    not _add_index(node.target.slice, slots, ranges):
                return _Reads(frozenset(), (), True)
            elif _is_name(node, "f") and id(node) not in subscripted:
                return _Reads(frozenset(), (), True)   # f escapes to code we do not see
    return _Reads(frozenset(slots), tuple(sorted(ranges)), False)


def _add_index(index: ast.AST, slots: set, ranges: set) -> bool:
    """Record the slots `index` reads; False if they cannot be bounded."""
    if isinstance(index, ast.Slice):
        low, high = constant_index(index.lower), constant_index(index.upper)
        if index.step is not None or low is None or high is None:
            return False
        ranges.add((low, high))
        return True
    value = constant_index(index)
    if value is None:
        return False
    slots.add(value)
    return True


@functools.lru_cache(maxsize=8)   # one parse per source, not per (roots, slot) asked
def _function_defs(source: str) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef)}


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def priority_test(engine, writes: WriteSet) -> str | None:
    """The test that sends a packet to the general flow for its priority: one beyond the
    switch's queues per port is dropped there, and a `qid` slot (never in v1model) is filled
    there. None when no code writes standard_metadata.priority (it stays 0)."""
    slot = engine.priority
    if slot is None or not (writes.anything or slot in writes.fields):
        return None
    has_qid = engine.program.layout.std("qid") is not None
    return f"f[{slot}] >= {1 if has_qid else engine.queues.priorities}"


def queue_slots_written(engine, writes: WriteSet) -> list[int]:
    """Queueing metadata slots some code may write: the fast path resets them (a packet that
    finds every queue empty has depths 0 and spent 0 us queued, as BMv2 writes them);
    slots nothing writes keep their initial 0."""
    slots = {engine.enq_qdepth, engine.deq_qdepth, engine.deq_timedelta} - \
        {engine.program.layout.scratch}
    return sorted(s for s in slots if writes.anything or s in writes.fields)


def _any_set(slots: list[int], writes: WriteSet) -> str | None:
    """`f[a] or f[b]` over the request slots some code may set; None if none can be."""
    return " or ".join(f"f[{s}]" for s in live_slots(slots, writes)) or None


def live_slots(slots: list[int], writes: WriteSet) -> list[int]:
    """The slots of `slots` some code may write."""
    return [s for s in slots if writes.anything or s in writes.fields]


def _egress_divergence(phv: str, egress_spec: int, after_ingress: WriteSet,
                       anywhere: WriteSet) -> tuple[str | None, str | None]:
    """Tests for a copy after egress: (leaves the common path: E2E clone, recirculate,
    truncate; is dropped), each None if no code of the program can ask for it.

    The engine clears egress_spec before egress, and a clone request from ingress has already
    left the common path, so those two can only come from egress (or the deparser)."""
    slots, dropped = egress_divergence_slots(egress_spec, after_ingress, anywhere)
    tests = [f"{phv}[{slot}]" for slot in slots]
    return " or ".join(tests) or None, \
        f"{phv}[{egress_spec}] == {DROP_PORT}" if dropped else None


def egress_divergence_slots(egress_spec: int, after_ingress: WriteSet,
                             anywhere: WriteSet) -> tuple[list[int], bool]:
    """`_egress_divergence` as data: (the slots whose truth leaves the common path, whether
    egress may drop the copy)."""
    slots = []
    if after_ingress.anything or L.CLONE in after_ingress.fields:
        slots.append(L.CLONE)
    slots += live_slots([L.RECIRCULATE, L.TRUNCATE], anywhere)
    return slots, after_ingress.anything or egress_spec in after_ingress.fields


def _multicast_source(engine) -> str:
    code = engine.code
    writes = code.writes_after_ingress
    spec = engine.egress_spec
    divergence, dropped = _egress_divergence("cf", spec, writes, code.writes_anywhere)
    if code.deparse_replica is not None:
        size = code.replica_memo_size + code.namespace.get(REPLICA_EXTRA, 0)
        memo = f"\n    memo = [None] * {size}"
        deparse = "deparse_replica(cf, cv, payload, memo)"
    else:
        memo, deparse = "", "deparse(cf, cv, payload)"
    in_place = not writes.anything and len(writes.fields) + len(writes.valid) <= MAX_RESTORED
    fields, valid = sorted(writes.fields), sorted(writes.valid)
    if in_place:
        saved = [f"    r{i} = f[{s}]" for i, s in enumerate(fields)] + \
            [f"    q{i} = v[{s}]" for i, s in enumerate(valid)]

        def restore(fl: str, vl: str, indent: str) -> list[str]:
            return [f"{indent}{fl}[{s}] = r{i}" for i, s in enumerate(fields)] + \
                [f"{indent}{vl}[{s}] = q{i}" for i, s in enumerate(valid)]

        saved += ["    cf = f", "    cv = v"]
        pick = []
        # between replicas only what the next one can read: what egress and the deparser
        # may read, and egress_spec (tested here); all of it when a copy may leave for the
        # general flow (clones, recirculation and truncation read more)
        readers = ("egress", "deparse_replica" if code.deparse_replica is not None
                   else "deparse")
        again = [(i, s) for i, s in enumerate(fields) if divergence is not None or
                 s == spec or may_read_slot(code.source, readers, s)]
        if divergence is None:          # nothing else needs the others' values
            saved = [f"    r{i} = f[{s}]" for i, s in again] + saved[len(fields):]
        restoring = [f"            f[{s}] = r{i}" for i, s in again] + \
            [f"            v[{s}] = q{i}" for i, s in enumerate(valid)]
        if restoring:
            pick += ["        if i:"] + restoring
        hand_over = ["            base_f = f[:]", "            base_v = v[:]"] + \
            restore("base_f", "base_v", "            ")
    else:
        saved = ["    last = len(replicas) - 1"]
        pick = ["        if i < last:", "            cf = f[:]", "            cv = v[:]",
                "        else:", "            cf = f", "            cv = v"]
        hand_over = ["            base_f = f", "            base_v = v"]
    lines = [
        "def multicast(f, v, payload, port, length, now, mgid):",
        "    replicas = replicas_of(mgid)",
        f"    f[{engine.instance_type}] = {REPLICATION}",
        "    clear_invalid(f, v)",
        f"    f[{spec}] = 0",
        f"    f[{engine.packet_length}] = length",
        *([f"    f[{engine.egress_ts}] = now & {MASK48}",
           f"    f[{engine.enq_ts}] = now & {MASK32}",
           f"    f[{engine.deq_timedelta}] = 0"] if engine.reads_time else []),
        *[f"    f[{slot}] = 0" for slot in queue_slots_written(engine, code.writes_anywhere)],
        f"    f[{L.EXIT}] = 0",
        f"    out = []{memo}",
        *saved,
        "    for i, (eport, rid) in enumerate(replicas):",
        *pick,
        f"        cf[{engine.egress_port}] = eport",
        f"        cf[{engine.egress_rid}] = rid",
        "        egress(cf, cv)",
    ]
    if divergence is not None:
        lines += [f"        if {divergence}:", *hand_over,
                  "            return out + slow_after_replica(cf, cv, base_f, base_v, payload, "
                  "eport, rid, length, port, replicas[i + 1:])"]
    kept = f"eport != {DROP_PORT}" + ("" if dropped is None else f" and not {dropped}")
    lines += [f"        if {kept}:",
              f"            out.append((eport, {deparse}))",
              "    return out"]
    return "\n" + "\n".join(lines) + "\n"
