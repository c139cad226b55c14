"""Macro expansion with C preprocessor semantics, on tokens.

Why tokens and not text: `#` (stringize) and `##` (paste) act on the *unexpanded* argument tokens
while every other use of a parameter gets the fully expanded argument, and the result of a
replacement is rescanned together with the rest of the line (so a function-like macro name at
the end of a body can take its arguments from the text that follows). Each token carries the set
of macro names it came out of (its "hide set"); a token whose own name is in its hide set is
"painted blue" and never expands again, which stops self-reference without stopping legitimate
nested expansion. This is the classic algorithm (Prosser's) the C standard describes.

Expansion is sans-I/O: `MacroExpander.expand_text(line, loc)` returns the expanded line; problems
raise through the caller's `fail(loc, message)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .errors import Location

# Preprocessing tokens: strings, identifiers, numbers (8w5, 0x1F, 32w0x1F), P4/C punctuators
# (longest first), then any other single character.
_PP_TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"?|[A-Za-z_]\w*|\d\w*|##|\.\.\.|&&&|\|\+\||\|-\||<<=|>>=|'
    r"<<|>>|<=|>=|==|!=|&&|\|\||\+\+|\+=|-=|\*=|/=|&=|\|=|\^=|->|::|\.\.|\S")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_DYNAMIC = ("__LINE__", "__FILE__")
_PARAM_NAME = re.compile(r"[A-Za-z_]\w*(\.\.\.)?|\.\.\.")


@dataclass
class Macro:
    name: str
    body: str
    params: list[str] | None = None  # None: object-like
    variadic: bool = False
    body_tokens: list["Tok"] = field(default_factory=list)

    def __post_init__(self):
        self.body_tokens = tokenize(self.body)


@dataclass(frozen=True)
class Tok:
    text: str
    space: str = ""  # whitespace written before the token
    hide: frozenset = frozenset()
    moved: bool = False  # produced by an expansion (its column no longer matches the source)

    @property
    def is_ident(self) -> bool:
        return bool(self.text) and (self.text[0].isalpha() or self.text[0] == "_")

    def with_(self, text=None, space=None, hide=None, moved=None) -> "Tok":
        return Tok(self.text if text is None else text, self.space if space is None else space,
                   self.hide if hide is None else hide, self.moved if moved is None else moved)


def tokenize(text: str) -> list[Tok]:
    out, pos = [], 0
    for m in _PP_TOKEN.finditer(text):
        out.append(Tok(m.group(0), text[pos:m.start()]))
        pos = m.end()
    return out


def render(tokens: list[Tok], trailing: str = "") -> str:
    """Join tokens with the whitespace written before each; next to a token moved by expansion
    a space is added where the two would otherwise lex as one different token (`-` `-1`)."""
    parts: list[str] = []
    prev = None
    for t in tokens:
        space = t.space
        if not space and prev is not None and t.moved and _would_merge(prev.text, t.text):
            space = " "
        if not space and prev is not None and prev.moved and _would_merge(prev.text, t.text):
            space = " "
        parts.append(space + t.text)
        prev = t
    return "".join(parts) + trailing


def _would_merge(left: str, right: str) -> bool:
    word_left, word_right = _is_word(left[-1]), _is_word(right[0])
    if word_left or word_right:
        return word_left and word_right
    return [m.group(0) for m in _PP_TOKEN.finditer(left + right)] != [left, right]


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def parse_params(text: str) -> tuple[list[str], bool] | None:
    """`a, b, ...` → (names, variadic); `...` becomes `__VA_ARGS__`, GNU `rest...` is `rest`."""
    if not text.strip():
        return [], False
    names, variadic = [], False
    for raw in text.split(","):
        p = raw.strip()
        if variadic or not _PARAM_NAME.fullmatch(p):
            return None
        if p.endswith("..."):
            variadic = True
            p = p[:-3] or "__VA_ARGS__"
        if p in names:
            return None
        names.append(p)
    return names, variadic


class MacroExpander:
    """Expands the macros of one line (plus the dynamic `__LINE__` and `__FILE__`)."""

    def __init__(self, macros: dict[str, Macro], fail: Callable[[Location, str], Exception]):
        self.macros = macros
        self.fail = fail

    def expand_text(self, line: str, loc: Location) -> str:
        names = _IDENTIFIER.findall(line)
        if not any(n in self.macros or n in _DYNAMIC for n in names):
            return line  # the common case: nothing to expand
        tokens = tokenize(line)
        trailing = line[len(render(tokens)):]
        return render(self.expand(tokens, loc), trailing)

    # -- the rescanning loop -------------------------------------------------------------------
    def expand(self, tokens: list[Tok], loc: Location) -> list[Tok]:
        out: list[Tok] = []
        pending = list(reversed(tokens))  # a stack: the next token is at the end
        while pending:
            tok = pending.pop()
            name = tok.text
            if not tok.is_ident or name in tok.hide:
                out.append(tok)
                continue
            if name == "__LINE__" and name not in self.macros:
                out.append(tok.with_(text=str(loc.line), moved=True))
                continue
            if name == "__FILE__" and name not in self.macros:
                out.append(tok.with_(text=_string_literal(loc.file), moved=True))
                continue
            macro = self.macros.get(name)
            if macro is None:
                out.append(tok)
                continue
            if macro.params is None:
                body = self._substitute(macro, {}, tok.hide | {name}, loc)
            else:
                call = self._collect_args(pending, loc, name)
                if call is None:  # a function-like macro name without '(' stays as it is
                    out.append(tok)
                    continue
                args, close = call
                args = self._bind(macro, args, loc)
                body = self._substitute(macro, args, (tok.hide & close.hide) | {name}, loc)
            if body:
                body[0] = body[0].with_(space=tok.space)
            pending.extend(reversed(body))
        return out

    def _collect_args(self, pending: list[Tok], loc: Location, name: str):
        """Take `( ... )` off the pending stack: the argument token lists and the ')' token."""
        if not pending or pending[-1].text != "(":
            return None
        pending.pop()
        args: list[list[Tok]] = [[]]
        depth = 0
        while pending:
            t = pending.pop()
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                if depth == 0:
                    return args, t
                depth -= 1
            elif t.text == "," and depth == 0:
                args.append([])
                continue
            args[-1].append(t)
        raise self.fail(loc, f"unterminated argument list of macro '{name}'")

    def _bind(self, macro: Macro, args: list[list[Tok]], loc: Location) -> dict[str, list[Tok]]:
        params = macro.params or []
        if len(args) == 1 and not args[0] and not params:
            args = []
        if macro.variadic:
            fixed = len(params) - 1
            if len(args) < fixed:
                raise self.fail(loc, f"macro '{macro.name}' needs at least {fixed} arguments, "
                                     f"got {len(args)}")
            rest: list[Tok] = []
            for k, a in enumerate(args[fixed:]):
                if k:
                    rest.append(Tok(",", "", frozenset(), True))
                rest.extend(a)
            args = args[:fixed] + [rest]
        elif len(args) != len(params):
            raise self.fail(loc, f"macro '{macro.name}' takes {len(params)} arguments, "
                                 f"got {len(args)}")
        return dict(zip(params, args))

    # -- replacement list ----------------------------------------------------------------------
    def _substitute(self, macro: Macro, args: dict[str, list[Tok]], hide: frozenset,
                    loc: Location) -> list[Tok]:
        """The body with parameters replaced, `#` and `##` applied, every token's hide set
        extended by `hide`."""
        body = macro.body_tokens
        function_like = macro.params is not None
        out: list[Tok] = []
        expanded_cache: dict[str, list[Tok]] = {}
        i = 0
        while i < len(body):
            t = body[i]
            nxt = body[i + 1] if i + 1 < len(body) else None
            if function_like and t.text == "#" and nxt is not None and nxt.text in args:
                out.append(Tok(_stringize(args[nxt.text]), t.space, frozenset(), True))
                i += 2
            elif function_like and t.text == "#":
                raise self.fail(loc, f"'#' in macro '{macro.name}' is not followed by a "
                                     f"macro parameter")
            elif t.text == "##":
                if not out or nxt is None:
                    raise self.fail(loc, f"'##' cannot be at either end of macro "
                                         f"'{macro.name}'")
                right, is_va, i = self._paste_operand(body, i + 1, args, macro)
                out = self._paste(out, right, is_va, loc, macro)
            elif t.text in args:
                if nxt is not None and nxt.text == "##":  # an operand of ## is not expanded
                    out.extend(args[t.text] or [_PLACEMARKER])
                else:
                    if t.text not in expanded_cache:
                        expanded_cache[t.text] = self.expand(args[t.text], loc)
                    piece = expanded_cache[t.text]
                    for k, a in enumerate(piece):
                        out.append(a.with_(space=t.space, moved=True) if k == 0 else a)
                i += 1
            else:
                out.append(t.with_(moved=True))
                i += 1
        return [x.with_(hide=x.hide | hide, moved=True) for x in out if x is not _PLACEMARKER]

    @staticmethod
    def _paste_operand(body, i, args, macro) -> tuple[list[Tok], bool, int]:
        """The right operand of ## (unexpanded), whether it is the variadic parameter, and the
        body index after it."""
        t = body[i]
        if t.text == "#" and macro.params is not None and i + 1 < len(body) \
                and body[i + 1].text in args:
            return [Tok(_stringize(args[body[i + 1].text]), "", frozenset(), True)], False, i + 2
        if t.text in args:
            is_va = macro.variadic and t.text == macro.params[-1]
            return list(args[t.text]) or [_PLACEMARKER], is_va, i + 1
        return [t], False, i + 1

    def _paste(self, out: list[Tok], right: list[Tok], is_va: bool, loc: Location,
               macro: Macro) -> list[Tok]:
        left = out.pop()
        first, rest = right[0], right[1:]
        # GNU: `, ## __VA_ARGS__` drops the comma when the variable arguments are empty and is
        # a plain comma otherwise
        if left.text == "," and is_va:
            return out + rest if first is _PLACEMARKER else out + [left] + right
        if left is _PLACEMARKER:
            glued = first
        elif first is _PLACEMARKER:
            glued = left
        else:
            text = left.text + first.text
            if len(tokenize(text)) != 1:
                raise self.fail(loc, f"pasting '{left.text}' and '{first.text}' in macro "
                                     f"'{macro.name}' does not give a valid token")
            glued = Tok(text, left.space, left.hide & first.hide, True)
        return out + [glued] + rest


_PLACEMARKER = Tok("", "", frozenset(), True)  # an empty argument next to ##


def _stringize(tokens: list[Tok]) -> str:
    text = ""
    for k, t in enumerate(tokens):
        piece = t.text
        if piece.startswith('"'):
            piece = piece.replace("\\", "\\\\").replace('"', '\\"')
        text += (" " if k and t.space else "") + piece
    return '"' + text + '"'


def _string_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
