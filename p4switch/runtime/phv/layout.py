"""The PHV layout: where every field and header of a program lives in the flat packet state.

A packet's state is two Python lists: `f` (one int per field, plus a few hidden per-packet slots)
and `v` (one 0/1 validity flag per header instance). Generated code indexes them with constants,
so a field access is one list subscript. The native code (cgen/) holds the same PHV a second
way: its *words* (`word_slots`) and every flag as C integers indexed by the same slots. Header
stacks get contiguous slots with a fixed stride so that a run-time index (`hdr.stack[i]`,
`extract(stack.next)`) is arithmetic, not a lookup.
Signed fields hold their signed value; everything else holds a non-negative int.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import MAX_WIDTH, Node

# Hidden per-packet slots at the start of `f` (before the fields). 0 always means "not requested".
EXIT = 0          # `exit` was executed in the current control
CLONE = 1         # clone session + 1
CLONE_FL = 2      # field list id preserved by the clone
RESUBMIT = 3      # field list id + 1
RECIRCULATE = 4   # field list id + 1
TRUNCATE = 5      # truncate length + 1 (bytes)
LEARN = 6         # id of the learn list the last `generate_digest` named
FIRST_FIELD_SLOT = 7

STANDARD_METADATA = "standard_metadata"


@dataclass
class HeaderType:
    name: str
    fields: list[tuple[str, int | None, bool]]  # (name, width or None for varbit, signed)
    length_exp: Node | None = None
    max_length: int | None = None  # bytes, for headers with a varbit field

    @property
    def fixed_bits(self) -> int:
        return sum(w for _, w, _ in self.fields if w is not None)

    @property
    def varbit_index(self) -> int | None:
        return next((i for i, (_, w, _) in enumerate(self.fields) if w is None), None)


@dataclass
class HeaderInstance:
    name: str
    index: int            # validity slot in `v`
    htype: HeaderType
    metadata: bool
    base: int             # slot of the first field in `f`
    varbit_len_slot: int | None = None  # slot holding the varbit field's current length in bits
    union: str | None = None            # the header union this instance belongs to, if any

    def slot(self, field_name: str) -> int | None:
        for i, (name, _, _) in enumerate(self.htype.fields):
            if name == field_name:
                return self.base + i
        return None


@dataclass
class HeaderStack:
    name: str
    htype: HeaderType
    headers: list[HeaderInstance]
    next_slot: int        # slot in `f` holding the stack's next index

    @property
    def size(self) -> int:
        return len(self.headers)

    @property
    def stride(self) -> int:
        return len(self.htype.fields)


@dataclass
class HeaderUnion:
    name: str
    members: dict[str, HeaderInstance]


@dataclass
class HeaderUnionStack:
    name: str
    unions: list[HeaderUnion]
    next_slot: int        # slot in `f` holding the stack's next index

    @property
    def size(self) -> int:
        return len(self.unions)


@dataclass
class FieldRef:
    """A statically known field: its slot, width and sign; or a header's validity bit."""

    header: HeaderInstance
    slot: int | None      # None for `$valid$`
    width: int | None     # None for a varbit field
    signed: bool

    @property
    def is_valid_bit(self) -> bool:
        return self.slot is None


