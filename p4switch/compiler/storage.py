"""Lowering, part 1: where P4 values live in BMv2.

Headers become header instances; bit/bool/enum metadata and locals become fields of the single
`scalars` metadata header (as p4c does); structs are flattened into the storage of their fields;
stacks into numbered header instances. `Storage` objects are what lowering resolves P4 l-values to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .bmv2_forms import operand
from .types import ERROR, BitT, EnumT, StackT, StructT, Type, VarbitT, bit_width, is_bool

STANDARD_METADATA_FIELDS = [
    ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
    ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19), ("deq_timedelta", 32),
    ("deq_qdepth", 19), ("ingress_global_timestamp", 48), ("egress_global_timestamp", 48),
    ("mcast_grp", 16), ("egress_rid", 16), ("checksum_error", 1), ("parser_error", 32),
    ("priority", 3),
]


@dataclass(eq=False)
class FieldRef:
    """A scalar location: a field of a header instance."""
    header: str
    name: str
    type: Type

    def json(self) -> dict:
        return {"type": "field", "value": [self.header, self.name]}


@dataclass(eq=False)
class DynamicField(FieldRef):
    """A field of a stack element chosen at run time: `stack[i].f`, i not a constant."""
    stack: "StackStore" = None
    index: dict = None  # the index, as a BMv2 expression
    offset: int = 0

    def json(self) -> dict:
        element = {"type": "expression", "value": {
            "op": "dereference_header_stack", "left": {"type": "header_stack", "value": self.stack.name},
            "right": operand(self.index)}}
        return {"type": "expression", "value": {"op": "access_field", "left": element,
                                                "right": self.offset}}


@dataclass(eq=False)
class DynamicElement:
    stack: "StackStore"
    index: dict

    def json(self) -> dict:
        return {"type": "expression", "value": {
            "op": "dereference_header_stack", "left": {"type": "header_stack", "value": self.stack.name},
            "right": operand(self.index)}}


@dataclass(eq=False)
class HeaderInst:
    name: str
    type: StructT
    metadata: bool = False

    def field(self, name: str) -> FieldRef:
        return FieldRef(self.name, name, self.type.field_type(name))


class StorageUnsupported(ValueError):
    """A type the layout cannot place (a varbit outside a header, a tuple of stacks)."""


@dataclass(eq=False)
class StackStore:
    name: str
    type: StackT
    elements: list


@dataclass(eq=False)
class UnionStore:
    name: str
    type: StructT
    members: dict  # name -> HeaderInst


@dataclass(eq=False)
class StructStore:
    type: StructT
    fields: dict  # name -> storage


@dataclass(eq=False)
class RuntimeData:
    """An action parameter supplied by the table entry."""
    index: int
    type: Type

    def json(self) -> dict:
        return {"type": "runtime_data", "value": self.index}


@dataclass
class Layout:
    """The header types, instances, stacks and unions of the BMv2 program being built."""

    header_types: dict = field(default_factory=dict)  # name -> [(field, width, signed)]
    header_type_extra: dict = field(default_factory=dict)
    headers: list = field(default_factory=list)  # (name, type name, metadata)
    stacks: list = field(default_factory=list)   # (name, type name, [header ids])
    union_types: dict = field(default_factory=dict)
    unions: list = field(default_factory=list)
    union_stacks: list = field(default_factory=list)  # (name, union type name, [union ids])
    scalars: list = field(default_factory=list)  # (name, width, signed)
    used_names: set = field(default_factory=set)
    scalar_names: set = field(default_factory=set)
    header_structs: dict = field(default_factory=dict)  # name -> StructT of each header type

    def __post_init__(self):
        self.header_types["scalars_0"] = self.scalars
        self.add_instance("scalars", "scalars_0", True)
        self.header_types["standard_metadata"] = [(n, w, False) for n, w in STANDARD_METADATA_FIELDS]
        self.header_types["standard_metadata"].append(("_padding", 3, False))
        self.add_instance("standard_metadata", "standard_metadata", True)

    def unique(self, base: str) -> str:
        name, n = base, 0
        while name in self.used_names:
            name = f"{base}_{n}"
            n += 1
        self.used_names.add(name)
        return name

    def add_instance(self, name: str, type_name: str, metadata: bool) -> int:
        self.used_names.add(name)
        self.headers.append((name, type_name, metadata))
        return len(self.headers) - 1

    def header_type(self, t: StructT) -> str:
        if t.name not in self.header_types:
            self.header_structs[t.name] = t
            fields = []
            for fname, ft, _ in t.fields:
                if isinstance(ft, VarbitT):
                    fields.append((fname, "*"))  # BMv2: a variable-length field has no sign
                    self.header_type_extra[t.name] = {"max_length": (bit_width(t) + 7) // 8}
                else:
                    fields.append((fname, bit_width(ft), isinstance(ft, BitT) and ft.signed))
            self.header_types[t.name] = fields
        return t.name

    def scalar(self, base: str, t: Type) -> FieldRef:
        """A new field of `scalars` named `base` (made unique: base, base_0, base_1, ...)."""
        name = base
        n = 0
        while name in self.scalar_names:
            name = f"{base}_{n}"
            n += 1
        self.scalar_names.add(name)
        width = bit_width(t) if not isinstance(t, EnumT) or t.underlying else 32
        signed = isinstance(t, BitT) and t.signed
        self.scalars.append((name, width, signed))
        return FieldRef("scalars", name, t)

    def temp(self, t: Type) -> FieldRef:
        return self.scalar("tmp", t)

    def allocate(self, t: Type, name: str, metadata_prefix: str, as_metadata: bool = False):
        """Storage for a value of type t. Headers get instances named `name`; scalars go to
        `scalars` as `metadata_prefix`."""
        if isinstance(t, StructT) and t.kind == "header":
            inst = HeaderInst(self.unique(name), t, as_metadata)
            self.add_instance(inst.name, self.header_type(t), as_metadata)
            return inst
        if isinstance(t, StructT) and t.kind == "header_union":
            uname = self.unique(name)
            members = {}
            for fname, ft, _ in t.fields:
                inst = HeaderInst(self.unique(f"{uname}.{fname}"), ft)
                members[fname] = inst
                self.add_instance(inst.name, self.header_type(ft), False)
            self.union_types.setdefault(t.name, [(f, ft.name) for f, ft, _ in t.fields])
            ids = [self._header_id(m.name) for m in members.values()]
            self.unions.append((uname, t.name, ids))
            return UnionStore(uname, t, members)
        if isinstance(t, StackT):
            sname = self.unique(name)
            elements = []
            for i in range(t.size):
                elements.append(self.allocate(t.element, f"{sname}[{i}]", ""))
            if isinstance(t.element, StructT) and t.element.kind == "header":
                ids = [self._header_id(e.name) for e in elements]
                self.stacks.append((sname, t.element.name, ids))
            if isinstance(t.element, StructT) and t.element.kind == "header_union":
                names = [u for u, _, _ in self.unions]
                ids = [names.index(e.name) for e in elements]
                self.union_stacks.append((sname, t.element.name, ids))
            return StackStore(sname, t, elements)
        if isinstance(t, StructT):
            fields = {}
            for fname, ft, _ in t.fields:
                fields[fname] = self.allocate(ft, fname if not metadata_prefix else fname,
                                              f"{metadata_prefix}.{fname}" if metadata_prefix else fname)
            return StructStore(t, fields)
        if isinstance(t, (BitT, EnumT)) or is_bool(t) or t == ERROR:
            return self.scalar(metadata_prefix or name, t)
        raise StorageUnsupported(f"inaemu's BMv2 back end cannot lay out a {t.describe()} here "
                                 "(outside headers it places bit<>, int<>, bool, enums, error, "
                                 "headers, stacks, unions and structs of them)")

    def _header_id(self, name: str) -> int:
        for i, (n, _, _) in enumerate(self.headers):
            if n == name:
                return i
        raise KeyError(name)

    def snapshot(self):
        return (len(self.scalars), set(self.scalar_names), len(self.headers), set(self.used_names),
                dict(self.header_types), len(self.stacks), len(self.unions), dict(self.union_types),
                len(self.union_stacks))

    def restore(self, snap) -> None:
        (n_scalars, scalar_names, n_headers, used, types, n_stacks, n_unions, utypes,
         n_union_stacks) = snap
        del self.scalars[n_scalars:]
        self.scalar_names = scalar_names
        del self.headers[n_headers:]
        self.used_names = used
        self.header_types.clear()
        self.header_types.update(types)
        del self.stacks[n_stacks:]
        del self.unions[n_unions:]
        del self.union_stacks[n_union_stacks:]
        self.union_types.clear()
        self.union_types.update(utypes)

    def partial_byte_headers(self) -> list[tuple[StructT, int]]:
        """The program's header types whose fields (a varbit at its maximum width) do not add
        up to whole bytes, with their width: BMv2 cannot hold them (p4c refuses them as a
        target error). The compiler's own varbit boxes are exempt."""
        found = []
        for t in self.header_structs.values():
            if getattr(t.decl, "varbit_box", False):
                continue
            total = sum(ft.max_width if isinstance(ft, VarbitT) else bit_width(ft)
                        for _, ft, _ in t.fields)
            if total % 8:
                found.append((t, total))
        return found

    def pad_scalars(self) -> None:
        """BMv2 headers are whole bytes: pad `scalars` as p4c does."""
        total = sum(w for _, w, _ in self.scalars)
        if total % 8:
            self.scalar("_padding", BitT(8 - total % 8))

    def to_json(self) -> dict:
        types = []
        for i, (name, fields) in enumerate(self.header_types.items()):
            entry = {"name": name, "id": i, "fields": [list(f) for f in fields]}
            entry.update(self.header_type_extra.get(name, {}))
            types.append(entry)
        return {
            "header_types": types,
            "headers": [{"name": n, "id": i, "header_type": t, "metadata": m, "pi_omit": True}
                        for i, (n, t, m) in enumerate(self.headers)],
            "header_stacks": [{"name": n, "id": i, "header_type": t, "size": len(ids),
                               "header_ids": ids} for i, (n, t, ids) in enumerate(self.stacks)],
            "header_union_types": [{"name": n, "id": i, "headers": [list(h) for h in hs]}
                                   for i, (n, hs) in enumerate(self.union_types.items())],
            "header_unions": [{"name": n, "id": i, "union_type": t, "header_ids": ids}
                              for i, (n, t, ids) in enumerate(self.unions)],
            "header_union_stacks": [{"name": n, "id": i, "union_type": t, "size": len(ids),
                                     "header_union_ids": ids}
                                    for i, (n, t, ids) in enumerate(self.union_stacks)],
        }
