"""Stage 2a: tokens. Splits preprocessed text into located tokens.

`>>` (and `>>=`) is never produced: two `>` tokens (`>` then `>=`) with `adjacent` set let the parser close nested generics
(`bit<bit<8>>`-style) and still read a right shift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import Location, Reporter
from .preprocess import PreprocessedSource

KEYWORDS = frozenset("""
abstract action apply bit bool break const continue control default else enum error exit extern
false for header
header_union if in inout int list match_kind out package parser return select state string struct
switch table transition true tuple type typedef varbit void value_set this
""".split())

# longest first
_PUNCT = ["|+|=", "|-|=", "{#}", "<<=", "&&&", "...", "|+|", "|-|", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
          "^=", "<<", "<=", ">=", "==", "!=", "&&", "||", "++", "..", "+", "-",
          "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "(", ")", "{", "}", "[", "]",
          ";", ":", ",", ".", "?", "@", "_"]

_NUMBER = re.compile(r"(\d+)([ws])(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*)"
                     r"|0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*",
                     re.ASCII)
# ASCII only (re.ASCII: `\w` and `\d` would take any script's letters and digits, and
# str.isalpha/isdigit are true for them too): P4 names and numbers are ASCII, anything else
# is an unexpected character where it stands
_IDENT = re.compile(r"[A-Za-z_]\w*", re.ASCII)
_IDENT_REST = re.compile(r"\w", re.ASCII)
_SPACE = re.compile(r"[ \t\r\f\v]+")
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


_STRING_START = re.compile(r'"(?:\\.|[^"\\\n])*\\?$')   # opened, not closed on its line
_STRING_END = re.compile(r'(?:\\.|[^"\\\n])*"')           # closed on a later line


def _string_over_lines(source: PreprocessedSource, index: int, start: int, loc: Location,
                       reporter: Reporter) -> tuple[str, int, str, int]:
    """A string literal opened at column `start` of line `index` and closed on a later line:
    its text (newlines kept), the line it ends on (index and text) and the column after it."""
    line = source.lines[index][0]
    if _STRING_START.match(line, start) is None:
        raise reporter.error(loc, "unterminated string literal")
    parts = [line[start + 1:]]
    while index + 1 < len(source.lines):
        index += 1
        line = source.lines[index][0]
        m = _STRING_END.match(line)
        if m:
            parts.append(line[:m.end() - 1])
            return "\n".join(parts), index, line, m.end()
        parts.append(line)
    raise reporter.error(loc, "unterminated string literal")


@dataclass(slots=True)
class Token:
    kind: str        # 'id', 'num', 'str', 'kw', the punctuation itself, 'eof', 'unknown'
    text: str
    loc: Location
    adjacent: bool = False   # no space between this token and the next
    value: int | None = None
    width: int | None = None
    signed: bool = False


def _parse_int(text: str) -> int:
    t = text.replace("_", "")
    if t[:2].lower() == "0d":
        return int(t[2:], 10)
    if t[:2].lower() == "0o":
        return int(t[2:], 8)
    return int(t, 0) if t[:2].lower() in ("0x", "0b") else int(t, 10)


def tokenize(source: PreprocessedSource, reporter: Reporter) -> list[Token]:
    tokens: list[Token] = []
    index = -1
    while index + 1 < len(source.lines):
        index += 1
        line, file, number = source.lines[index]
        i, n = 0, len(line)
        while i < n:
            m = _SPACE.match(line, i)
            if m:
                i = m.end()
                if tokens and tokens[-1].loc.line == number and tokens[-1].loc.file == file:
                    tokens[-1].adjacent = False
                continue
            loc = Location(file, number, i + 1)
            c = line[i]
            if "0" <= c <= "9":
                m = _NUMBER.match(line, i)
                tok = Token("num", m.group(0), loc)
                try:
                    if m.group(1):
                        tok.width = int(m.group(1))
                        tok.signed = m.group(2) == "s"
                        tok.value = _parse_int(m.group(3))
                    else:
                        tok.value = _parse_int(m.group(0))
                except ValueError:
                    raise reporter.error(loc, f"malformed number '{m.group(0)}'") from None
                i = m.end()
            elif (c.isascii() and c.isalpha()) or (
                    c == "_" and i + 1 < n and _IDENT_REST.match(line[i + 1])):
                m = _IDENT.match(line, i)
                word = m.group(0)
                tok = Token("kw" if word in KEYWORDS else "id", word, loc)
                i = m.end()
            elif c == '"':
                m = _STRING.match(line, i)
                if m:
                    tok = Token("str", m.group(0)[1:-1], loc)
                    i = m.end()
                else:   # a string over several lines (p4c takes them: SAI P4's annotations)
                    text, index, line, i = _string_over_lines(source, index, i, loc, reporter)
                    file, number = source.lines[index][1:]
                    n = len(line)
                    tok = Token("str", text, loc)
            else:
                for p in _PUNCT:
                    if line.startswith(p, i):
                        tok = Token(p, p, loc)
                        i += len(p)
                        break
                else:   # kept for a free-form annotation's body; refused anywhere else
                    tok = Token("unknown", c, loc)
                    i += 1
            tok.adjacent = True
            tokens.append(tok)
        if tokens:
            tokens[-1].adjacent = False
    last = source.origin(len(source.lines) - 1)
    tokens.append(Token("eof", "end of input", Location(last[0], last[1], 1)))
    _refuse_stray_characters(tokens, reporter)
    return tokens


def _refuse_stray_characters(tokens: list[Token], reporter: Reporter) -> None:
    """A character that is no P4 token may stand only in a free-form annotation's body
    (`@note(that's it)`, as p4c takes it); anywhere else it is an error where it stands."""
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind == "unknown":
            raise reporter.error(t.loc, f"unexpected character '{t.text}'")
        if t.kind == "@" and i + 2 < len(tokens) and tokens[i + 1].kind in ("id", "kw") and \
                tokens[i + 2].kind in ("(", "["):
            opener = tokens[i + 2].kind
            closer = ")" if opener == "(" else "]"
            depth, i = 1, i + 3
            while i < len(tokens) and depth and tokens[i].kind != "eof":
                depth += (tokens[i].kind == opener) - (tokens[i].kind == closer)
                i += 1
            continue
        i += 1
