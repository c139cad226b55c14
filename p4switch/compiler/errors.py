"""Located compile errors.

Every stage reports problems as `Diagnostic`s that carry the original file, line and column (after
`#include` and `#line` mapping), so the user sees where the problem is in *their* source, with the
offending line and a caret. `CompileError` bundles one or more of them; its `str()` is the report.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    col: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN = Location("<unknown>", 0, 0)


@dataclass(frozen=True)
class Diagnostic:
    location: Location
    message: str
    source_line: str | None = None
    severity: str = "error"  # or "warning"

    def render(self) -> str:
        text = f"{self.location}: {self.severity}: {self.message}"
        if self.source_line is not None:
            caret = " " * max(self.location.col - 1, 0) + "^"
            text += f"\n{self.source_line.rstrip()}\n{caret}"
        return text


class CompileError(Exception):
    """The program cannot be compiled; `str(e)` is the full report, `.diagnostics` the parts."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self._diagnostics = list(diagnostics)
        super().__init__("\n".join(d.render() for d in self._diagnostics))

    @property
    def diagnostics(self) -> list[tuple[str, int, int, str]]:
        return [(d.location.file, d.location.line, d.location.col, d.message)
                for d in self._diagnostics]

    @property
    def parts(self) -> list[Diagnostic]:
        return list(self._diagnostics)


class SourceLines:
    """Reads source lines on demand, so diagnostics can quote the offending line."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def add(self, path: str, text: str) -> None:
        self._files[path] = text.splitlines()

    def line(self, path: str, number: int) -> str | None:
        lines = self._files.get(path)
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]


class Reporter:
    """Collects diagnostics for one compilation; `fail()` raises them all."""

    def __init__(self, sources: SourceLines):
        self.sources = sources
        self.diagnostics: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []

    def make(self, location: Location, message: str, severity: str = "error") -> Diagnostic:
        return Diagnostic(location, message, self.sources.line(location.file, location.line),
                          severity)

    def warn(self, location: Location, message: str) -> None:
        """Something legal but probably unintended; compilation goes on."""
        self.warnings.append(self.make(location, message, "warning"))

    def error(self, location: Location, message: str) -> CompileError:
        """A CompileError for one problem (raise it), including any collected before."""
        return CompileError(self.diagnostics + [self.make(location, message)])

    def note(self, location: Location, message: str) -> None:
        """Record a problem and keep going (for stages that can report several)."""
        self.diagnostics.append(self.make(location, message))

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise CompileError(self.diagnostics)
