"""How the parser reports syntax errors: what was expected, what was found, and a hint.

A one-token slip often shows up far from where it happened: a missing `}` makes the next
`control` appear inside a body, an extra `{` makes `action` appear inside `apply`. The messages
here name the construct being parsed and, for misplaced braces, say which `{` is open, so the
P4 programmer can find the real mistake. Brace and parenthesis depths are computed once from the
token list, independently of how far parsing got.
"""

from __future__ import annotations

from .errors import Location
from .lexer import Token

# keywords that only start a top-level declaration
TOP_LEVEL_KEYWORDS = ("control", "parser", "header", "header_union", "struct", "enum", "extern",
                      "typedef", "package", "match_kind")
# declarations that belong before a control's `apply` (or in a parser, before the states)
LOCAL_DECLARATION_KEYWORDS = ("action", "table", "state", "value_set")


class ParseErrors:
    """Mixin for the parser: `expect`, `expect_name` and `error` with helpful messages (hints
    about unbalanced braces and parentheses at the current token)."""

    toks: list[Token]
    pos: int

    def expect(self, text: str, what: str | None = None) -> Token:
        if self.at(text):
            return self.advance()
        prev = self.toks[self.pos - 1] if self.pos else None
        if text == ";" and prev is not None and (prev.loc.line, prev.loc.file) != (
                self.tok.loc.line, self.tok.loc.file):
            # a missing ';' at the end of a line: point just after the line's last token
            after = Location(prev.loc.file, prev.loc.line, prev.loc.col + len(prev.text))
            raise self.error(f"expected ';' after {self._describe(prev)}", after)
        raise self.error(f"expected {what or repr(text)}, found {self._describe(self.tok)}")

    def expect_name(self, what: str = "a name") -> Token:
        t = self.tok
        if t.kind == "id" or (t.kind == "kw" and t.text in ("apply", "key", "actions", "entries",
                                                             "state", "type", "this", "list")):
            return self.advance()
        raise self.error(f"expected {what}, found {self._describe(t)}")

    @staticmethod
    def _describe(t: Token) -> str:
        if t.kind == "eof":
            return "end of input"
        if t.kind == "str":
            return f'string "{t.text}"'
        return f"'{t.text}'"

    def error(self, message: str, loc: Location | None = None):
        """A located syntax error; at the current token, a hint about braces is added."""
        if loc is None:
            loc = self.tok.loc
            message += self._brace_hint()
        return self.reporter.error(loc, message)

    # ---- hints --------------------------------------------------------------------------------
    def _nesting(self) -> tuple[list[Token], int]:
        """The `{` tokens still open before the current token (outermost first), and how many
        `(` are open there."""
        if getattr(self, "_nesting_cache", None) is None:
            opened: list[Token] = []
            parens = 0
            before: list[tuple[tuple[Token, ...], int]] = []
            for t in self.toks:
                before.append((tuple(opened), parens))
                if t.kind == "str":
                    continue
                if t.text == "{":
                    opened.append(t)
                elif t.text == "}" and opened:
                    opened.pop()
                elif t.text == "(":
                    parens += 1
                elif t.text == ")" and parens:
                    parens -= 1
            self._nesting_cache = before
        braces, parens = self._nesting_cache[min(self.pos, len(self._nesting_cache) - 1)]
        return list(braces), parens

    def _brace_hint(self) -> str:
        t = self.tok
        opened, parens = self._nesting()
        if t.text == ")" and t.kind != "str" and parens == 0:
            return " (this ')' closes no '(': is there one too many?)"
        if t.text == ".." and t.kind != "str":
            return " (is a member name missing between '.' and '.'?)"
        if t.kind == "eof" and opened:
            where = opened[-1].loc
            return f" (the '{{' at line {where.line}, column {where.col} is never closed)"
        if t.kind == "kw" and t.text in TOP_LEVEL_KEYWORDS and opened:
            where = opened[0].loc
            return f" (inside the '{{' of line {where.line}: is a '}}' missing before it?)"
        if t.text == "}" and t.kind != "str" and not opened:
            return " (this '}' closes no block: is there one too many, or a '{' missing?)"
        return ""

    def misplaced_in_statement(self, t: Token):
        """The error for a keyword that cannot start a statement, or None."""
        if t.kind != "kw":
            return None
        if t.text == "else":
            return self.error("'else' without a matching 'if' (is a '}' or an 'if' missing?)")
        if t.text == "transition":
            return self.error("'transition' must be the last statement of a parser state, "
                              "outside any block")
        if t.text in LOCAL_DECLARATION_KEYWORDS:
            return self.error(f"expected a statement, found '{t.text}': actions, tables and "
                              f"states are declared outside blocks (before 'apply' in a "
                              f"control)")
        if t.text in TOP_LEVEL_KEYWORDS:
            return self.error(f"expected a statement, found '{t.text}'")
        return None

    def check_field_start(self, what: str) -> None:
        """In a header/struct body: the next token must start a field declaration."""
        t = self.tok
        if t.kind == "id" or self.starts_type() or t.text == "@" and t.kind != "str":
            return
        if t.kind == "eof":
            raise self.error(f"{what} is not closed: expected '}}', found end of input")
        raise self.error(f"expected a field (a type and a name) in {what}, found "
                         f"{self._describe(t)}")

    def misplaced_in_body(self, what: str, t: Token):
        """The error for a token that cannot start a declaration in `what` (a control or parser
        body, or the top level), or None when the token may start one."""
        if t.kind == "id" and what.startswith("parser") and self.peek().text == "{":
            return self.error(f"expected a declaration or a state in {what}, found '{t.text} {{': "
                              f"is 'state' missing before '{t.text}'?")
        if t.kind == "id" or self.starts_type() or t.text in ("@", ";") and t.kind != "str":
            return None
        if what == "the top level":
            if t.text == "}" and t.kind != "str":
                return self.error("unexpected '}'")
            return self.error(f"expected a declaration (header, struct, control, parser, const, "
                              f"an instance, ...), found {self._describe(t)}")
        if t.kind == "eof":
            return self.error(f"{what} is not closed: expected '}}', found end of input")
        if t.kind == "kw" and t.text in TOP_LEVEL_KEYWORDS:
            return self.error(f"expected a declaration in {what}, found '{t.text}'")
        if t.text == "{" and t.kind != "str" and what.startswith("control"):
            return self.error(f"expected a declaration in {what}, found '{{': is 'apply' "
                              f"missing before it?")
        if t.kind == "kw" and t.text in ("if", "switch", "return", "exit", "else") or \
                t.text == "{" and t.kind != "str":
            place = "inside 'apply { }'" if what.startswith("control") else "inside a state"
            return self.error(f"expected a declaration in {what}, found "
                              f"{self._describe(t)}: statements belong {place}")
        if t.kind != "kw":
            extra = " or 'apply'" if what.startswith("control") else " or a state"
            return self.error(f"expected a declaration{extra} in {what}, found "
                              f"{self._describe(t)}")
        return None
