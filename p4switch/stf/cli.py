"""`inaemu stf`: run an STF test against a P4 program (compiled first) or its BMv2 JSON.

    inaemu stf --json PROGRAM.json TEST.stf
    inaemu stf PROGRAM.p4 TEST.stf [-I DIR] [-D NAME=VALUE] [-v] [--log-file FILE]

Exit status: 0 when every expectation holds, 1 when the test fails (the report says where),
2 when the inputs are unusable (bad arguments, STF syntax, JSON, P4, or a command the program
cannot take). Errors are one located message, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import StfError
from .parser import parse_stf_file
from .report import format_report
from .runner import StfRunner

EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


class _UsageError(Exception):
    pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="FILE",
                        help="PROGRAM.p4 TEST.stf, or only TEST.stf together with --json")
    parser.add_argument("--json", metavar="PROGRAM.json", dest="json_file",
                        help="run this BMv2 JSON (e.g. from real p4c) instead of compiling P4")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="add DIR to the P4 include path (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                        help="define a preprocessor macro for the P4 program (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show every command, packet in and packet out")
    parser.add_argument("--log-file", metavar="FILE",
                        help="write the switch's per-packet trace (parser, tables, actions) here")


def _split_inputs(args: argparse.Namespace) -> tuple[Path, str, Path]:
    """(program path, 'json'|'p4', stf path) from the positional arguments and --json."""
    if args.json_file:
        if len(args.inputs) != 1:
            raise _UsageError("with --json give exactly one more file, the STF test")
        return Path(args.json_file), "json", Path(args.inputs[0])
    if len(args.inputs) != 2:
        raise _UsageError("give PROGRAM.p4 TEST.stf (or --json PROGRAM.json TEST.stf)")
    program = Path(args.inputs[0])
    return program, "json" if program.suffix == ".json" else "p4", Path(args.inputs[1])


def _defines(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.isidentifier():
            raise _UsageError(f"-D {item}: expected NAME or NAME=VALUE")
        out[name] = value or "1"
    return out


def _load_json(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"{path}: cannot read the program: {exc}") from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _UsageError(f"{path}:{exc.lineno}:{exc.colno}: error: not valid JSON: "
                          f"{exc.msg}") from None
    if not isinstance(config, dict):
        raise _UsageError(f"{path}: error: a BMv2 JSON program is an object at the top level")
    return config


def _compile(path: Path, args: argparse.Namespace) -> dict:
    try:
        from p4switch.compiler import CompileError, compile_file
    except ImportError as exc:
        raise _UsageError(f"the P4 front end is not available: {exc}") from None
    if not path.is_file():
        raise _UsageError(f"{path}: no such P4 file")
    try:
        result = compile_file(str(path), include_dirs=tuple(args.include_dirs),
                              defines=_defines(args.defines) or None)
    except CompileError as exc:
        raise _UsageError(str(exc)) from None
    return result.bmv2


def _make_switch(config: dict, source: Path, trace):
    try:
        from p4switch.runtime import Switch
        from p4switch.runtime.errors import ConfigError
    except ImportError as exc:
        raise _UsageError(f"the switch runtime is not available: {exc}") from None
    try:
        return Switch(config, trace=trace)
    except ConfigError as exc:
        raise _UsageError(f"{source}: error: not a usable BMv2 program: {exc}") from None


def _open_trace(path: str | None, stack: list):
    if not path:
        return None
    try:
        from p4switch.runtime.trace import TextTrace
    except ImportError as exc:
        raise _UsageError(f"--log-file: the runtime's tracing is not available: {exc}") from None
    try:
        handle = open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise _UsageError(f"--log-file {path}: {exc}") from None
    stack.append(handle)
    return TextTrace(handle)


def run(args: argparse.Namespace) -> int:
    opened: list = []
    try:
        program_path, kind, stf_path = _split_inputs(args)
        test = parse_stf_file(stf_path)
        config = _load_json(program_path) if kind == "json" else _compile(program_path, args)
        switch = _make_switch(config, program_path, _open_trace(args.log_file, opened))
        log = print if args.verbose else None
        result = StfRunner(switch, config, log=log).run(test)
    except (_UsageError, StfError) as exc:
        print(f"inaemu stf: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:        # `inaemu stf -v ... | head`: the reader went away
        return EXIT_ERROR
    finally:
        for handle in opened:
            handle.close()
    print(format_report(result))
    return EXIT_PASS if result.passed else EXIT_FAIL
