"""`inaemu compile`: P4_16 source to BMv2 JSON and P4Info, with p4c-bm2-ss's flags.

Outputs are written to a temporary file and renamed into place, so a failed compilation never
leaves a partial or stale output behind.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from .errors import CompileError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", help="the P4_16 (v1model) source file")
    parser.add_argument("-o", "--output", help="BMv2 JSON output (default: PROGRAM.json)")
    parser.add_argument("--p4runtime-files", metavar="FILE",
                        help="P4Info output(s), comma-separated; text format (.txt/.txtpb), "
                             "JSON (.json) or binary (.bin/.pb) chosen by extension")
    parser.add_argument("--p4runtime-format", choices=("text", "json", "binary"),
                        help="force the P4Info format regardless of the extension")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="add a directory to the #include search path")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="define a preprocessor macro")
    parser.add_argument("--arch", default="v1model", choices=("v1model",),
                        help="the target architecture (only v1model)")
    parser.add_argument("--target", default="bmv2", choices=("bmv2",), help="the target")
    parser.add_argument("--std", default="p4-16", choices=("p4-16",), help="language version")


def parse_defines(items: list[str]) -> dict[str, str]:
    defines = {}
    for item in items:
        name, sep, value = item.partition("=")
        defines[name] = value if sep else "1"
    return defines


def _write_atomically(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".inaemu-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _p4info_bytes(result, path: str, forced: str | None) -> bytes:
    from google.protobuf import json_format
    fmt = forced or ("json" if path.endswith(".json") else
                     "binary" if path.endswith((".bin", ".pb")) else "text")
    if fmt == "json":
        return json_format.MessageToJson(result.p4info).encode()
    if fmt == "binary":
        return result.p4info.SerializeToString()
    return result.p4info_text().encode()


def run(args: argparse.Namespace) -> int:
    from . import compile_file
    started = time.perf_counter()
    for d in args.include_dirs:
        if not os.path.isdir(d):
            print(f"inaemu compile: error: -I {d}: not a directory", file=sys.stderr)
            return 2
    for item in args.defines:
        if not item.partition("=")[0].isidentifier():
            print(f"inaemu compile: error: -D {item}: not a macro name", file=sys.stderr)
            return 2
    try:
        result = compile_file(args.program, include_dirs=args.include_dirs,
                              defines=parse_defines(args.defines))
    except CompileError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - last resort: a compiler bug, never a traceback
        print(f"{args.program}: internal compiler error: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 3
    for warning in result.warnings:
        print(warning.render(), file=sys.stderr)
    output = args.output or os.path.splitext(args.program)[0] + ".json"
    outputs = [(output, (json.dumps(result.bmv2, indent=2) + "\n").encode())]
    for path in (args.p4runtime_files or "").split(","):
        if path:
            outputs.append((path, _p4info_bytes(result, path, args.p4runtime_format)))
    try:
        for path, data in outputs:
            _write_atomically(path, data)
    except OSError as exc:
        print(f"inaemu compile: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    print(f"compiled {args.program} -> {', '.join(p for p, _ in outputs)} ({elapsed:.2f}s)")
    return 0
