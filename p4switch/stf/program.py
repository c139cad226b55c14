"""What the STF runner needs to know about a program beyond the switch API: names and widths.

STF names action parameters by name and counters by their JSON names, and p4c's driver resolves
table and action names by suffix. The switch API takes parameters positionally, so this index of
the BMv2 JSON supplies the parameter order, the direct counters' tables and the meters' sizes.
"""

from __future__ import annotations

from dataclasses import dataclass


class UnknownName(LookupError):
    """A name the program does not have, or has more than once; the message lists candidates."""


@dataclass(frozen=True, kw_only=True)
class ActionParams:
    name: str
    params: tuple[tuple[str, int], ...]     # (name, bitwidth) in order


@dataclass(frozen=True, kw_only=True)
class CounterInfo:
    name: str
    size: int
    direct_table: str | None


def resolve_name(wanted: str, candidates: list[str], what: str) -> str:
    """Exact name, else the unique candidate ending in `.wanted`, else the unique one ending in
    `wanted` (p4c's driver's rule). Raises `UnknownName` naming the candidates."""
    if wanted in candidates:
        return wanted
    for suffix_rule in (lambda n: n.endswith("." + wanted), lambda n: n.endswith(wanted)):
        found = [n for n in candidates if suffix_rule(n)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise UnknownName(f"{what} '{wanted}' is ambiguous: {', '.join(sorted(found))}")
    shown = ", ".join(sorted(candidates)[:20]) or "none"
    raise UnknownName(f"no {what} '{wanted}' in the program (it has: {shown})")


class ProgramIndex:
    """Read-only lookups over a BMv2 JSON dict; tolerant of missing optional sections."""

    def __init__(self, config: dict):
        self.actions: dict[str, ActionParams] = {}
        for action in config.get("actions", []) or []:
            name = action.get("name", "")
            params = tuple((p.get("name", f"arg{i}"), int(p.get("bitwidth", 0)))
                           for i, p in enumerate(action.get("runtime_data", []) or []))
            self.actions.setdefault(name, ActionParams(name=name, params=params))
        self.counters: dict[str, CounterInfo] = {}
        for counter in config.get("counter_arrays", []) or []:
            name = counter.get("name", "")
            direct = counter.get("binding") if counter.get("is_direct") else None
            self.counters[name] = CounterInfo(name=name, size=int(counter.get("size", 0) or 0),
                                              direct_table=direct)
        self.meter_sizes: dict[str, int] = {
            m.get("name", ""): int(m.get("size", 0) or 0)
            for m in config.get("meter_arrays", []) or []}
        self.direct_meter_tables: dict[str, str] = {
            m.get("name", ""): m.get("binding", "")
            for m in config.get("meter_arrays", []) or [] if m.get("is_direct")}
        self.table_key_aliases: dict[str, list[tuple[str, ...]]] = {}
        for pipeline in config.get("pipelines", []) or []:
            for table in pipeline.get("tables", []) or []:
                aliases = []
                for key in table.get("key", []) or []:
                    names = []
                    if key.get("name"):
                        names.append(key["name"])
                    target = key.get("target")
                    if isinstance(target, list):
                        names.append(".".join(str(t) for t in target))
                    aliases.append(tuple(names))
                self.table_key_aliases[table.get("name", "")] = aliases

    def action(self, name: str) -> ActionParams:
        try:
            return self.actions[name]
        except KeyError:
            raise UnknownName(f"no action '{name}' in the program") from None

    def counter(self, name: str) -> CounterInfo:
        return self.counters[resolve_name(name, list(self.counters), "counter")]

    def meter(self, name: str) -> tuple[str, int, str | None]:
        """(full name, size, the table of a direct meter or None)."""
        full = resolve_name(name, list(self.meter_sizes), "meter")
        return full, self.meter_sizes[full], self.direct_meter_tables.get(full)
