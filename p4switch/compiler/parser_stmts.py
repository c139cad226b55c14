"""Stage 2c (continued): types, statements and expressions of the recursive-descent parser.

A mixin of `parser.Parser`: one `parse_<construct>()` per statement and expression form, P4's
operator precedence (as p4c's grammar: comparisons bind looser than `&`, `^`, `|`), casts told
from parenthesised expressions by the type names in scope, and type arguments (`f<T>(...)`)
told from `<` by looking ahead for a type list followed by `(`.
"""

from __future__ import annotations

import re

from . import ast as A

# binary operators, low to high precedence
BINARY_LEVELS = [["||"], ["&&"], ["==", "!="], ["<", ">", "<=", ">="], ["|"], ["^"], ["&"],
                 ["<<", ">>"], ["++", "+", "-", "|+|", "|-|"], ["*", "/", "%"]]


COMPOUND_TOKENS = {"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", "|+|=", "|-|="}


class StatementParser:
    """Types, statements and expressions; relies on the token helpers of `parser.Parser`."""

    # ---- types ------------------------------------------------------------------------------
    def starts_type(self, k: int = 0) -> bool:
        t = self.peek(k) if k else self.tok
        if t.kind == "kw":
            return t.text in ("bit", "int", "varbit", "bool", "error", "string", "void", "tuple",
                              "match_kind")
        return t.kind == "id" and self.is_type_name(t.text)

    def parse_type_ref(self, allow_struct_decl: bool = False) -> A.TypeRef:
        t = self.tok
        loc = t.loc
        if t.text in ("bit", "int") and t.kind == "kw":
            self.advance()
            signed = t.text == "int"
            if self.at("<"):
                self.advance()
                width = self.parse_type_arg_expression()
                self.expect(">")
            elif signed:
                ref = A.SimpleTypeRef(loc, "int")
                return self._stack_suffix(ref)
            else:
                width = A.IntLit(loc, 1)
            return self._stack_suffix(A.BitTypeRef(loc, width, signed))
        if t.text == "varbit" and t.kind == "kw":
            self.advance()
            self.expect("<")
            width = self.parse_type_arg_expression()
            self.expect(">")
            return self._stack_suffix(A.VarbitTypeRef(loc, width))
        if t.kind == "kw" and t.text in ("bool", "error", "string", "void", "match_kind"):
            self.advance()
            return self._stack_suffix(A.SimpleTypeRef(loc, t.text))
        if t.kind == "kw" and t.text == "tuple":
            self.advance()
            return A.TupleTypeRef(loc, self.parse_type_args())
        if t.text == "_":
            self.advance()
            return A.SimpleTypeRef(loc, "_")
        if t.text == "." and self.peek().kind == "id":
            self.advance()
            t = self.tok
        if t.kind == "id":
            self.advance()
            args = self.parse_type_args() if self.at("<") else []
            return self._stack_suffix(A.NamedTypeRef(loc, t.text, args))
        raise self.error(f"expected a type, found {self._describe(t)}")

    def parse_type_arg_expression(self) -> A.Expr:
        """Widths inside `<...>`: an integer, a constant name, or a parenthesised expression."""
        if self.at("("):
            self.advance()
            e = self.parse_expression()
            self.expect(")")
            return e
        t = self.tok
        if t.kind == "num":
            self.advance()
            return A.IntLit(t.loc, t.value, t.width, t.signed, literal_base(t.text))
        if t.kind == "id":
            self.advance()
            return A.Name(t.loc, t.text)
        raise self.error(f"expected a width, found {self._describe(t)}")

    def parse_type_args(self) -> list[A.TypeRef]:
        self.expect("<")
        args = []
        while True:
            if self.tok.kind == "num":
                t = self.advance()
                args.append(A.TypeExpr(t.loc, A.IntLit(t.loc, t.value)))  # type-level number
            else:
                args.append(self.parse_type_ref())
            if not self.accept(","):
                break
        self.expect(">")
        return args

    def _stack_suffix(self, ref: A.TypeRef) -> A.TypeRef:
        if self.at("["):
            self.advance()
            size = self.parse_expression()
            self.expect("]")
            return A.StackTypeRef(ref.loc, ref, size)
        return ref

    # ---- statements -------------------------------------------------------------------------
    def parse_block(self) -> A.Block:
        anns = self.parse_annotations()
        open_ = self.expect("{")
        stmts = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("missing '}'")
            stmts.append(self.parse_statement())
        self.expect("}")
        return A.Block(open_.loc, stmts, anns)

    def parse_statement(self) -> A.Stmt:
        anns = self.parse_annotations()
        t = self.tok
        if t.text == "{" and t.kind != "str":
            block = self.parse_block()
            block.annotations = anns + block.annotations
            return block
        if t.kind == "kw":
            if t.text == "if":
                return self.parse_if()
            if t.text == "for":
                return self.parse_for()
            if t.text in ("break", "continue"):
                self.advance()
                self.expect(";")
                return A.Break(t.loc) if t.text == "break" else A.Continue(t.loc)
            if t.text == "switch":
                return self.parse_switch()
            if t.text == "exit":
                self.advance()
                self.expect(";")
                return A.Exit(t.loc)
            if t.text == "return":
                self.advance()
                value = None if self.at(";") else self.parse_expression()
                self.expect(";")
                return A.Return(t.loc, value)
            if t.text == "const":
                c = self.parse_const(anns)
                d = A.VarDecl(c.loc, c.type_ref, c.name, c.value, anns)
                d.is_const = True
                return d
        if t.text == ";" and t.kind != "str":
            self.advance()
            return A.Empty(t.loc)
        misplaced = self.misplaced_in_statement(t)
        if misplaced is not None:
            raise misplaced
        if self.starts_type() and self._declaration_follows():
            type_ref = self.parse_type_ref()
            if self.at("("):
                return self.parse_instantiation(type_ref, anns)
            decl = self._variable_rest(type_ref, anns)
            self.expect(";")
            return decl
        st = self.parse_assignment_or_call()
        if isinstance(st, A.Assign):
            self.expect(";")
        else:
            self.expect(";", "';' after the statement")
        return st

    def _variable_rest(self, type_ref: A.TypeRef, anns) -> A.VarDecl:
        name = self.expect_name("a variable name")
        init = None
        if self.accept("="):
            init = self.parse_expression()
        return A.VarDecl(name.loc, type_ref, name.text, init, anns)

    def parse_assignment_or_call(self) -> A.Stmt:
        """`lvalue = e`, `lvalue op= e` or a call, without the ';'."""
        lhs = self.parse_expression()
        if self.at("=") and self.tok.kind != "str":
            self.advance()
            return A.Assign(lhs.loc, lhs, self.parse_expression())
        op = self._compound_op()
        if op is not None:
            # `a op= b` is `a = a op b` with the lvalue evaluated once: both sides share the one
            # lvalue node, so a call hoisted out of its index (checker) runs once
            rhs = self.parse_expression()
            return A.Assign(lhs.loc, lhs, A.Binary(lhs.loc, op, lhs, rhs))
        if not isinstance(lhs, A.Call):
            raise self.error("this expression is not a statement (expected an assignment or a call)",
                             lhs.loc)
        return A.CallStmt(lhs.loc, lhs)

    def _compound_op(self) -> str | None:
        t = self.tok
        if t.kind in COMPOUND_TOKENS:
            self.advance()
            return t.kind[:-1]
        if t.text == ">" and t.adjacent and self.peek().text == ">=" and t.kind != "str":
            self.advance()
            self.advance()
            return ">>"
        return None

    def parse_for(self) -> A.Stmt:
        """Both forms of P4_16 1.2.4: `for (init; cond; update)` and `for (T x in e)`."""
        t = self.expect("for")
        self.expect("(")
        anns = self.parse_annotations()
        if self.starts_type() and self._declaration_follows() and self.peek(
                self._type_length()).kind == "id" and self.peek(self._type_length() + 1).text == "in":
            type_ref = self.parse_type_ref()
            name = self.expect_name("a loop variable name")
            self.expect("in")
            collection = self.parse_expression()
            if self.at(".."):
                self.advance()
                collection = A.Range(collection.loc, collection, self.parse_expression())
            self.expect(")")
            return A.ForIn(t.loc, type_ref, name.text, collection, self.parse_statement())
        init = []
        while not self.at(";"):
            if self.starts_type() and self._declaration_follows():
                init.append(self._variable_rest(self.parse_type_ref(), anns))
            else:
                init.append(self.parse_assignment_or_call())
            anns = []
            if not self.accept(","):
                break
        self.expect(";", "';' after the for loop's initialisation")
        cond = None if self.at(";") else self.parse_expression()
        self.expect(";", "';' after the for loop's condition")
        update = []
        while not self.at(")"):
            update.append(self.parse_assignment_or_call())
            if not self.accept(","):
                break
        self.expect(")", "')' after the for loop's update")
        return A.For(t.loc, init, cond, update, self.parse_statement())

    def _type_length(self) -> int:
        """How many tokens the type starting here spans (speculatively parsed)."""
        saved = self.pos
        try:
            self.parse_type_ref()
            return self.pos - saved
        finally:
            self.pos = saved

    def _declaration_follows(self) -> bool:
        """After a type name: a declaration (`T x`, `T<..> x`, `T[4] x`, `T(...) x;`)?"""
        t = self.tok
        if t.kind == "kw" and t.text in ("bit", "int", "varbit", "bool", "error", "tuple"):
            # `error.NoMatch` and friends are expressions
            return not (t.text == "error" and self.peek().text == ".")
        nxt = self.peek()
        if nxt.kind == "id" or nxt.text in ("<", "["):
            return True
        if nxt.text == "(":
            return True  # instantiation
        return False

    def parse_if(self) -> A.If:
        t = self.expect("if")
        self.expect("(")
        cond = self.parse_expression()
        self.expect(")")
        then = self.parse_statement()
        other = None
        if self.accept("else"):
            other = self.parse_statement()
        return A.If(t.loc, cond, then, other)

    def parse_switch(self) -> A.Switch:
        t = self.expect("switch")
        self.expect("(")
        expr = self.parse_expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.at("}"):
            loc = self.tok.loc
            label = A.Default(self.advance().loc) if self.at("default") else self.parse_expression()
            self.expect(":")
            body = self.parse_block() if self.at("{") else None
            cases.append(A.SwitchCase(loc, [label], body))
        self.expect("}")
        return A.Switch(t.loc, expr, cases)

    # ---- expressions ------------------------------------------------------------------------
    def parse_expression_list(self, close: str) -> list[A.Expr]:
        items = []
        while not self.at(close):
            items.append(self.parse_expression())
            if not self.accept(","):
                break
        return items

    def parse_expression(self) -> A.Expr:
        """`?:` groups to the left, as in p4c's (and the spec's) grammar: `a ? b : c ? d : e`
        is `(a ? b : c) ? d : e`."""
        e = self.parse_binary(0)
        while self.at("?") and self.tok.kind != "str":
            self.advance()
            then = self.parse_expression()
            self.expect(":")
            other = self.parse_binary(0)
            e = A.Ternary(e.loc, e, then, other)
        return e

    def parse_binary(self, level: int) -> A.Expr:
        if level == len(BINARY_LEVELS):
            return self.parse_unary()
        ops = BINARY_LEVELS[level]
        left = self.parse_binary(level + 1)
        while True:
            op = self._binary_op(ops)
            if op is None:
                return left
            right = self.parse_binary(level + 1)
            left = A.Binary(left.loc, op, left, right)

    def _binary_op(self, ops) -> str | None:
        t = self.tok
        if t.kind in ("str", "num", "id", "kw", "eof"):
            return None
        if t.text == ">" and t.adjacent and self.peek().text == ">":
            if ">>" in ops:
                self.advance()
                self.advance()
                return ">>"
            return None
        if t.text == ">" and t.adjacent and self.peek().text == ">=":
            return None
        if t.text in ops:
            self.advance()
            return t.text
        return None

    def parse_unary(self) -> A.Expr:
        t = self.tok
        if t.text in ("!", "~", "-", "+") and t.kind not in ("str",):
            self.advance()
            operand = self.parse_unary()
            if t.text == "-" and isinstance(operand, A.IntLit) and operand.width is None:
                return A.IntLit(t.loc, -operand.value)
            return A.Unary(t.loc, t.text, operand)
        if t.text == "(" and t.kind != "str" and self._is_cast():
            self.advance()
            type_ref = self.parse_type_ref()
            self.expect(")")
            return A.Cast(t.loc, type_ref, self.parse_unary())
        return self.parse_postfix(self.parse_primary())

    def _is_cast(self) -> bool:
        nxt = self.peek()
        if nxt.kind == "kw" and nxt.text in ("bit", "int", "varbit", "bool", "error", "tuple"):
            return not (nxt.text == "error" and self.peek(2).text == ".")
        if nxt.kind == "id" and self.is_type_name(nxt.text):
            return self.peek(2).text in (")", "<", "[") and self.peek(2).kind != "str"
        return False

    def parse_primary(self) -> A.Expr:
        t = self.tok
        if t.kind == "num":
            self.advance()
            return A.IntLit(t.loc, t.value, t.width, t.signed, literal_base(t.text))
        if t.kind == "str":
            self.advance()
            return A.StrLit(t.loc, t.text)
        if t.kind == "kw" and t.text in ("true", "false"):
            self.advance()
            return A.BoolLit(t.loc, t.text == "true")
        if t.text == "(" and t.kind != "str":
            self.advance()
            e = self.parse_expression()
            self.expect(")")
            return e
        if t.text == "{#}" and t.kind != "str":
            self.advance()
            return A.InvalidValue(t.loc)
        if t.text == "..." and t.kind != "str":
            self.advance()
            return A.DefaultValue(t.loc)
        if t.text == "{" and t.kind != "str":
            self.advance()
            if self.tok.kind == "id" and self.peek().text == "=":
                fields = []
                while not self.at("}"):
                    if self.at("..."):   # the other fields take their default values
                        fields.append(("...", A.DefaultValue(self.advance().loc)))
                        break
                    n = self.expect_name("a field name")
                    self.expect("=")
                    fields.append((n.text, self.parse_expression()))
                    if not self.accept(","):
                        break
                self.expect("}")
                return A.StructExpr(t.loc, fields)
            items = self.parse_expression_list("}")
            self.expect("}")
            return A.ListExpr(t.loc, items)
        if t.text == "." and self.peek().kind == "id":
            self.advance()
            n = self.advance()
            return A.Name(n.loc, n.text, top_level=True)
        if t.kind == "kw" and t.text in ("bit", "int", "varbit", "bool", "tuple"):
            return A.TypeExpr(t.loc, self.parse_type_ref())
        if t.kind == "id" or (t.kind == "kw" and t.text in ("error", "this", "apply", "type", "key",
                                                             "actions", "entries", "state")):
            self.advance()
            return A.Name(t.loc, t.text)
        if t.text == "_":
            self.advance()
            return A.DontCare(t.loc)
        if t.kind == "kw" and t.text == "default":
            self.advance()
            return A.Default(t.loc)
        raise self.error(f"expected an expression, found {self._describe(t)}")

    def parse_postfix(self, e: A.Expr) -> A.Expr:
        while True:
            t = self.tok
            if t.kind == "str":
                return e
            if t.text == ".":
                self.advance()
                name = self.tok
                if name.kind not in ("id", "kw"):
                    raise self.error(f"expected a member name, found {self._describe(name)}")
                self.advance()
                e = A.Member(e.loc, e, name.text)
                e.name_loc = name.loc
            elif t.text == "[":
                self.advance()
                first = self.parse_expression()
                if self.accept(":"):
                    lo = self.parse_expression()
                    self.expect("]")
                    e = A.Slice(t.loc, e, first, lo)
                else:
                    self.expect("]")
                    e = A.Index(t.loc, e, first)
            elif t.text == "(":
                args = self.parse_arguments()
                e = A.Call(e.loc, e, [], args)
            elif t.text == "<" and self._type_args_follow():
                targs = self.parse_type_args()
                args = self.parse_arguments()
                e = A.Call(e.loc, e, targs, args)
            else:
                return e

    def _type_args_follow(self) -> bool:
        if not self.starts_type(1) and self.peek().kind != "num":
            return False
        saved = self.pos
        try:
            self.parse_type_args()
            return self.at("(")
        except Exception:  # noqa: BLE001 - speculative parse: not type arguments
            return False
        finally:
            self.pos = saved

    def parse_arguments(self) -> list[A.Argument]:
        self.expect("(")
        args = []
        while not self.at(")"):
            t = self.tok
            if t.kind == "id" and self.peek().text == "=" and self.peek().kind != "str":
                self.advance()
                self.advance()
                value = A.DontCare(self.advance().loc) if self.at("_") else self.parse_expression()
                args.append(A.Argument(t.loc, value, t.text))
            elif t.text == "_":
                args.append(A.Argument(t.loc, A.DontCare(self.advance().loc)))
            else:
                value = self.parse_expression()
                args.append(A.Argument(value.loc, value))
            if not self.accept(","):
                break
        self.expect(")", "')' or ','")
        return args


def literal_base(text: str) -> int:
    """The base a number was written in (`16w0xffff` is 16), for key names as p4c makes them."""
    digits = re.sub(r"^\d+[ws]", "", text)[:2].lower()
    return {"0x": 16, "0b": 2, "0o": 8}.get(digits, 10)
