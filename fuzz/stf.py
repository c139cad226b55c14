"""The STF parser (`inaemu stf`), and the parsed test run against p4src/l3_forward.p4.

Allowed out: `StfError` (StfSyntaxError: file, line, column; StfCommandError: file, line)."""

from __future__ import annotations

from p4switch.runtime import Switch
from p4switch.stf.errors import StfError
from p4switch.stf.parser import parse_stf
from p4switch.stf.runner import StfRunner

from .common import compiled


def TestOneInput(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        test = parse_stf(text, "fuzz.stf")
    except StfError:
        return
    bmv2, json_text, _ = compiled("p4src/l3_forward.p4")
    if len(test.commands) > 200:      # the parser is the target; keep runs short
        return
    try:
        StfRunner(Switch(json_text), bmv2).run(test)
    except StfError:
        pass
