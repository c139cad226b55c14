"""STF tests (p4c's simple test format) run against the project's switch runtime.

`parser` turns the text into typed commands, `expectations` compares packets with `expect`
patterns, `runner` drives a `p4switch.runtime.Switch`, `report` prints the outcome, and `cli` is
the `inaemu stf` subcommand.
"""

from .errors import StfCommandError, StfError, StfSyntaxError
from .parser import parse_stf, parse_stf_file

__all__ = ["StfCommandError", "StfError", "StfSyntaxError", "parse_stf", "parse_stf_file"]
