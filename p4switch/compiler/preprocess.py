"""Stage 1: the C preprocessor subset P4 programs use.

`#include "x"` / `<x>` (searched in the including file's folder for quotes, then the -I folders,
then this package's `p4include/`), object- and function-like `#define`, `#undef`, `#if`, `#ifdef`,
`#ifndef`, `#elif`, `#else`, `#endif` with `defined()` and C integer expressions, `#error`,
`#line`, `#pragma` (ignored). Macro expansion itself (C semantics: `#`, `##`, variadic macros,
rescanning) is `macros.py`. The output keeps, for every line, the file and line it came from, so
later stages can point at the user's source.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .errors import Location, Reporter
from .macros import Macro, MacroExpander, parse_params

INCLUDE_DIR = Path(__file__).resolve().parent / "p4include"
_IDENT = re.compile(r"[A-Za-z_]\w*")
MAX_INCLUDE_DEPTH = 64
# All the source text one compilation reads, its files and includes together (ina.p4 and what it
# includes: ~60 KB). Past it the compiler stops with a located error instead of reading on: an
# include of a huge file (or the same one thousands of times) would otherwise fill the memory.
MAX_SOURCE_BYTES = 16 << 20


class _NotReadable(Exception):
    """Why a file cannot be a source file (not an OSError: it has no errno)."""


@dataclass
class PreprocessedSource:
    """Preprocessed text and, for each of its lines, where that line came from."""

    lines: list[tuple[str, str, int]] = field(default_factory=list)  # (text, file, line)

    @property
    def text(self) -> str:
        return "\n".join(t for t, _, _ in self.lines) + "\n"

    def origin(self, line_index: int) -> tuple[str, int]:
        if 0 <= line_index < len(self.lines):
            _, f, n = self.lines[line_index]
            return f, n
        if self.lines:
            _, f, n = self.lines[-1]
            return f, n
        return "<empty>", 1


def _strip_comments(text: str) -> str:
    """Replace comments with spaces, keeping newlines so line numbers stay right."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':   # a string may go on over lines (as in p4c): comments in it are text
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            j = i
            while j < n and text[j] not in '"/':
                j += 1
            if j == i:
                out.append(c)
                j = i + 1
            else:
                out.append(text[i:j])
            i = j
    return "".join(out)