@dataclass
class Layout:
    header_types: dict[str, HeaderType] = field(default_factory=dict)
    headers: dict[str, HeaderInstance] = field(default_factory=dict)
    header_list: list[HeaderInstance] = field(default_factory=list)  # by validity index
    stacks: dict[str, HeaderStack] = field(default_factory=dict)
    unions: dict[str, HeaderUnion] = field(default_factory=dict)
    union_stacks: dict[str, HeaderUnionStack] = field(default_factory=dict)
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    num_slots: int = FIRST_FIELD_SLOT
    slot_names: list[str] = field(default_factory=list)
    scratch: int = 0  # a slot nobody reads: where writes to undeclared metadata go
    # the packet's length as received (BMv2's ingress length): what counters and byte meters
    # count, while standard_metadata.packet_length in egress is the length after ingress
    ingress_length: int = 0

    # ----------------------------------------------------------------- lookups used by codegen
    def header(self, name: str, where: Node) -> HeaderInstance:
        inst = self.headers.get(name)
        if inst is None:
            raise where.error(f"unknown header instance '{name}'")
        return inst

    def stack(self, name: str, where: Node) -> HeaderStack:
        stack = self.stacks.get(name)
        if stack is None:
            raise where.error(f"unknown header stack '{name}'")
        return stack

    def union(self, name: str, where: Node) -> HeaderUnion:
        union = self.unions.get(name)
        if union is None:
            raise where.error(f"unknown header union '{name}'")
        return union

    def field(self, header_name: str, field_name: str, where: Node) -> FieldRef:
        if header_name not in self.headers:
            alias = self.aliases.get(f"{header_name}.{field_name}")
            if alias is not None:
                header_name, field_name = alias
        inst = self.header(header_name, where)
        if field_name == "$valid$":
            return FieldRef(inst, None, 1, False)
        for i, (name, width, signed) in enumerate(inst.htype.fields):
            if name == field_name:
                return FieldRef(inst, inst.base + i, width, signed)
        raise where.error(f"header '{header_name}' has no field '{field_name}'")

    def drop_slots(self, params, where: Node) -> tuple[int | None, int | None]:
        """The egress_spec and mcast_grp slots `mark_to_drop` writes: of the header it is given
        (as simple_switch, which writes the header passed, e.g. a copy of standard_metadata a
        function took), else of standard_metadata (`drop`, no parameter)."""
        if params:
            kind, value = params[0].type_value()
            if kind != "header":
                raise where.error("mark_to_drop takes a header (standard_metadata or a copy)")
            inst = self.header(value.str(), where)
            return inst.slot("egress_spec"), inst.slot("mcast_grp")
        return self.std("egress_spec"), self.std("mcast_grp")

    def std(self, field_name: str) -> int | None:
        """Slot of a standard_metadata field, or None if the program does not declare it."""
        inst = self.headers.get(STANDARD_METADATA)
        return inst.slot(field_name) if inst is not None else None

    def initial_state(self) -> tuple[list[int], list[int]]:
        fields = [0] * self.num_slots
        valid = [1 if h.metadata else 0 for h in self.header_list]
        return fields, valid


def build_layout(doc: Node) -> Layout:
    layout = Layout()
    layout.slot_names = ["$exit", "$clone", "$clone_fl", "$resubmit", "$recirculate", "$truncate"]
    for node in doc.get("header_types").items():
        fields = []
        for fnode in node["fields"].items():
            parts = fnode.list()
            if len(parts) not in (2, 3):
                raise fnode.error("a field must be [name, width] or [name, width, signed]")
            name = fnode[0].str()
            width = None if parts[1] == "*" else fnode[1].int(0, MAX_WIDTH)
            signed = fnode[2].bool() if len(parts) == 3 else False
            fields.append((name, width, signed))
        htype = HeaderType(node["name"].str(), fields)
        if htype.varbit_index is not None:
            if sum(1 for _, w, _ in fields if w is None) > 1:
                raise node.error("at most one variable-length field per header type")
            htype.length_exp = node.get("length_exp") if node.has("length_exp") else None
            htype.max_length = node["max_length"].int(0, MAX_WIDTH) if node.has("max_length") else None
        layout.header_types[htype.name] = htype

    header_nodes = {}
    for node in doc.get("headers").items():
        hid = node["id"].int()
        if hid in header_nodes:
            raise node.error(f"duplicate header id {hid}")
        header_nodes[hid] = node

    # Stack members first, contiguously and in stack order, so run-time indexing is arithmetic.
    order: list[tuple[int, Node]] = []
    placed: set[int] = set()
    stack_nodes = doc.get("header_stacks").items()
    for snode in stack_nodes:
        for i, id_node in enumerate(snode["header_ids"].items()):
            hid = id_node.int()
            if hid not in header_nodes:
                raise id_node.error(f"unknown header id {hid}")
            if hid in placed:
                raise id_node.error(f"header id {hid} is in two stacks")
            placed.add(hid)
            order.append((hid, header_nodes[hid]))
    order += [(hid, n) for hid, n in header_nodes.items() if hid not in placed]

    for hid, node in order:
        type_name = node["header_type"].str()
        htype = layout.header_types.get(type_name)
        if htype is None:
            raise node["header_type"].error(f"unknown header type '{type_name}'")
        name = node["name"].str()
        if name in layout.headers:
            raise node["name"].error(f"duplicate header instance '{name}'")
        inst = HeaderInstance(name, len(layout.header_list), htype,
                              bool(node.get("metadata", False).value), -1)
        layout.headers[name] = inst
        layout.header_list.append(inst)
    # Slots: every header in order, except that headers ending in a long run of lane-like
    # fields come last, after the hidden slots, longest run last: when that run becomes a
    # vector run (one array in its first slot), the PHV of the untraced code ends there
    # (`Engine`), and copying a packet's PHV skips the run's unused slots.
    tail = sorted((inst for (hid, _), inst in zip(order, layout.header_list)
                   if hid not in placed and inst.name != STANDARD_METADATA
                   and trailing_lane_run(inst.htype) >= MIN_TAIL_RUN),
                  key=lambda inst: trailing_lane_run(inst.htype))
    tail_ids = {id(inst) for inst in tail}
    for inst in layout.header_list:
        if id(inst) not in tail_ids:
            _place(layout, inst)
    for inst in layout.header_list:
        if inst.htype.varbit_index is not None:
            inst.varbit_len_slot = _new_slot(layout, f"{inst.name}.$varbit_len")

    by_id = {hid: layout.headers[n["name"].str()] for hid, n in header_nodes.items()}
    for snode in stack_nodes:
        members = [by_id[i.int()] for i in snode["header_ids"].items()]
        name = snode["name"].str()
        if not members:
            raise snode.error("a header stack needs at least one header")
        htype = members[0].htype
        if any(m.htype is not htype for m in members):
            raise snode.error("stack members must share one header type")
        layout.stacks[name] = HeaderStack(name, htype, members, _new_slot(layout, f"{name}.$next"))

    unions_by_id = {}
    for unode in doc.get("header_unions").items():
        members = {}
        for id_node in unode["header_ids"].items():
            inst = by_id.get(id_node.int())
            if inst is None:
                raise id_node.error(f"unknown header id {id_node.int()}")
            members[inst.name] = inst
        union = HeaderUnion(unode["name"].str(), members)
        for inst in members.values():
            inst.union = union.name
        layout.unions[union.name] = union
        unions_by_id[unode["id"].int()] = union
    for usnode in doc.get("header_union_stacks").items():
        items = []
        for id_node in usnode["header_union_ids"].items():
            if id_node.int() not in unions_by_id:
                raise id_node.error(f"unknown header union id {id_node.int()}")
            items.append(unions_by_id[id_node.int()])
        if not items:
            raise usnode.error("a header union stack needs at least one union")
        name = usnode["name"].str()
        layout.union_stacks[name] = HeaderUnionStack(name, items,
                                                     _new_slot(layout, f"{name}.$next"))

    layout.scratch = _new_slot(layout, "$scratch")
    layout.ingress_length = _new_slot(layout, "$ingress_length")
    for inst in tail:
        _place(layout, inst)
    for anode in doc.get("field_aliases").items():
        target = anode[1]
        layout.aliases[anode[0].str()] = (target[0].str(), target[1].str())
    for enode in doc.get("errors").items():
        layout.errors[enode[0].str()] = enode[1].int()
    return layout


