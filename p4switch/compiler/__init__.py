"""inaemu's P4_16 front end: v1model programs to BMv2 JSON and P4Info.

Stages: preprocess -> parse (tokens, AST) -> checks (names, types, constants) -> lowering
(BMv2 JSON) -> P4Info. `compile_file`/`compile_source` run them all; any problem in the input is a
`CompileError` whose `str()` is the full report (file:line:col, source line, caret).
"""

from __future__ import annotations

from .driver import CompileResult, compile_file, compile_source
from .errors import CompileError

__all__ = ["compile_file", "compile_source", "CompileError", "CompileResult"]
