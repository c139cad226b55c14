"""Stage 2b: typed syntax tree nodes produced by the parser.

Nodes are plain dataclasses (identity equality, so later stages can key maps by node). The checker
annotates expressions with `.type` (a `types.Type`) and name references with `.decl`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional

from .errors import Location


@dataclass(eq=False)
class Node:
    loc: Location


@dataclass(eq=False)
class Annotation(Node):
    name: str
    args: list  # expressions when parseable, else raw token texts
    raw: str = ""


def find_annotation(annotations, name):
    for a in annotations or ():
        if a.name == name:
            return a
    return None


def name_annotation(annotations) -> str | None:
    """The string of an `@name("...")` among `annotations`, or None."""
    ann = find_annotation(annotations, "name")
    if ann is not None and ann.args and isinstance(ann.args[0], StrLit):
        return ann.args[0].value
    return None


# ---- types as written ------------------------------------------------------------------------
@dataclass(eq=False)
class TypeRef(Node):
    pass


@dataclass(eq=False)
class BitTypeRef(TypeRef):
    width: "Expr"
    signed: bool = False


@dataclass(eq=False)
class VarbitTypeRef(TypeRef):
    width: "Expr"


@dataclass(eq=False)
class SimpleTypeRef(TypeRef):
    name: str  # bool, error, string, void, match_kind, int (arbitrary precision), _


@dataclass(eq=False)
class NamedTypeRef(TypeRef):
    name: str
    args: list = field(default_factory=list)


@dataclass(eq=False)
class StackTypeRef(TypeRef):
    element: TypeRef
    size: "Expr"


@dataclass(eq=False)
class TupleTypeRef(TypeRef):
    args: list


# ---- expressions ---------------------------------------------------------------------------
@dataclass(eq=False)
class Expr(Node):
    pass


@dataclass(eq=False)
class IntLit(Expr):
    value: int
    width: Optional[int] = None
    signed: bool = False
    base: int = 10       # as written (0x.. 16, 0b.. 2, 0o.. 8): p4c names keys with it


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class StrLit(Expr):
    value: str


@dataclass(eq=False)
class Name(Expr):
    name: str
    top_level: bool = False  # written as .name


@dataclass(eq=False)
class Member(Expr):
    expr: Expr
    name: str


@dataclass(eq=False)
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass(eq=False)
class Argument(Node):
    value: Expr
    name: Optional[str] = None


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    type_args: list
    args: list  # Argument


@dataclass(eq=False)
class Unary(Expr):
    op: str  # ! ~ - +
    expr: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Cast(Expr):
    type_ref: TypeRef
    expr: Expr


@dataclass(eq=False)
class ListExpr(Expr):
    items: list


@dataclass(eq=False)
class StructExpr(Expr):
    """{ a = 1, b = 2 }"""
    fields: list  # (name, Expr)


@dataclass(eq=False)
class Mask(Expr):
    value: Expr
    mask: Expr


@dataclass(eq=False)
class Range(Expr):
    low: Expr
    high: Expr


@dataclass(eq=False)
class Default(Expr):
    pass


@dataclass(eq=False)
class DontCare(Expr):
    pass


@dataclass(eq=False)
class InvalidValue(Expr):
    """`{#}` (P4_16 1.2.2): an invalid header or header union, of the type its context gives."""


@dataclass(eq=False)
class DefaultValue(Expr):
    """`...` (P4_16 1.2.3): the default value of the type its context gives; as the last item
    of a list or structure-valued expression, the default of every member not given."""


@dataclass(eq=False)
class TypeExpr(Expr):
    """A type used where an expression is expected, e.g. `bit<8>` in `(bit<8>)` or a type name."""
    type_ref: TypeRef


# ---- statements ----------------------------------------------------------------------------
@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Assign(Stmt):
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class CallStmt(Stmt):
    call: Call


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt]


@dataclass(eq=False)
class Block(Stmt):
    stmts: list
    annotations: list = field(default_factory=list)


@dataclass(eq=False)
class Exit(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Optional[Expr]


@dataclass(eq=False)
class SwitchCase(Node):
    labels: list  # Expr (Name of action, constant, Default)
    body: Optional[Block]  # None: fall through to the next case


@dataclass(eq=False)
class Switch(Stmt):
    expr: Expr
    cases: list


@dataclass(eq=False)
class VarDecl(Stmt):
    type_ref: TypeRef
    name: str
    init: Optional[Expr]
    annotations: list = field(default_factory=list)


@dataclass(eq=False)
class Empty(Stmt):
    pass


@dataclass(eq=False)
class For(Stmt):
    """`for (init; cond; update) body` (P4_16 1.2.4); the checker unrolls it (`loops.py`)."""
    init: list  # VarDecl | Assign
    cond: Optional[Expr]
    update: list  # Assign | CallStmt
    body: Stmt


@dataclass(eq=False)
class ForIn(Stmt):
    """`for (T x in collection) body`: a range `a .. b`, a list `{...}` or a header stack."""
    type_ref: TypeRef
    name: str
    collection: Expr
    body: Stmt


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


# ---- declarations --------------------------------------------------------------------------
@dataclass(eq=False)
class Decl(Node):
    name: str
    annotations: list = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class Param(Decl):
    direction: str  # '', in, out, inout
    type_ref: TypeRef
    default: Optional[Expr] = None


@dataclass(eq=False)
class ConstDecl(Decl):
    type_ref: TypeRef
    value: Expr


@dataclass(eq=False)
class TypedefDecl(Decl):
    type_ref: TypeRef
    new_type: bool = False  # `type` rather than `typedef`


@dataclass(eq=False)
class FieldDecl(Decl):
    type_ref: TypeRef


@dataclass(eq=False)
class StructLikeDecl(Decl):
    kind: str  # header, header_union, struct
    fields: list
    type_params: list = field(default_factory=list)


@dataclass(eq=False)
class EnumDecl(Decl):
    members: list  # (name, Expr | None, Location)
    underlying: Optional[TypeRef] = None


@dataclass(eq=False)
class ErrorDecl(Decl):
    members: list  # (name, Location)


@dataclass(eq=False)
class MatchKindDecl(Decl):
    members: list


@dataclass(eq=False)
class MethodDecl(Decl):
    return_type: Optional[TypeRef]  # None: constructor
    type_params: list
    params: list
    abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Decl):
    type_params: list
    methods: list  # MethodDecl (constructors have return_type None)


@dataclass(eq=False)
class ExternFunctionDecl(Decl):
    return_type: TypeRef
    type_params: list
    params: list


@dataclass(eq=False)
class FunctionDecl(Decl):
    return_type: TypeRef
    type_params: list
    params: list
    body: Block


@dataclass(eq=False)
class ActionDecl(Decl):
    params: list
    body: Block


@dataclass(eq=False)
class TableProperty(Node):
    name: str
    value: object  # list of KeyElement / list of ActionRef / Expr / list of Entry
    const: bool = False
    annotations: list = field(default_factory=list)


@dataclass(eq=False)
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list = field(default_factory=list)


@dataclass(eq=False)
class ActionRef(Node):
    name: Expr  # Name or Call
    annotations: list = field(default_factory=list)


@dataclass(eq=False)
class Entry(Node):
    keys: list  # Expr
    action: Expr  # Call or Name
    priority: Optional[Expr] = None
    annotations: list = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    properties: list


@dataclass(eq=False)
class InstanceDecl(Decl):
    type_ref: TypeRef
    args: list  # Argument
    initializer: Optional[Block] = None


@dataclass(eq=False)
class ValueSetDecl(Decl):
    type_ref: TypeRef
    size: Expr


@dataclass(eq=False)
class SelectCase(Node):
    keyset: Expr
    state: str


@dataclass(eq=False)
class Transition(Node):
    """`transition name;` (select is None) or `transition select(...) {...}`."""
    state: Optional[str]
    select: Optional[list] = None  # Expr
    cases: list = field(default_factory=list)


@dataclass(eq=False)
class StateDecl(Decl):
    stmts: list
    transition: Optional[Transition]


@dataclass(eq=False)
class ParserDecl(Decl):
    type_params: list
    params: list
    ctor_params: list
    locals: list
    states: list
    is_type: bool = False


@dataclass(eq=False)
class ControlDecl(Decl):
    type_params: list
    params: list
    ctor_params: list
    locals: list
    apply: Optional[Block]
    is_type: bool = False


@dataclass(eq=False)
class PackageDecl(Decl):
    type_params: list
    params: list


@dataclass(eq=False)
class Program(Node):
    decls: list


def clone(node):
    """A fresh copy of a syntax tree, without what the checker attached (types, declarations),
    so that desugaring can reuse a piece of source and check it again."""
    if isinstance(node, list):
        return [clone(x) for x in node]
    if isinstance(node, tuple):
        return tuple(clone(x) for x in node)
    if isinstance(node, Node):
        new = type(node)(**{f.name: clone(getattr(node, f.name)) for f in fields(node)})
        if hasattr(node, "name_loc"):
            new.name_loc = node.name_loc
        if getattr(node, "is_const", False):
            new.is_const = True
        return new
    return node


def become(old: Node, new: Node) -> None:
    """Turns `old` into `new` in place, for rewrites where the parent holding `old` is unknown."""
    old.__class__ = new.__class__
    old.__dict__.clear()
    old.__dict__.update(new.__dict__)


def statement_calls(node):
    """Calls made as statements under `node` (blocks, ifs, switch cases): what an apply
    block calls directly."""
    if isinstance(node, CallStmt):
        yield node.call
    elif isinstance(node, Block):
        for st in node.stmts:
            yield from statement_calls(st)
    elif isinstance(node, If):
        yield from statement_calls(node.then)
        yield from statement_calls(node.other)
    elif isinstance(node, Switch):
        for c in node.cases:
            yield from statement_calls(c.body)


def walk(e, instead=None):
    """Every node of a tree (or list of trees), parents before children. `instead(node)` may
    give what to yield in place of a node and its subtree (None: the node as usual)."""
    if isinstance(e, Node):
        if instead is not None:
            replaced = instead(e)
            if replaced is not None:
                yield from replaced
                return
        yield e
        for f in e.__dataclass_fields__:
            yield from walk(getattr(e, f), instead)
    elif isinstance(e, (list, tuple)):
        for x in e:
            yield from walk(x, instead)
