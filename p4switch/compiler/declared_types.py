"""Stage 3 (continued): the types that declarations and written types stand for.

`resolve_type` turns a written type (`bit<8>`, `H[4]`, `pair_t<bit<8>, T>`, a name) into a
`types.Type`; `decl_type` builds, once per declaration, the type a struct, header, union, enum
or typedef makes; `specialized` builds a generic struct or header's type for one list of type
arguments (P4_16 1.2.2), named as p4c names it. The checker holds one `DeclaredTypes` and uses
its public services (`fail`, `const_int`, `top`, `r`, `header_structs`, and the type parameters
in force, `type_params`); the types made are kept here.
"""

from __future__ import annotations

from . import ast as A
from .p4c_rules import runtime_translation
from .types import (BOOL, DONTCARE, ERROR, INT, MATCH_KIND, STRING, VOID, BitT, EnumT, NamedT,
                    NewBitT, StackT, StructT, TupleT, Type, TypeVarT, VarbitT, is_header,
                    new_type)


class DeclaredTypes:
    """The declared types of one `checker.Checker`."""

    def __init__(self, checker):
        self.checker = checker
        self.type_cache: dict = {}   # id(declaration), or (id, type arguments) -> its type
        self.type_bindings: list[dict[str, Type]] = []   # a generic struct's, while specialized

    def resolve_type(self, ref: A.TypeRef, scope: "Scope") -> Type:
        if isinstance(ref, A.BitTypeRef):
            width = self.checker.const_int(ref.width, scope, "a width")
            if width <= 0 or (ref.signed and width < 2 and False):
                raise self.checker.fail(ref, f"width must be positive, not {width}")
            return BitT(width, ref.signed)
        if isinstance(ref, A.VarbitTypeRef):
            return VarbitT(self.checker.const_int(ref.width, scope, "a width"))
        if isinstance(ref, A.SimpleTypeRef):
            return {"bool": BOOL, "error": ERROR, "string": STRING, "void": VOID,
                    "match_kind": MATCH_KIND, "int": INT, "_": DONTCARE}[ref.name]
        if isinstance(ref, A.StackTypeRef):
            elem = self.resolve_type(ref.element, scope)
            size = self.checker.const_int(ref.size, scope, "a stack size")
            if size <= 0:
                raise self.checker.fail(ref, "a header stack needs a positive size")
            if not isinstance(elem, StructT) or elem.kind not in ("header", "header_union"):
                raise self.checker.fail(ref, f"a stack must hold headers, not {elem.describe()}")
            return StackT(elem, size)
        if isinstance(ref, A.TupleTypeRef):
            return TupleT(tuple(self.resolve_type(a, scope) for a in ref.args))
        if isinstance(ref, A.TypeExpr):
            return INT
        if isinstance(ref, A.NamedTypeRef):
            if self.type_bindings and ref.name in self.type_bindings[-1]:
                return self.type_bindings[-1][ref.name]
            if any(ref.name in s for s in self.checker.type_params):
                return TypeVarT(ref.name)
            decl = scope.lookup(ref.name)
            if decl is None:
                raise self.checker.fail(ref, f"unknown type '{ref.name}'")
            if isinstance(decl, A.StructLikeDecl) and (decl.type_params or ref.args):
                if len(ref.args) != len(decl.type_params):
                    raise self.checker.fail(ref, f"'{decl.name}' takes {len(decl.type_params)} type "
                                         f"argument(s), not {len(ref.args)}")
                args = tuple(self.resolve_type(a, scope) for a in ref.args)
                return self.specialized(decl, args)
            if isinstance(decl, (A.StructLikeDecl, A.EnumDecl, A.TypedefDecl)):
                return self.decl_type(decl)
            if isinstance(decl, A.ExternDecl):
                if ref.args and len(ref.args) != len(decl.type_params):
                    raise self.checker.fail(ref, f"'{decl.name}' takes {len(decl.type_params)} type "
                                         f"argument(s), not {len(ref.args)}")
                args = tuple(self.resolve_type(a, scope) for a in ref.args)
                return NamedT("extern", decl.name, decl, args)
            if isinstance(decl, A.ParserDecl):
                return NamedT("parser", decl.name, decl)
            if isinstance(decl, A.ControlDecl):
                return NamedT("control", decl.name, decl)
            if isinstance(decl, A.PackageDecl):
                return NamedT("package", decl.name, decl)
            raise self.checker.fail(ref, f"'{ref.name}' is not a type")
        raise self.checker.fail(ref, "unsupported type")

    def specialized(self, d: A.StructLikeDecl, args: tuple) -> StructT:
        """A generic struct or header (P4_16 1.2.2, `header H<T> { T f; }`) with its type
        arguments: its own type, named as p4c names it in BMv2 JSON (`H_bit8`)."""
        key = (id(d), args)
        if key not in self.type_cache:
            name = "_".join([d.name] + [_spelling(a) for a in args])
            self.type_bindings.append(dict(zip(d.type_params, args)))
            try:
                self.decl_type(d, key, name)
            finally:
                self.type_bindings.pop()
            self.type_cache[key].type_args = args   # what a generic call's arguments bind
        return self.type_cache[key]

    def decl_type(self, d, key=None, name: str | None = None) -> Type:
        key = id(d) if key is None else key
        if key in self.type_cache:
            return self.type_cache[key]
        if isinstance(d, A.StructLikeDecl):
            t = StructT(d.kind, name or d.name, [], d)
            self.type_cache[key] = t
            if name is None:
                self.type_bindings.append({})   # another struct's parameters stop here
            self.checker.type_params.append(set())
            seen = set()
            for f in d.fields:
                if f.name in seen:
                    raise self.checker.fail(f, f"field '{f.name}' is declared twice in {d.name}")
                seen.add(f.name)
                ft = self.resolve_type(f.type_ref, self.checker.top)
                if d.kind == "header" and isinstance(ft, StructT) and ft.kind == "struct":
                    pass  # flattened below (header_structs.py)
                elif isinstance(ft, TypeVarT):
                    pass  # a generic function's parameter type, bound at each call
                elif d.kind == "header" and not isinstance(ft, (BitT, VarbitT)) and not (
                        isinstance(ft, EnumT) and ft.underlying) and ft != BOOL:
                    raise self.checker.fail(f, f"header field '{f.name}' must be bit<>, int<>, varbit<> or "
                                       f"a serializable enum, not {ft.describe()}")
                if d.kind == "header_union" and not is_header(ft):
                    raise self.checker.fail(f, f"header_union member '{f.name}' must be a header")
                for ann in f.annotations:
                    if ann.name == "field_list":  # ids may be named constants or enum members
                        for arg in ann.args:
                            if isinstance(arg, A.Expr):
                                self.checker.const_int(arg, self.checker.top, "a @field_list id")
                t.fields.append((f.name, ft, f.annotations))
            self.checker.type_params.pop()
            if name is None:
                self.type_bindings.pop()
            if d.kind == "header" and any(isinstance(ft, StructT) for _, ft, _ in t.fields):
                self.checker.header_structs.flatten_header(t)
            return t
        if isinstance(d, A.EnumDecl):
            underlying = self.resolve_type(d.underlying, self.checker.top) if d.underlying else None
            members = {}
            for i, (name, value, loc) in enumerate(d.members):
                if name in members:
                    raise self.checker.r.error(loc, f"enum member '{name}' is declared twice")
                if underlying is not None:
                    if value is None:
                        raise self.checker.r.error(loc, f"member '{name}' of a serializable enum needs a value")
                    v = self.checker.const_int(value, self.checker.top, "an enum value")
                    members[name] = v & ((1 << underlying.width) - 1)
                else:
                    members[name] = i
            t = EnumT(d.name, members, underlying, d)
            self.type_cache[key] = t
            return t
        if isinstance(d, A.TypedefDecl):
            t = base = self.resolve_type(d.type_ref, self.checker.top)
            if d.new_type:
                ann = A.find_annotation(d.annotations, "p4runtime_translation")
                translation = () if ann is None else runtime_translation(ann)
                if translation is None:
                    raise self.checker.fail(ann, "@p4runtime_translation needs a URI string and a bit "
                                         'width or `string`, e.g. @p4runtime_translation('
                                         '"p4.org/psa/v1/PortId_t", 32)')
                t = new_type(d.name, base, translation, tuple(d.annotations))
                if t is None:
                    raise self.checker.fail(d, f"'type' can only rename bit<>, int<>, bool or another such "
                                       f"type, not {base.describe()} (use typedef)")
            self.type_cache[key] = t
            return t
        raise self.checker.fail(d, f"'{d.name}' is not a type")


def _spelling(t: Type) -> str:
    """A type argument as p4c spells it in a specialized type's name (`bit<8>` is `bit8`)."""
    if isinstance(t, BitT) and not isinstance(t, NewBitT):
        return f"{'int' if t.signed else 'bit'}{t.width}"
    if isinstance(t, (StructT, EnumT)) or isinstance(t, NewBitT):
        return t.name
    return "".join(ch for ch in t.describe() if ch.isalnum() or ch == "_")
