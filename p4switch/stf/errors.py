"""Errors of the STF runner: each names the test file and line, and prints without a traceback."""

from __future__ import annotations


class StfError(Exception):
    """Base of every error the STF package raises for bad input (test file, program, arguments)."""


class StfSyntaxError(StfError):
    """The test file does not follow the STF grammar."""

    def __init__(self, path: str, line: int, column: int, message: str, source_line: str = ""):
        self.path = path
        self.line = line
        self.column = column
        self.message = message
        self.source_line = source_line
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line <= 0:
            return f"{self.path}: error: {self.message}"
        text = f"{self.path}:{self.line}:{self.column}: error: {self.message}"
        if self.source_line:
            text += f"\n  {self.source_line}\n  {' ' * (self.column - 1)}^"
        return text


class StfCommandError(StfError):
    """A well-formed command that does not fit the program, or that the switch refused."""

    def __init__(self, path: str, line: int, message: str):
        self.path = path
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: error: {self.message}"
