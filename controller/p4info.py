"""A P4Info, indexed once: tables, actions, counters, registers by name, alias, id or suffix.

Why: requests name things the way people write them (`ipv4_lpm`, `MyIngress.ipv4_lpm`), while
the wire carries numeric ids. The index resolves a name the same way BMv2 and the runtime do: the
full name, the P4Info alias, or any unique dot-separated suffix; an unknown or ambiguous name raises
`P4InfoError` listing the candidates. No state but the P4Info it was built from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from controller.errors import P4InfoError



@dataclass(frozen=True)
class Field:
    """A table key field or an action parameter."""

    id: int
    name: str
    bitwidth: int
    match_type: str = ""  # table keys only


@dataclass(frozen=True)
class Table:
    id: int
    name: str
    keys: tuple[Field, ...]
    action_ids: tuple[int, ...]
    size: int

    @property
    def needs_priority(self) -> bool:
        return any(k.match_type in ("ternary", "range", "optional") for k in self.keys)

    def key(self, name: str) -> Field:
        return _pick(f"key field of table {self.name}", self._keys_by_name, name)

    @cached_property
    def _keys_by_name(self) -> dict[str, Field]:
        return {k.name: k for k in self.keys}


@dataclass(frozen=True)
class Action:
    id: int
    name: str
    params: tuple[Field, ...]

    def param(self, name: str) -> Field:
        return _pick(f"parameter of action {self.name}", self._params_by_name, name)

    @cached_property
    def _params_by_name(self) -> dict[str, Field]:
        return {p.name: p for p in self.params}


@dataclass(frozen=True)
class Indexed:
    """A counter or a register: an array of `size` cells."""

    id: int
    name: str
    size: int
    bitwidth: int = 0  # registers only


def _match_type(field: p4info_pb2.MatchField) -> str:
    if field.WhichOneof("match") == "other_match_type":
        return field.other_match_type
    return p4info_pb2.MatchField.MatchType.Name(field.match_type).lower()


def _pick(kind: str, by_name: dict, name: str):
    """Full name, or a unique dot-separated suffix of one."""
    if name in by_name:
        return by_name[name]
    matches = [full for full in by_name if full.endswith("." + name)]
    if len(matches) == 1:
        return by_name[matches[0]]
    if matches:
        raise P4InfoError(f"{kind} {name!r} is ambiguous: {', '.join(sorted(matches))}")
    known = ", ".join(sorted(by_name)) or "none"
    raise P4InfoError(f"no {kind} named {name!r} (known: {known})")


class P4InfoIndex:
    """Look-ups over one P4Info message."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self._tables = {t.preamble.name: self._table(t) for t in p4info.tables}
        self._actions = {a.preamble.name: Action(
            a.preamble.id, a.preamble.name,
            tuple(Field(p.id, p.name, p.bitwidth) for p in a.params)) for a in p4info.actions}
        self._counters = {c.preamble.name: Indexed(c.preamble.id, c.preamble.name, c.size)
                          for c in p4info.counters}
        self._registers = {r.preamble.name: Indexed(
            r.preamble.id, r.preamble.name, r.size,
            r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth)
            for r in p4info.registers}
        # alias -> full name, per kind (a table and an action may share an alias)
        self._aliases = {kind: {o.preamble.alias: o.preamble.name for o in group
                                if o.preamble.alias and o.preamble.alias != o.preamble.name}
                         for kind, group in (("table", p4info.tables), ("action", p4info.actions),
                                             ("counter", p4info.counters),
                                             ("register", p4info.registers))}
        self._names = {obj.id: obj.name for group in (self._tables, self._actions, self._counters,
                                                       self._registers) for obj in group.values()}
        self._found: dict[tuple[str, str], object] = {}
        # the serialised P4Info when it was read from bytes (from_binary), else None
        self.binary: bytes | None = None

    @staticmethod
    def _table(t) -> Table:
        keys = tuple(Field(m.id, m.name, m.bitwidth, _match_type(m)) for m in t.match_fields)
        return Table(t.preamble.id, t.preamble.name, keys, tuple(r.id for r in t.action_refs), t.size)

    @classmethod
    def from_text(cls, text: str, *, source: str = "P4Info") -> "P4InfoIndex":
        message = p4info_pb2.P4Info()
        try:
            text_format.Parse(text, message, allow_unknown_field=True)
        except text_format.ParseError as e:
            raise P4InfoError(f"{source}: not a text-format P4Info: {e}") from None
        return cls(message)

    @classmethod
    def from_binary(cls, data: bytes, *, source: str = "P4Info") -> "P4InfoIndex":
        """From the P4Info's protobuf bytes; `binary` keeps them."""
        try:
            message = p4info_pb2.P4Info.FromString(data)
        except Exception as e:      # protobuf's DecodeError, or worse for garbage
            raise P4InfoError(f"{source}: not a binary P4Info: {e}") from None
        index = cls(message)
        index.binary = data
        return index

    @classmethod
    def from_file(cls, path: str | Path) -> "P4InfoIndex":
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise P4InfoError(f"{path}: cannot read: {e}") from None
        return cls.from_text(text, source=str(path))

    def _find(self, kind: str, group: dict, name: str):
        found = self._found.get((kind, name))
        if found is None:       # resolved once per name (a failure is not remembered)
            full = name if name in group else self._aliases[kind].get(name, name)
            found = self._found[(kind, name)] = _pick(kind, group, full)
        return found

    def table(self, name: str) -> Table:
        return self._find("table", self._tables, name)

    def action(self, name: str) -> Action:
        return self._find("action", self._actions, name)

    def counter(self, name: str) -> Indexed:
        return self._find("counter", self._counters, name)

    def register(self, name: str) -> Indexed:
        return self._find("register", self._registers, name)

    def tables(self) -> list[Table]:
        return list(self._tables.values())

    def counters(self) -> list[Indexed]:
        return list(self._counters.values())

    def registers(self) -> list[Indexed]:
        return list(self._registers.values())

    def name_of(self, object_id: int) -> str:
        return self._names.get(object_id, f"<id {object_id}>")
