"""The generated program's skeleton as data: headers, parser states, externs, actions, tables.

The generator fills these in, `render.py` writes them as P4 and `stf.py` derives packets and
control-plane commands from them; the runner only ever sees the resulting text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ptypes import Ty


@dataclass
class Header:
    name: str                         # instance name: hdr.<name>
    fields: list[tuple[str, Ty]]
    stack: int = 0                    # a header stack of this many elements (0: a header)
    # a last field `varbit<varbit> opt` (0: none), extracted with as many bytes as the low
    # `length_bits` bits of `hdr.<length_source>` say (more than it holds: HeaderTooShort)
    varbit: int = 0
    length_source: str = ""           # "h0.f1": a field of the header `start` extracts
    length_bits: int = 0

    @property
    def length_expr(self) -> str:
        """The extract's length in bits, as P4."""
        return f"((bit<32>)hdr.{self.length_source}[{self.length_bits - 1}:0]) << 3"

    def elements(self) -> list[str]:
        """The instances fields are read through: `hdr.h0`, or `hdr.hs[0]`, `hdr.hs[1]`..."""
        if not self.stack:
            return [f"hdr.{self.name}"]
        return [f"hdr.{self.name}[{i}]" for i in range(self.stack)]

    @property
    def type_name(self) -> str:
        return f"{self.name}_t"

    @property
    def width(self) -> int:
        """The fixed fields' bits (the varbit's are the packet's to say)."""
        return sum(ty.width for _, ty in self.fields)


@dataclass
class SelectCase:
    values: list[str]                 # one P4 keyset text per select key ("5", "0x4 &&& 0xc", "_")
    target: str                       # state name or "accept"/"reject"
    matches: list[tuple[int, int]]    # per key (value, mask) the generator can use to hit it


@dataclass
class ParserState:
    name: str
    header: str                       # header extracted on entry
    sets: list[str] = field(default_factory=list)       # assignments after the extract
    keys: list[tuple[str, int]] = field(default_factory=list)   # (field name, width)
    cases: list[SelectCase] = field(default_factory=list)
    default: str = "accept"
    advance: int = 0                  # bytes skipped (`pkt.advance`) after the extract
    verify: str = ""                  # a `verify(condition, error.X);` after the assignments


@dataclass
class Register:
    name: str
    elem: Ty
    size: int


@dataclass
class Counter:
    name: str
    size: int
    kind: str                          # packets | bytes | packets_and_bytes


@dataclass
class Action:
    name: str
    params: list[tuple[str, Ty]]                         # action data (directionless)
    body: list[str] = field(default_factory=list)       # statement lines (already indented)
    # directional parameters, before the data ones: (name, "in" | "inout", type); a table's
    # actions list, its entries and a direct call give them arguments
    bound: list[tuple[str, str, Ty]] = field(default_factory=list)


@dataclass
class TableKey:
    expr: str                          # P4 key expression
    match: str                         # exact | ternary | lpm | range | optional
    ty: Ty                             # bool for isValid()
    stf_name: str | None = None        # name usable in an STF `add` (plain fields only)


@dataclass
class Table:
    name: str
    keys: list[TableKey]
    actions: list[str]
    default: tuple[str, list[int]]
    const_entries: list[tuple[list[str], str, list[int]]] | None = None   # keysets, action, args
    runtime_entries: list[tuple[list[str], str, list[int]]] = field(default_factory=list)
    bound_args: dict[str, str] = field(default_factory=dict)  # action -> its directional args


@dataclass
class Control:
    name: str
    ingress: bool
    registers: list[Register] = field(default_factory=list)
    counters: list[Counter] = field(default_factory=list)
    locals: list[str] = field(default_factory=list)     # control-level declarations
    actions: list[Action] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    apply: list[str] = field(default_factory=list)
    # the struct type of each `digest` call: (type name, its fields' types)
    digests: list[tuple[str, list[Ty]]] = field(default_factory=list)
    # a sub-control (declared at the top, applied from ingress): its extra parameters after
    # `hdr` and `meta` ("in bit<8> a, inout bit<8> b"); it sees no standard_metadata
    params: str | None = None
    subs: list["Control"] = field(default_factory=list)     # the sub-controls it applies


@dataclass
class Program:
    headers: list[Header]
    meta: list[tuple[str, Ty]]
    states: list[ParserState]
    ingress: Control
    egress: Control
    emit_order: list[str]
    verify: list[str] = field(default_factory=list)     # the checksum verification's statements
    compute: list[str] = field(default_factory=list)    # the checksum computation's
    errors: list[str] = field(default_factory=list)     # the program's own `error` members