def word_slots(layout: Layout, vector_slots=frozenset()) -> tuple[int, ...]:
    """The slots of `f` whose value is always an int in [0, 2**64): the hidden request slots,
    the ingress length and every unsigned field of a fixed width of at most 64 bits that is not
    in a lane vector (`vector_slots`). The native code keeps exactly these (and every validity
    flag) as C integers, `F[slot]` and `V[index]`; everything else (signed, varbit and wider
    fields, lane vectors, stack indexes, the scratch slot) is only ever in the list `f`. One
    definition for both views: the C code reads and writes only these slots, and copies them
    between its words and the lists where Python code runs (cgen/nativefast.py)."""
    words = list(range(FIRST_FIELD_SLOT)) + [layout.ingress_length]
    for inst in layout.header_list:
        for i, (_, width, signed) in enumerate(inst.htype.fields):
            slot = inst.base + i
            if width is not None and width <= 64 and not signed and slot not in vector_slots:
                words.append(slot)
    return tuple(sorted(set(words)))


MIN_TAIL_RUN = 16      # lane groups need at least 16 copies (lanegroups.py)
LANE_WIDTHS = (8, 16, 32, 64)


def trailing_lane_run(htype: HeaderType) -> int:
    """How many fields at the end of `htype` have one width of 8/16/32/64 bits and start on
    a byte (what a vector run needs; vheaders.py decides, this only orders slots)."""
    fields = htype.fields
    if not fields or htype.varbit_index is not None:
        return 0
    width = fields[-1][1]
    if width not in LANE_WIDTHS:
        return 0
    count = 0
    for _, w, _ in reversed(fields):
        if w != width:
            break
        count += 1
    before = sum(w for _, w, _ in fields[:len(fields) - count])
    return count if before % 8 == 0 else 0


def _place(layout: Layout, inst: HeaderInstance) -> None:
    inst.base = layout.num_slots
    layout.num_slots += len(inst.htype.fields)
    layout.slot_names += [f"{inst.name}.{fname}" for fname, _, _ in inst.htype.fields]


def _new_slot(layout: Layout, name: str) -> int:
    layout.num_slots += 1
    layout.slot_names.append(name)
    return layout.num_slots - 1
