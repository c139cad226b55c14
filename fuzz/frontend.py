"""The P4 front end on source text (`inaemu compile`).

Allowed out: `CompileError` (located diagnostics), except one whose message is an "internal
compiler error" (the stage tracker's wrapping of an unexpected exception: a bug). A program
that compiles must give BMv2 JSON the runtime loads (a `ConfigError` for the compiler's own
output is a bug of one of the two) and P4Info text, or, as p4c, a located CompileError for
the P4Info alone (an implementation instantiated in a table property without a name)."""

from __future__ import annotations

from p4switch.compiler import CompileError, compile_source
from p4switch.runtime import Switch
from p4switch.runtime.errors import ConfigError

from .common import Finding, python_packet_code


def _check_refusal(exc: CompileError) -> None:
    for diag in exc.parts:
        if "internal compiler error" in diag.message:
            raise Finding(str(exc)) from None


def TestOneInput(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        result = compile_source(text, "fuzz.p4")
    except CompileError as exc:
        _check_refusal(exc)
        return
    try:
        with python_packet_code():
            Switch(result.bmv2)
    except ConfigError as exc:
        raise Finding(f"the runtime refuses the compiler's output: {exc}") from None
    try:
        result.p4info_text()
    except CompileError as exc:
        _check_refusal(exc)
