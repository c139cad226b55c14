"""Semantic types the checker assigns to expressions and declarations."""

from __future__ import annotations

from dataclasses import dataclass, field


class Type:
    def describe(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class BitT(Type):
    width: int
    signed: bool = False

    def describe(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class IntT(Type):
    """An integer literal without a width (arbitrary precision, `int`)."""

    def describe(self) -> str:
        return "int"


@dataclass(frozen=True)
class VarbitT(Type):
    max_width: int

    def describe(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class SimpleT(Type):
    name: str  # bool, string, error, void, match_kind, dontcare

    def describe(self) -> str:
        return self.name


BOOL = SimpleT("bool")
STRING = SimpleT("string")
ERROR = SimpleT("error")
VOID = SimpleT("void")
MATCH_KIND = SimpleT("match_kind")
DONTCARE = SimpleT("_")
INT = IntT()


@dataclass(frozen=True)
class NewBitT(BitT):
    """A type made by `type bit<W> T;` (P4_16 7.6): stored as its base, but a distinct type.

    p4c allows on it only assignment, `==`/`!=` against the same type, casts to and from its
    base, and use as a table key or action parameter; P4Info names it (type_name)."""
    name: str = ""
    base: Type | None = None
    translation: tuple = ()  # @p4runtime_translation: (uri, sdn bitwidth or "string")
    annotations: tuple = field(default=(), compare=False)   # the declaration's, for P4Info

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class NewBoolT(SimpleT):
    """A type made by `type bool T;` (`name` is T): a bool in storage, but not a condition."""
    base: Type | None = None
    translation: tuple = ()
    annotations: tuple = field(default=(), compare=False)   # the declaration's, for P4Info


NEW_TYPES = (NewBitT, NewBoolT)


def new_type(name: str, base: Type, translation: tuple = (), annotations: tuple = ()) \
        -> Type | None:
    """The type `type <base> name;` declares, or None if p4c refuses that base (only bit<>,
    int<>, bool and other such types may be renamed)."""
    if isinstance(base, BitT):
        return NewBitT(base.width, base.signed, name, base, translation, annotations)
    if base == BOOL or isinstance(base, NewBoolT):
        return NewBoolT(name, base, translation, annotations)
    return None


def original_type(t: Type) -> Type:
    """The bit<>, int<> or bool under any number of `type` renamings."""
    while isinstance(t, NEW_TYPES):
        t = t.base
    return t


@dataclass(eq=False)
class StructT(Type):
    kind: str  # header, header_union, struct
    name: str
    fields: list = field(default_factory=list)  # (name, Type, annotations)
    decl: object = None

    def field_type(self, name: str):
        for n, t, _ in self.fields:
            if n == name:
                return t
        return None

    def describe(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class StackT(Type):
    element: Type
    size: int

    def describe(self) -> str:
        return f"{self.element.describe()}[{self.size}]"


@dataclass(eq=False)
class EnumT(Type):
    name: str
    members: dict  # name -> int value
    underlying: BitT | None = None
    decl: object = None

    def describe(self) -> str:
        return f"enum {self.name}"


@dataclass(frozen=True)
class TupleT(Type):
    items: tuple

    def describe(self) -> str:
        return "tuple<" + ", ".join(t.describe() for t in self.items) + ">"


@dataclass(frozen=True)
class TypeVarT(Type):
    """An unbound type parameter of an extern or generic declaration: matches anything."""
    name: str

    def describe(self) -> str:
        return self.name


@dataclass(eq=False)
class NamedT(Type):
    """Things that are not values: extern/parser/control/package types, tables, actions."""
    category: str  # extern, parser, control, package, table, action, function, type, namespace
    name: str
    decl: object = None
    type_args: tuple = ()

    def describe(self) -> str:
        return f"{self.category} {self.name}"


@dataclass(frozen=True)
class MethodT(Type):
    owner: str  # 'header', 'stack', 'extern', 'table', 'union', 'packet_in', ...
    name: str
    decl: object = None

    def describe(self) -> str:
        return f"method {self.name}"


@dataclass(eq=False)
class ApplyResultT(Type):
    table: object  # TableDecl

    def describe(self) -> str:
        return "table apply result"


def bit_width(t: Type) -> int | None:
    """Width in bits of a value of type t, or None if it has none (int, string, ...)."""
    if isinstance(t, BitT):
        return t.width
    if t == BOOL or isinstance(t, NewBoolT):
        return 1
    if t == ERROR:
        return 32
    if isinstance(t, EnumT):
        return t.underlying.width if t.underlying else 32
    if isinstance(t, StructT):
        total = 0
        for _, ft, _ in t.fields:
            w = bit_width(ft)
            if w is None:
                return None
            total += w
        return total
    if isinstance(t, StackT):
        w = bit_width(t.element)
        return None if w is None else w * t.size
    if isinstance(t, VarbitT):
        return t.max_width
    return None


def is_bool(t: Type) -> bool:
    """A bool in storage and in BMv2: `bool` or a type made from it by `type`."""
    return t == BOOL or isinstance(t, NewBoolT)


def is_header(t: Type) -> bool:
    return isinstance(t, StructT) and t.kind == "header"


def is_numeric(t: Type) -> bool:
    return isinstance(t, (BitT, IntT))


def key_compatible(key_type: Type, value_type: Type, in_select: bool = True) -> bool:
    """Whether a select case's or table entry's value of `value_type` may match a key of
    `key_type`, as p4c types them: the same type; a literal without a width for bits or a
    serializable enum; an enum's underlying bits for the enum (in a select, not an entry)."""
    if value_type == key_type or isinstance(value_type, TypeVarT) or value_type == DONTCARE:
        return True
    if isinstance(key_type, EnumT) and not in_select:
        return False
    if isinstance(value_type, IntT):
        return isinstance(key_type, (BitT, IntT)) and not isinstance(key_type, NEW_TYPES) or \
            isinstance(key_type, EnumT) and key_type.underlying is not None
    if isinstance(key_type, EnumT) and key_type.underlying is not None:
        return value_type == key_type.underlying
    if isinstance(value_type, EnumT) and value_type.underlying is not None:
        return value_type.underlying == key_type
    return isinstance(key_type, StructT) and isinstance(value_type, StructT) and \
        key_type.name == value_type.name