class Preprocessor:
    def __init__(self, reporter: Reporter, include_dirs=(), defines: dict[str, str] | None = None):
        self.reporter = reporter
        self.include_dirs = [Path(d) for d in include_dirs] + [INCLUDE_DIR]
        self.macros: dict[str, Macro] = {}
        for name, value in (defines or {}).items():
            self.macros[name] = Macro(name, "1" if value is None else str(value))
        self.out = PreprocessedSource()
        self._expander = MacroExpander(self.macros, self.reporter.error)
        self._once: set[str] = set()
        self._bytes_read = 0

    # -- files ------------------------------------------------------------------------------
    def run_file(self, path: str) -> PreprocessedSource:
        text = self._read(path, Location(path, 1, 1), from_command_line=True)
        self._process(text, path, depth=0)
        return self.out

    def run_text(self, text: str, name: str) -> PreprocessedSource:
        self.reporter.sources.add(name, text)
        self._process(text, name, depth=0)
        return self.out

    def _read(self, path: str, where: Location, from_command_line: bool = False) -> str:
        try:
            data = self._read_bytes(path)
            text = data.decode("utf-8-sig")  # tolerate a byte-order mark
        except BlockingIOError:
            why = "it has nothing to read yet (not an ordinary file)"
            return self._unreadable(path, where, why, from_command_line)
        except (OSError, UnicodeDecodeError, _NotReadable) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return self._unreadable(path, where, why, from_command_line)
        self.reporter.sources.add(path, text)
        return text

    def _read_bytes(self, path: str) -> bytes:
        """The file's bytes, if it is a regular file and the sources read so far stay within
        MAX_SOURCE_BYTES. Opened non-blocking: a FIFO or a kernel file such as /proc/kmsg
        (regular, but its read waits for the next kernel message) must not hang the compiler;
        for an ordinary file the flag changes nothing. Devices (/dev/zero, endless) are refused
        before any read."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _NotReadable("not a regular file")
            room = MAX_SOURCE_BYTES - self._bytes_read
            chunks, size = [], 0
            while True:
                chunk = os.read(fd, min(1 << 20, room - size + 1))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > room:
                    raise _NotReadable(f"the program's source files would exceed "
                                       f"{MAX_SOURCE_BYTES:,} bytes")
        finally:
            os.close(fd)
        self._bytes_read += size
        return b"".join(chunks)

    def _unreadable(self, path: str, where: Location, why: str, from_command_line: bool):
        msg = f"cannot read '{path}': {why}"
        # a file named on the command line has no line to point at; an #include has its own
        raise self.reporter.error(Location(path, 0, 0) if from_command_line else where,
                                  msg) from None

    def _find_include(self, name: str, quoted: bool, current: str, where: Location) -> str:
        candidates = []
        if quoted:
            candidates.append(Path(current).parent / name)
        candidates += [d / name for d in self.include_dirs]
        for c in candidates:
            try:
                if c.is_file():
                    return os.path.normpath(str(c))
            except OSError:     # a name the file system refuses (too long ...): not there
                continue
        raise self.reporter.error(where, f"cannot find include file '{name}'")

    # -- lines --------------------------------------------------------------------------------
    def _process(self, text: str, path: str, depth: int) -> None:
        raw = _strip_comments(text).split("\n")
        # (frame: is this branch active, has any branch been taken, is the parent active)
        conditions: list[list[bool]] = []
        logical_file, line_offset = path, 0
        i = 0
        while i < len(raw):
            start = i
            line = raw[i]
            while line.endswith("\\") and i + 1 < len(raw):
                i += 1
                line = line[:-1] + raw[i]
            i += 1
            number = start + 1 + line_offset
            where_file = logical_file
            active = all(frame[0] for frame in conditions)
            stripped = line.lstrip()
            if stripped.startswith("#"):
                col = len(line) - len(stripped) + 1
                loc = Location(where_file, number, col)
                m = re.match(r"(\w*)(.*)", stripped[1:].strip())
                directive, rest = m.group(1), m.group(2).strip()
                if directive in ("if", "ifdef", "ifndef"):
                    if not active:
                        conditions.append([False, True, False, loc])
                    else:
                        value = self._condition(directive, rest, loc)
                        conditions.append([value, value, True, loc])
                elif directive == "elif":
                    frame = self._frame(conditions, loc, "#elif")
                    if frame[2] and not frame[1]:
                        frame[0] = self._condition("if", rest, loc)
                        frame[1] = frame[0]
                    else:
                        frame[0] = False
                elif directive == "else":
                    frame = self._frame(conditions, loc, "#else")
                    frame[0] = frame[2] and not frame[1]
                    frame[1] = True
                elif directive == "endif":
                    self._frame(conditions, loc, "#endif")
                    conditions.pop()
                elif not active:
                    pass
                elif directive == "include":
                    self._include(rest, path, loc, depth)
                elif directive == "define":
                    self._define(rest, loc)
                elif directive == "undef":
                    self.macros.pop(rest.split()[0] if rest else "", None)
                elif directive == "error":
                    raise self.reporter.error(loc, f"#error {rest}".rstrip())
                elif directive == "warning" or directive == "pragma" or directive == "":
                    if rest.strip() == "once":
                        self._once.add(path)
                elif directive == "line" or directive.isdigit():
                    parts = (directive + " " + rest).split() if directive.isdigit() else rest.split()
                    try:
                        new_line = int(parts[0])
                    except (ValueError, IndexError):
                        raise self.reporter.error(loc, "#line needs a line number") from None
                    line_offset = new_line - (i + 1)
                    if len(parts) > 1:
                        logical_file = parts[1].strip('"')
                else:
                    raise self.reporter.error(loc, f"unknown preprocessor directive '#{directive}'")
                for k in range(start, i):
                    self.out.lines.append(("", where_file, k + 1 + (line_offset if k > start else 0)))
                continue
            if active:
                # a function-like macro call may continue on the next lines: join them
                while i < len(raw) and self._open_macro_call(line) and \
                        not raw[i].lstrip().startswith("#"):
                    line = line + " " + raw[i]
                    i += 1
                expanded = self.expand(line, Location(where_file, number, 1))
                self.out.lines.append((expanded, where_file, number))
            else:
                self.out.lines.append(("", where_file, number))
            for k in range(start + 1, i):
                self.out.lines.append(("", where_file, k + 1 + line_offset))
        if conditions:
            raise self.reporter.error(conditions[-1][3], "unterminated #if (missing #endif)")

    def _open_macro_call(self, line: str) -> bool:
        """Does the line end inside the argument list of a function-like macro call?"""
        for m in _IDENT.finditer(line):
            macro = self.macros.get(m.group(0))
            if macro is None or macro.params is None:
                continue
            rest = line[m.end():].lstrip()
            if rest.startswith("(") and rest.count("(") > rest.count(")"):
                return True
        return False

    def _frame(self, conditions, loc, what):
        if not conditions:
            raise self.reporter.error(loc, f"{what} without #if")
        return conditions[-1]

    def _include(self, rest: str, current: str, loc: Location, depth: int) -> None:
        rest = self.expand(rest, loc) if rest[:1] not in '"<' else rest
        m = re.match(r'"([^"]+)"|<([^>]+)>', rest)
        if not m:
            raise self.reporter.error(loc, "#include expects \"file\" or <file>")
        name = m.group(1) or m.group(2)
        target = self._find_include(name, m.group(1) is not None, current, loc)
        if target in self._once:
            return
        if depth >= MAX_INCLUDE_DEPTH:
            raise self.reporter.error(loc, "#include nested too deeply (recursive include?)")
        self._process(self._read(target, loc), target, depth + 1)

    def _define(self, rest: str, loc: Location) -> None:
        m = re.match(r"([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)", rest)
        if not m:
            raise self.reporter.error(loc, "#define needs a macro name")
        name, has_params, params, body = m.group(1), m.group(2), m.group(3), m.group(4)
        if has_params is not None and rest[len(name)] == "(":
            parsed = parse_params(params)
            if parsed is None:
                raise self.reporter.error(
                    loc, f"bad parameter list '({params})' in #define {name}: expected "
                         f"distinct names separated by ',', optionally ending in '...'")
            names, variadic = parsed
            self.macros[name] = Macro(name, body.strip(), names, variadic)
        else:
            body = rest[len(name):].strip()
            self.macros[name] = Macro(name, body)

    # -- #if expressions --------------------------------------------------------------------
    def _condition(self, directive: str, rest: str, loc: Location) -> bool:
        if directive in ("ifdef", "ifndef"):
            name = rest.split()[0] if rest.split() else ""
            if not _IDENT.fullmatch(name):
                raise self.reporter.error(loc, f"#{directive} needs a macro name")
            return (name in self.macros) == (directive == "ifdef")
        text = re.sub(r"defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)",
                      lambda m: "1" if (m.group(1) or m.group(2)) in self.macros else "0", rest)
        text = self.expand(text, loc)
        text = _IDENT.sub("0", text)
        try:
            return CondEvaluator(text).value() != 0
        except ValueError as exc:
            raise self.reporter.error(loc, f"bad #{directive} expression: {exc}") from None

    # -- macro expansion --------------------------------------------------------------------
    def expand(self, line: str, loc: Location) -> str:
        """The line with every macro expanded (C semantics: see `macros.py`)."""
        return self._expander.expand_text(line, loc)


class CondEvaluator:
    """Evaluates the C integer expressions of #if (after macro replacement)."""

    _BINARY = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!="], ["<", ">", "<=", ">="],
               ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]

    def __init__(self, text: str):
        self.tokens = re.findall(r"0[xX][0-9a-fA-F]+|\d+|\|\||&&|==|!=|<=|>=|<<|>>|\S", text)
        self.pos = 0

    def value(self) -> int:
        v = self._ternary()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected '{self.tokens[self.pos]}'")
        return v

    def _peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _ternary(self) -> int:
        c = self._binary(0)
        if self._peek() == "?":
            self.pos += 1
            a = self._ternary()
            if self._peek() != ":":
                raise ValueError("expected ':'")
            self.pos += 1
            b = self._ternary()
            return a if c else b
        return c

    def _binary(self, level: int) -> int:
        if level == len(self._BINARY):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in self._BINARY[level]:
            op = self.tokens[self.pos]
            self.pos += 1
            right = self._binary(level + 1)
            left = self._apply(op, left, right)
        return left

    @staticmethod
    def _apply(op, a, b):
        if op in ("/", "%") and b == 0:
            raise ValueError("division by zero")
        return int({
            "||": lambda: bool(a or b), "&&": lambda: bool(a and b), "|": lambda: a | b,
            "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: a == b, "!=": lambda: a != b,
            "<": lambda: a < b, ">": lambda: a > b, "<=": lambda: a <= b, ">=": lambda: a >= b,
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a % b,
        }[op]())

    def _unary(self) -> int:
        t = self._peek()
        if t is None:
            raise ValueError("expression ends too early")
        self.pos += 1
        if t in ("!", "-", "+", "~"):
            v = self._unary()
            return {"!": int(not v), "-": -v, "+": v, "~": ~v}[t]
        if t == "(":
            v = self._ternary()
            if self._peek() != ")":
                raise ValueError("expected ')'")
            self.pos += 1
            return v
        try:
            return int(t.rstrip("uUlL"), 0)
        except ValueError:
            raise ValueError(f"unexpected '{t}'") from None
