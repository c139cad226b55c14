"""The STF test of a generated program: replication set-up, control-plane entries, packets.

Packets follow the parser: at each state the generator usually picks one of the select cases
and sets the key fields to match it, then walks the cases in order (as the parser will) to find
the real next state. Other fields get edge values or values the program's tables look for.
A few packets are cut short, to exercise parser errors.
"""

from __future__ import annotations

import random

from .model import Header, Program
from .ptypes import interesting_value
from .stmts import CLONE_SESSIONS, MC_GROUPS, PORTS


def render_stf(p: Program, rng: random.Random, pools: dict[str, list[int]]) -> str:
    lines = _replication(rng)
    for control in (p.ingress, p.egress):
        for table in control.tables:
            prioritised = any(k.match in ("ternary", "range", "optional") for k in table.keys)
            count = len(table.runtime_entries)
            for n, (keysets, action, args) in enumerate(table.runtime_entries):
                keys = " ".join(f"{k.stf_name}:{v}" for k, v in zip(table.keys, keysets)
                                if v != "*")     # a key left out is a wildcard
                params = _action_params(control, action, args)
                # distinct priorities, so the winner of an overlap is defined on both switches
                priority = f" {count - n}" if prioritised else ""
                lines.append(f"add {control.name}.{table.name}{priority} {keys} "
                             f"{control.name}.{action}({params})")
    for _ in range(rng.randrange(2, 6)):
        port = rng.choice(PORTS)
        data = packet_bytes(p, rng, pools)
        lines.append(f"packet {port} {data.hex().upper()}" if data else f"packet {port} 00")
    # read every counter cell back (the condition always holds: only the values matter)
    for control in (p.ingress, p.egress):
        for counter in control.counters:
            for i in range(counter.size):
                lines.append(f"check_counter {control.name}.{counter.name}({i}) packets >= 0")
    return "\n".join(lines) + "\n"


def _action_params(control, action: str, args: list[int]) -> str:
    found = next(a for a in control.actions if a.name == action)
    return ", ".join(f"{name}:{value}" for (name, _), value in zip(found.params, args))


def _replication(rng: random.Random) -> list[str]:
    """Multicast groups 1 and 2 and clone sessions 5 and 6, with varied ports and rids."""
    lines, node = [], 0
    for mgid in MC_GROUPS:
        lines.append(f"mc_mgrp_create {mgid}")
        for _ in range(rng.randrange(1, 3)):
            ports = sorted(rng.sample(PORTS, rng.randrange(1, 4)))
            lines.append(f"mc_node_create {rng.randrange(0, 20)} {' '.join(map(str, ports))}")
            lines.append(f"mc_node_associate {mgid} {node}")
            node += 1
    for session in CLONE_SESSIONS:
        lines.append(f"mirroring_add {session} {rng.choice(PORTS)}")
    return lines


def packet_bytes(p: Program, rng: random.Random, pools: dict[str, list[int]]) -> bytes:
    headers = {h.name: h for h in p.headers}
    states = {s.name: s for s in p.states}
    data = b""
    state = states["start"]
    extracted: dict[str, dict[str, int]] = {}      # header -> its fields' values in this packet
    for _ in range(len(p.states) + sum(h.stack for h in p.headers) + 1):   # (a loop: one past)
        header = headers[state.header]
        values = {f: _field_value(rng, f"hdr.{header.name}.{f}", ty.width, pools)
                  for f, ty in header.fields}
        extracted[header.name] = values
        if state.cases and rng.random() < 0.8:
            case = rng.choice(state.cases)
            for (key, width), (value, mask) in zip(state.keys, case.matches):
                field = key.rsplit(".", 1)[1]
                if field in values:      # (not a key read ahead)
                    values[field] = (value & mask) | (values[field] & ~mask & ((1 << width) - 1))
        data += _pack(header, values)
        if header.varbit:
            source, field = header.length_source.split(".")
            length = extracted[source][field] & ((1 << header.length_bits) - 1)
            data += bytes(rng.getrandbits(8) for _ in range(length))
            if length * 8 > header.varbit:
                break          # HeaderTooShort: the parser stops here
        data += bytes(rng.getrandbits(8) for _ in range(state.advance))   # skipped
        if any(k.startswith("pkt.") for k, _ in state.keys):
            break    # a key read ahead: where the parser goes is up to the bytes that follow
        target = state.default
        for case in state.cases:
            if all((values[k.rsplit(".", 1)[1]] & m) == (v & m)
                   for (k, _), (v, m) in zip(state.keys, case.matches)):
                target = case.target
                break
        if target not in states:
            break
        state = states[target]
    data += bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 10)))
    if rng.random() < 0.08 and len(data) > 1:
        data = data[:rng.randrange(1, len(data))]
    return data


def _field_value(rng: random.Random, name: str, width: int, pools) -> int:
    pool = pools.get(name)
    if pool and rng.random() < 0.4:
        return rng.choice(pool) & ((1 << width) - 1)
    return interesting_value(rng, width)


def _pack(header: Header, values: dict[str, int]) -> bytes:
    word = 0
    for name, ty in header.fields:
        word = (word << ty.width) | (values[name] & ((1 << ty.width) - 1))
    return word.to_bytes(header.width // 8, "big")
