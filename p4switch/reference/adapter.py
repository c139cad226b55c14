"""The runtime's switch API on top of a real simple_switch, so inaemu's STF runner can drive it.

`Bmv2Switch` offers the subset of `p4switch.runtime.Switch` that `p4switch.stf.runner.StfRunner`
calls (tables, action profiles, PRE, mirroring, counters, registers, meters, value sets, and a
synchronous `receive`), translating each call into a simple_switch_CLI command with the BMv2
JSON's names. Running the same runner on both targets means both read an STF file identically:
same name resolution, same key values, same priorities.

Translation rules:
- keys (the runner's neutral tuples): exact `V`, LPM `V/LEN`, ternary `V&&&MASK`, range
  `LOW->HIGH`, all in hex; an `optional` key is written as ternary (full or zero mask).
- priorities: the runner passes P4Runtime-style priorities (higher wins, >= 1); BMv2's CLI ranks
  the smaller number first, so the CLI gets `2**31 - 1 - p` (simple_switch_grpc's mapping).
- direct counters and meters are addressed by entry handle with the array bound to the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from p4switch.runtime.errors import AssertionFailure

from .bmv2 import Bmv2CommandError, Bmv2Error, SimpleSwitch, SwitchStopped

PRIORITY_PIVOT = 2**31 - 1
_HANDLE = re.compile(r"handle (\d+)")
_COUNTER = re.compile(r"= \((\d+) bytes, (\d+) packets\)")
_REGISTER = re.compile(r"\]=\s*(\d+)")


@dataclass(frozen=True)
class TableInfo:
    name: str
    keys: tuple[tuple[str, str, int], ...]    # (key name, match type, width)
    actions: tuple[str, ...]
    const: bool
    action_profile: str | None


def _field_widths(doc: dict) -> dict[tuple[str, str], int]:
    types = {t["name"]: t for t in doc.get("header_types", [])}
    widths = {}
    for header in doc.get("headers", []):
        htype = types.get(header.get("header_type"), {})
        for f in htype.get("fields", []):
            widths[(header["name"], f[0])] = f[1] if isinstance(f[1], int) else 0
    return widths


def table_infos(doc: dict) -> dict[str, TableInfo]:
    """Every table of a BMv2 JSON document, keyed by its JSON name."""
    widths = _field_widths(doc)
    infos = {}
    for pipeline in doc.get("pipelines", []):
        for table in pipeline.get("tables", []):
            keys = []
            for key in table.get("key", []):
                target = key.get("target")
                if key.get("match_type") == "valid":
                    width, default = 1, f"{target}.$valid$"
                else:
                    width = 1 if target[1] == "$valid$" else widths.get(tuple(target[:2]), 0)
                    default = f"{target[0]}.{target[1]}"
                keys.append((key.get("name") or default, key.get("match_type"), width))
            profile = table.get("action_profile") if table.get("type", "simple") != "simple" \
                else None
            infos[table["name"]] = TableInfo(
                name=table["name"], keys=tuple(keys), actions=tuple(table.get("actions", [])),
                const=bool(table.get("entries")), action_profile=profile)
    return infos


def cli_key(spec: tuple, width: int) -> str:
    """One key field in simple_switch_CLI's syntax (`width` bits, for an optional's mask)."""
    kind, *v = spec
    if kind == "exact":
        return f"{v[0]:#x}"
    if kind == "lpm":
        return f"{v[0]:#x}/{v[1]}"
    if kind == "ternary":
        return f"{v[0]:#x}&&&{v[1]:#x}"
    if kind == "range":
        return f"{v[0]:#x}->{v[1]:#x}"
    if kind == "optional":
        return "0x0&&&0x0" if v[0] is None else f"{v[0]:#x}&&&{(1 << width) - 1:#x}"
    raise Bmv2Error(f"no simple_switch_CLI syntax for a {kind} key")


class Bmv2Switch:
    """A `StfRunner`-compatible switch backed by a running `SimpleSwitch`."""

    def __init__(self, switch: SimpleSwitch, doc: dict):
        self.switch = switch
        self.doc = doc
        self._tables = table_infos(doc)
        self._direct_counters = {c["binding"]: c["name"] for c in doc.get("counter_arrays", [])
                                 if c.get("is_direct")}
        self._direct_meters = {m["binding"]: m["name"] for m in doc.get("meter_arrays", [])
                               if m.get("is_direct")}
        self.packet_logs: list[list[str]] = []   # simple_switch's log lines, one list per packet

    # --- packets ---
    def receive(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        try:
            outputs, lines = self.switch.send(port, data)
        except SwitchStopped:                  # BMv2 aborts the process on a failed assert
            errors = [line.split("] ", 4)[-1] for line in self.switch.log.lines
                      if "] [E] [" in line or "Assertion" in line]
            raise AssertionFailure("simple_switch stopped: "
                                   + ("; ".join(errors[-3:]) or "(no error logged)")) from None
        self.packet_logs.append(lines)
        return outputs

    # --- tables ---
    def tables(self) -> list[str]:
        return list(self._tables)

    def table_info(self, name: str) -> TableInfo:
        return self._tables[name]

    def _key_text(self, table: str, keys) -> str:
        fields = self._tables[table].keys
        return " ".join(cli_key(spec, width) for spec, (_, _, width) in zip(keys, fields))

    @staticmethod
    def _priority(priority: int | None) -> str:
        return "" if priority is None else f" {PRIORITY_PIVOT - priority}"

    @staticmethod
    def _params(params) -> str:
        return " ".join(f"{p:#x}" for p in params)

    def _handle(self, out: str) -> int:
        m = _HANDLE.search(out)
        if not m:
            raise Bmv2CommandError(f"no handle in simple_switch_CLI's answer: {out.strip()}")
        return int(m.group(1))

    def table_add(self, table, keys, action, params=(), priority=None) -> int:
        out = self.switch.cli(f"table_add {table} {action} {self._key_text(table, keys)} => "
                              f"{self._params(params)}{self._priority(priority)}")
        return self._handle(out)

    def table_set_default(self, table, action, params=()) -> None:
        self.switch.cli(f"table_set_default {table} {action} {self._params(params)}".rstrip())

    def table_clear(self, table) -> None:
        self.switch.cli(f"table_clear {table}")

    def table_add_member(self, table, keys, member, priority=None) -> int:
        return self._handle(self.switch.cli(
            f"table_indirect_add {table} {self._key_text(table, keys)} => {member}"
            f"{self._priority(priority)}"))

    def table_add_group(self, table, keys, group, priority=None) -> int:
        return self._handle(self.switch.cli(
            f"table_indirect_add_with_group {table} {self._key_text(table, keys)} => {group}"
            f"{self._priority(priority)}"))

    def act_prof_add_member(self, profile, action, params=()) -> int:
        return self._handle(self.switch.cli(
            f"act_prof_create_member {profile} {action} {self._params(params)}".rstrip()))

    def act_prof_create_group(self, profile) -> int:
        return self._handle(self.switch.cli(f"act_prof_create_group {profile}"))

    def act_prof_add_member_to_group(self, profile, member, group) -> None:
        self.switch.cli(f"act_prof_add_member_to_group {profile} {member} {group}")

    # --- replication ---
    def mirroring_add(self, session, port=None, mgid=None) -> None:
        if mgid is not None:
            self.switch.cli(f"mirroring_add_mc {session} {mgid}")
        else:
            self.switch.cli(f"mirroring_add {session} {port}")

    def mirroring_delete(self, session) -> None:
        self.switch.cli(f"mirroring_delete {session}")

    def mirroring_get(self, session) -> str:
        return self.switch.cli(f"mirroring_get {session}", check=False).strip()

    def mc_group_create(self, mgid) -> None:
        self.switch.cli(f"mc_mgrp_create {mgid}")

    def mc_node_create(self, rid, ports) -> int:
        return self._handle(self.switch.cli(f"mc_node_create {rid} "
                                            + " ".join(map(str, ports))))

    def mc_node_update(self, handle, ports) -> None:
        self.switch.cli(f"mc_node_update {handle} " + " ".join(map(str, ports)))

    def mc_node_associate(self, mgid, handle) -> None:
        self.switch.cli(f"mc_node_associate {mgid} {handle}")

    # --- counters, registers, meters, value sets ---
    def counter_read(self, name, index) -> tuple[int, int]:
        out = self.switch.cli(f"counter_read {name} {index}")
        m = _COUNTER.search(out)
        if not m:
            raise Bmv2CommandError(f"cannot read counter_read's answer: {out.strip()}")
        return int(m.group(2)), int(m.group(1))

    def direct_counter_read(self, table, handle) -> tuple[int, int]:
        if table not in self._direct_counters:
            raise Bmv2CommandError(f"table '{table}' has no direct counter")
        return self.counter_read(self._direct_counters[table], handle)

    def counter_write(self, name, index, packets, nbytes) -> None:
        self.switch.cli(f"counter_write {name} {index} {packets} {nbytes}")

    def register_read(self, name, index) -> int:
        out = self.switch.cli(f"register_read {name} {index}")
        m = _REGISTER.search(out)
        if not m:
            raise Bmv2CommandError(f"cannot read register_read's answer: {out.strip()}")
        return int(m.group(1))

    def register_read_all(self, name) -> list[int]:
        out = self.switch.cli(f"register_read {name}")
        _, _, values = out.partition("=")
        return [int(v) for v in values.replace(",", " ").split()]

    def register_write(self, name, index, value) -> None:
        self.switch.cli(f"register_write {name} {index} {value}")

    def register_reset(self, name) -> None:
        self.switch.cli(f"register_reset {name}")

    def registers(self) -> list[str]:
        return [r["name"] for r in self.doc.get("register_arrays", [])]

    def meter_set_rates(self, name, index, rates) -> None:
        shown = " ".join(f"{rate}:{burst}" for rate, burst in rates)
        self.switch.cli(f"meter_set_rates {name} {index} {shown}")

    def direct_meter_set_rates(self, table, handle, rates) -> None:
        if table not in self._direct_meters:
            raise Bmv2CommandError(f"table '{table}' has no direct meter")
        self.meter_set_rates(self._direct_meters[table], handle, rates)

    def parse_vsets(self) -> list[str]:
        return [v["name"] for v in self.doc.get("parse_vsets", [])]

    def _vset_change(self, verb, name, value, mask) -> None:
        width = next((v.get("compressed_bitwidth", 0) for v in self.doc.get("parse_vsets", [])
                      if v["name"] == name), 0)
        if mask is not None and width and mask != (1 << width) - 1:
            raise Bmv2CommandError("simple_switch_CLI's pvs_add takes no mask")
        self.switch.parse_vset_change(verb == "pvs_add", name, value, (width + 7) // 8)

    def parse_vset_add(self, name, value, mask=None) -> None:
        self._vset_change("pvs_add", name, value, mask)

    def parse_vset_remove(self, name, value, mask=None) -> None:
        self._vset_change("pvs_remove", name, value, mask)
