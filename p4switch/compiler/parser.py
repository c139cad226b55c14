"""Stage 2c: recursive-descent parser, one `parse_<construct>()` per construct.

P4's type-name/identifier ambiguity is resolved the way the language intends: the parser tracks
the names declared as types (and type parameters in scope), so `T x;` is a declaration and
`f(x);` a call. `<` after a name starts type arguments only if a type list and `(` follow.
"""

from __future__ import annotations

from . import ast as A
from .errors import Reporter
from .lexer import Token
from .parse_errors import ParseErrors
from .parser_stmts import StatementParser

BUILTIN_TYPES = {"packet_in", "packet_out"}
DIRECTIONS = ("in", "out", "inout")


class Parser(ParseErrors, StatementParser):
    def __init__(self, tokens: list[Token], reporter: Reporter):
        self.toks = tokens
        self.pos = 0
        self.reporter = reporter
        self.type_names: set[str] = set(BUILTIN_TYPES)
        self.type_scopes: list[set[str]] = []

    # ---- token helpers ----------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def at(self, *texts: str) -> bool:
        t = self.tok
        return t.text in texts and t.kind != "str"

    def accept(self, text: str) -> Token | None:
        if self.at(text):
            return self.advance()
        return None

    def advance(self) -> Token:
        t = self.toks[self.pos]
        if t.kind != "eof":
            self.pos += 1
        return t

    def is_type_name(self, name: str) -> bool:
        return name in self.type_names or any(name in s for s in self.type_scopes)

    def declare_type(self, name: str) -> None:
        self.type_names.add(name)

    # ---- program ----------------------------------------------------------------------------
    def parse_program(self) -> A.Program:
        decls = []
        start = self.tok.loc
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            decls.append(self.parse_declaration())
        return A.Program(start, decls)

    def parse_annotations(self) -> list[A.Annotation]:
        anns = []
        while self.at("@"):
            at = self.advance()
            name = self.expect_name("an annotation name").text
            args, raw = [], ""
            if self.at("(") and self.tok.loc.line == at.loc.line or self.at("("):
                args, raw = self.parse_annotation_body("(", ")")
            elif self.at("["):
                args, raw = self.parse_annotation_body("[", "]")
            anns.append(A.Annotation(at.loc, name, args, raw))
        return anns

    def parse_annotation_body(self, open_: str, close: str):
        """Annotation bodies are free-form token lists; keep the expressions when they parse."""
        self.expect(open_)
        start = self.pos
        depth = 1
        while depth:
            t = self.advance()
            if t.kind == "eof":
                raise self.error("unterminated annotation", t.loc)
            if t.text == open_ and t.kind != "str":
                depth += 1
            elif t.text == close and t.kind != "str":
                depth -= 1
        end = self.pos - 1
        raw_tokens = self.toks[start:end]
        raw = " ".join(('"%s"' % t.text) if t.kind == "str" else t.text for t in raw_tokens)
        saved = self.pos
        args = []
        try:
            self.pos = start
            while self.pos < end:
                args.append(self.parse_expression())
                if self.pos < end:
                    if not self.at(","):
                        raise ValueError
                    self.advance()
            if self.pos != end:
                raise ValueError
        except Exception:  # noqa: BLE001 - free-form annotation body: keep it raw
            args = [t.text for t in raw_tokens]
        self.pos = saved
        return args, raw

    def parse_declaration(self):
        if getattr(self, "tracker", None) is not None:
            self.tracker.at(self.tok)
        anns = self.parse_annotations()
        t = self.tok
        kind = t.text if t.kind == "kw" else None
        if kind == "const":
            return self.parse_const(anns)
        if kind in ("typedef", "type"):
            return self.parse_typedef(anns)
        if kind in ("header", "header_union", "struct"):
            return self.parse_struct_like(anns)
        if kind == "enum":
            return self.parse_enum(anns)
        if kind == "error":
            return self.parse_error_decl(anns)
        if kind == "match_kind":
            return self.parse_match_kind(anns)
        if kind == "extern":
            return self.parse_extern(anns)
        if kind == "parser":
            return self.parse_parser(anns)
        if kind == "control":
            return self.parse_control(anns)
        if kind == "package":
            return self.parse_package(anns)
        if kind == "action":
            return self.parse_action(anns)
        if kind == "abstract":
            raise self.error("'abstract' methods are only allowed inside extern declarations")
        misplaced = self.misplaced_in_body("the top level", t)
        if misplaced is not None:
            raise misplaced
        # a function `T f(...) {...}` or an instantiation `T(args) name;`
        type_ref = self.parse_type_ref()
        if self.at("("):
            return self.parse_instantiation(type_ref, anns)
        name = self.expect_name("a function name")
        type_params = self.parse_type_params()
        params = self.parse_params()
        self.type_scopes.append(set(type_params))
        body = self.parse_block()
        self.type_scopes.pop()
        return A.FunctionDecl(name.loc, name.text, type_ref, type_params, params, body,
                              annotations=anns)

    def parse_const(self, anns):
        self.expect("const")
        type_ref = self.parse_type_ref()
        name = self.expect_name("a constant name")
        self.expect("=")
        value = self.parse_expression()
        self.expect(";")
        return A.ConstDecl(name.loc, name.text, type_ref, value, annotations=anns)

    def parse_typedef(self, anns):
        new_type = self.advance().text == "type"
        type_ref = self.parse_type_ref(allow_struct_decl=True)
        name = self.expect_name("a type name")
        self.expect(";")
        self.declare_type(name.text)
        return A.TypedefDecl(name.loc, name.text, type_ref, new_type, annotations=anns)

    def parse_struct_like(self, anns):
        kind = self.advance().text
        name = self.expect_name(f"a {kind} name")
        self.declare_type(name.text)
        type_params = self.parse_type_params()
        self.type_scopes.append(set(type_params))
        self.expect("{")
        fields = []
        while not self.at("}"):
            self.check_field_start(f"{kind} '{name.text}'")
            fanns = self.parse_annotations()
            ftype = self.parse_type_ref()
            fname = self.expect_name("a field name")
            self.expect(";")
            fields.append(A.FieldDecl(fname.loc, fname.text, ftype, annotations=fanns))
        self.expect("}")
        self.type_scopes.pop()
        return A.StructLikeDecl(name.loc, name.text, kind, fields, type_params, annotations=anns)

    def parse_enum(self, anns):
        self.expect("enum")
        underlying = None
        if self.at("bit", "int"):
            underlying = self.parse_type_ref()
        name = self.expect_name("an enum name")
        self.declare_type(name.text)
        self.expect("{")
        members = []
        while not self.at("}"):
            self.parse_annotations()
            m = self.expect_name("an enum member")
            value = None
            if self.accept("="):
                value = self.parse_expression()
            members.append((m.text, value, m.loc))
            if not self.accept(","):
                break
        self.expect("}")
        return A.EnumDecl(name.loc, name.text, members, underlying, annotations=anns)

    def parse_error_decl(self, anns):
        t = self.expect("error")
        return A.ErrorDecl(t.loc, "error", self.parse_name_list(), annotations=anns)

    def parse_match_kind(self, anns):
        t = self.expect("match_kind")
        return A.MatchKindDecl(t.loc, "match_kind", self.parse_name_list(), annotations=anns)

    def parse_name_list(self):
        self.expect("{")
        names = []
        while not self.at("}"):
            n = self.expect_name()
            names.append((n.text, n.loc))
            if not self.accept(","):
                break
        self.expect("}")
        return names

    def parse_extern(self, anns):
        self.expect("extern")
        # extern object: `extern Name<T> { ... }`; extern function: `extern T f<...>(...);`
        if (self.tok.kind == "id" and self.peek().text in ("{", "<")
                and not self.is_type_name(self.tok.text)) or (
                self.tok.kind == "id" and self.peek().text == "{"):
            name = self.advance()
            self.declare_type(name.text)
            type_params = self.parse_type_params()
            self.type_scopes.append(set(type_params))
            self.expect("{")
            methods = []
            while not self.at("}"):
                manns = self.parse_annotations()
                abstract = bool(self.accept("abstract"))
                if self.tok.text == name.text and self.peek().text == "(":
                    ctor = self.advance()
                    params = self.parse_params()
                    self.expect(";")
                    methods.append(A.MethodDecl(ctor.loc, ctor.text, None, [], params,
                                                annotations=manns))
                    continue
                ret = self.parse_type_ref()
                mname = self.expect_name("a method name")
                mtparams = self.parse_type_params()
                self.type_scopes.append(set(mtparams))
                params = self.parse_params()
                self.type_scopes.pop()
                self.expect(";")
                methods.append(A.MethodDecl(mname.loc, mname.text, ret, mtparams, params, abstract,
                                            annotations=manns))
            self.expect("}")
            self.type_scopes.pop()
            return A.ExternDecl(name.loc, name.text, type_params, methods, annotations=anns)
        ret = self.parse_type_ref()
        name = self.expect_name("an extern function name")
        type_params = self.parse_type_params()
        self.type_scopes.append(set(type_params))
        params = self.parse_params()
        self.type_scopes.pop()
        self.expect(";")
        return A.ExternFunctionDecl(name.loc, name.text, ret, type_params, params, annotations=anns)

    def parse_type_params(self) -> list[str]:
        if not self.at("<"):
            return []
        self.advance()
        names = []
        while True:
            names.append(self.expect_name("a type parameter").text)
            if not self.accept(","):
                break
        self.expect(">")
        return names

    def parse_params(self) -> list[A.Param]:
        self.expect("(")
        params = []
        while not self.at(")"):
            anns = self.parse_annotations()
            direction = ""
            if self.at(*DIRECTIONS):
                direction = self.advance().text
            type_ref = self.parse_type_ref()
            name = self.expect_name("a parameter name")
            default = None
            if self.accept("="):
                default = self.parse_expression()
            params.append(A.Param(name.loc, name.text, direction, type_ref, default, annotations=anns))
            if not self.accept(","):
                break
        self.expect(")")
        return params

    def parse_parser(self, anns):
        self.expect("parser")
        name = self.expect_name("a parser name")
        type_params = self.parse_type_params()
        self.type_scopes.append(set(type_params))
        params = self.parse_params()
        if self.accept(";"):
            self.type_scopes.pop()
            self.declare_type(name.text)
            return A.ParserDecl(name.loc, name.text, type_params, params, [], [], [], True,
                                annotations=anns)
        ctor_params = self.parse_params() if self.at("(") else []
        self.declare_type(name.text)
        self.expect("{")
        local_decls, states = [], []
        while not self.at("}"):
            lanns = self.parse_annotations()
            if self.at("state"):
                states.append(self.parse_state(lanns))
            else:
                local_decls.append(self.parse_local_declaration(lanns, f"parser '{name.text}'"))
        self.expect("}")
        self.type_scopes.pop()
        return A.ParserDecl(name.loc, name.text, type_params, params, ctor_params, local_decls,
                            states, annotations=anns)

    def parse_state(self, anns):
        self.expect("state")
        name = self.expect_name("a state name")
        self.expect("{")
        stmts = []
        transition = None
        while not self.at("}"):
            if self.at("transition"):
                transition = self.parse_transition()
                break
            stmts.append(self.parse_statement())
        self.expect("}")
        return A.StateDecl(name.loc, name.text, stmts, transition, annotations=anns)

    def parse_transition(self):
        t = self.expect("transition")
        if self.at("select"):
            self.advance()
            self.expect("(")
            exprs = self.parse_expression_list(")")
            self.expect(")")
            self.expect("{")
            cases = []
            while not self.at("}"):
                keyset = self.parse_keyset()
                self.expect(":")
                state = self.expect_name("a state name")
                self.expect(";")
                cases.append(A.SelectCase(keyset.loc, keyset, state.text))
            self.expect("}")
            return A.Transition(t.loc, None, exprs, cases)
        state = self.expect_name("a state name")
        self.expect(";")
        return A.Transition(t.loc, state.text)

    def parse_keyset(self) -> A.Expr:
        if self.at("(") and self._paren_is_tuple():
            loc = self.advance().loc
            items = []
            while True:
                items.append(self.parse_simple_keyset())
                if not self.accept(","):
                    break
            self.expect(")")
            return A.ListExpr(loc, items)
        return self.parse_simple_keyset()

    def _paren_is_tuple(self) -> bool:
        depth, i = 0, self.pos
        while i < len(self.toks):
            t = self.toks[i]
            if t.kind == "eof":
                return False
            if t.text in "([{" and t.kind not in ("str",) and t.text:
                depth += 1
            elif t.text in ")]}" and t.kind != "str":
                depth -= 1
                if depth == 0:
                    return self.toks[i + 1].text in (":",)
            elif t.text == "," and depth == 1:
                return True
            i += 1
        return False

    def parse_simple_keyset(self) -> A.Expr:
        if self.at("default"):
            return A.Default(self.advance().loc)
        if self.at("_"):
            return A.DontCare(self.advance().loc)
        e = self.parse_expression()
        if self.at("&&&"):
            self.advance()
            return A.Mask(e.loc, e, self.parse_expression())
        if self.at(".."):
            self.advance()
            return A.Range(e.loc, e, self.parse_expression())
        return e

    def parse_control(self, anns):
        self.expect("control")
        name = self.expect_name("a control name")
        type_params = self.parse_type_params()
        self.type_scopes.append(set(type_params))
        params = self.parse_params()
        if self.accept(";"):
            self.type_scopes.pop()
            self.declare_type(name.text)
            return A.ControlDecl(name.loc, name.text, type_params, params, [], [], None, True,
                                 annotations=anns)
        ctor_params = self.parse_params() if self.at("(") else []
        self.declare_type(name.text)
        self.expect("{")
        local_decls = []
        apply = None
        while not self.at("}"):
            lanns = self.parse_annotations()
            if self.at("apply"):
                self.advance()
                apply = self.parse_block()
            else:
                local_decls.append(self.parse_local_declaration(lanns, f"control '{name.text}'"))
        close = self.expect("}")
        self.type_scopes.pop()
        if apply is None:
            hint = (f" (its body ends at line {close.loc.line}: is there a '}}' too many before?)"
                    if local_decls else "")
            raise self.error(f"control '{name.text}' has no apply block{hint}", name.loc)
        return A.ControlDecl(name.loc, name.text, type_params, params, ctor_params, local_decls,
                             apply, annotations=anns)

    def parse_local_declaration(self, anns, where: str):
        """Declarations allowed inside a parser or control body (`where` names it)."""
        if self.at("action"):
            return self.parse_action(anns)
        if self.at("table"):
            return self.parse_table(anns)
        if self.at("const"):
            return self.parse_const(anns)
        if self.at("value_set"):
            return self.parse_value_set(anns)
        misplaced = self.misplaced_in_body(where, self.tok)
        if misplaced is not None:
            raise misplaced
        type_ref = self.parse_type_ref()
        if self.at("("):
            return self.parse_instantiation(type_ref, anns)
        name = self.expect_name("a variable name")
        init = None
        if self.accept("="):
            init = self.parse_expression()
        self.expect(";")
        return A.VarDecl(name.loc, type_ref, name.text, init, anns)

    def parse_value_set(self, anns):
        self.expect("value_set")
        self.expect("<")
        type_ref = self.parse_type_ref()
        self.expect(">")
        self.expect("(")
        size = self.parse_expression()
        self.expect(")")
        name = self.expect_name("a value set name")
        self.expect(";")
        return A.ValueSetDecl(name.loc, name.text, type_ref, size, annotations=anns)

    def parse_instantiation(self, type_ref, anns):
        args = self.parse_arguments()
        name = self.expect_name("an instance name")
        initializer = None
        if self.at("="):
            self.advance()
            initializer = self.parse_block()
        self.expect(";")
        return A.InstanceDecl(name.loc, name.text, type_ref, args, initializer, annotations=anns)

    def parse_package(self, anns):
        self.expect("package")
        name = self.expect_name("a package name")
        type_params = self.parse_type_params()
        self.type_scopes.append(set(type_params))
        params = self.parse_params()
        self.type_scopes.pop()
        self.expect(";")
        self.declare_type(name.text)
        return A.PackageDecl(name.loc, name.text, type_params, params, annotations=anns)

    def parse_action(self, anns):
        self.expect("action")
        name = self.expect_name("an action name")
        params = self.parse_params()
        body = self.parse_block()
        return A.ActionDecl(name.loc, name.text, params, body, annotations=anns)

    def parse_table(self, anns):
        self.expect("table")
        name = self.expect_name("a table name")
        self.expect("{")
        props = []
        while not self.at("}"):
            props.append(self.parse_table_property())
        self.expect("}")
        return A.TableDecl(name.loc, name.text, props, annotations=anns)

    def parse_table_property(self):
        anns = self.parse_annotations()
        const = bool(self.accept("const"))
        name = self.expect_name("a table property")
        if name.text == "key":
            self.expect("=")
            self.expect("{")
            elems = []
            while not self.at("}"):
                e = self.parse_expression()
                self.expect(":")
                kind = self.expect_name("a match kind")
                kanns = self.parse_annotations()
                self.expect(";")
                elems.append(A.KeyElement(e.loc, e, kind.text, kanns))
            self.expect("}")
            self.accept(";")
            return A.TableProperty(name.loc, "key", elems, const, anns)
        if name.text == "actions":
            self.expect("=")
            self.expect("{")
            refs = []
            while not self.at("}"):
                ranns = self.parse_annotations()
                e = self.parse_expression()
                self.expect(";")
                refs.append(A.ActionRef(e.loc, e, ranns))
            self.expect("}")
            self.accept(";")
            return A.TableProperty(name.loc, "actions", refs, const, anns)
        if name.text == "entries":
            self.expect("=")
            self.expect("{")
            entries = []
            while not self.at("}"):
                if self.at("@"):
                    raise self.error("annotations on a table entry go after its action, "
                                     "before ';' (`keys : action(args) @priority(n);`)")
                self.accept("const")  # `const` on one entry of `entries` (P4_16 1.2.4)
                priority = None
                if self.at("priority"):
                    self.advance()
                    self.expect("=")
                    priority = self.parse_expression()
                    self.expect(":")
                keyset = self.parse_keyset()
                self.expect(":")
                action = self.parse_expression()
                eanns = self.parse_annotations()
                self.expect(";")
                keys = keyset.items if isinstance(keyset, A.ListExpr) else [keyset]
                entries.append(A.Entry(keyset.loc, keys, action, priority, eanns))
            self.expect("}")
            self.accept(";")
            return A.TableProperty(name.loc, "entries", entries, const, anns)
        self.expect("=")
        value = self.parse_expression()
        self.expect(";")
        return A.TableProperty(name.loc, name.text, value, const, anns)


def parse(tokens: list[Token], reporter: Reporter, tracker=None) -> A.Program:
    parser = Parser(tokens, reporter)
    parser.tracker = tracker
    return parser.parse_program()
