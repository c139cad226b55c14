"""`inaemu compile`: P4_16 source to BMv2 JSON and P4Info, with p4c-bm2-ss's flags.

The command line is p4c-bm2-ss's, so build scripts written for it (the p4lang tutorials'
`p4c-bm2-ss --p4v 16 --p4runtime-files X -o Y prog.p4`) run unchanged: `--p4v 16`,
`--std p4-16`, `--target bmv2`, `--arch v1model` and the deprecated `--p4runtime-file` are
accepted; P4_14 is refused with a clear message. Outputs are written to a temporary file and
renamed into place, so a failed compilation never leaves a partial or stale output behind; they
get the mode an ordinary `open()` would give (0666 minus the umask), as p4c's do.
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
    parser.add_argument("--p4runtime-file", metavar="FILE",
                        help="deprecated p4c spelling: one P4Info file, in --p4runtime-format "
                             "(binary if not given)")
    parser.add_argument("--arch", default="v1model", help="the target architecture (v1model)")
    parser.add_argument("--target", default="bmv2", help="the target (bmv2)")
    parser.add_argument("--std", default="p4-16", metavar="{p4-14|p4-16}",
                        help="language version (only p4-16)")
    parser.add_argument("--p4v", metavar="{14|16}", help="language version, p4c's older "
                        "spelling of --std (only 16)")


# What each option accepts (p4c-bm2-ss's own spellings); anything else is one clear line and
# exit status 2.
_ACCEPTED = {"--arch": ("arch", ("v1model",)), "--target": ("target", ("bmv2",)),
             "--std": ("std", ("p4-16", "16")), "--p4v": ("p4v", ("16",))}
_P4_14 = ("p4-14", "p4_14", "14", "1")


def _check_versions(args: argparse.Namespace) -> str | None:
    """The first unsupported language/target choice, as an error message (None: all fine)."""
    for option, (attribute, accepted) in _ACCEPTED.items():
        value = getattr(args, attribute)
        if value is None or value in accepted:
            continue
        if value in _P4_14:
            return (f"{option} {value}: P4_14 is not supported; inaemu compiles P4_16 only "
                    f"({option} {accepted[0]})")
        return f"{option} {value}: not supported (only {' or '.join(accepted)})"
    return None


def parse_defines(items: list[str]) -> dict[str, str]:
    defines = {}
    for item in items:
        name, sep, value = item.partition("=")
        defines[name] = value if sep else "1"
    return defines


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_atomically(path: str, data: bytes, mode: int) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".inaemu-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)     # mkstemp's 0600 would hide the outputs from others
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
    problem = _check_versions(args)
    if problem is not None:
        print(f"inaemu compile: error: {problem}", file=sys.stderr)
        return 2
    if args.p4runtime_file is not None:
        print("inaemu compile: warning: --p4runtime-file and --p4runtime-format are deprecated; "
              "use --p4runtime-files", file=sys.stderr)
    if args.output is not None and os.path.isdir(args.output):
        print(f"inaemu compile: error: -o {args.output}: is a directory (give the JSON file)",
              file=sys.stderr)
        return 2
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
    try:
        for path in (args.p4runtime_files or "").split(","):
            if path:
                outputs.append((path, _p4info_bytes(result, path, args.p4runtime_format)))
        if args.p4runtime_file:
            path = args.p4runtime_file
            # p4c's deprecated single-file option: binary unless --p4runtime-format says otherwise
            outputs.append((path, _p4info_bytes(result, path, args.p4runtime_format or "binary")))
    except CompileError as exc:               # a program with BMv2 JSON but no P4Info
        print(str(exc), file=sys.stderr)
        return 1
    mode = 0o666 & ~_umask()
    try:
        for path, data in outputs:
            _write_atomically(path, data, mode)
    except OSError as exc:
        print(f"inaemu compile: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    print(f"compiled {args.program} -> {', '.join(p for p, _ in outputs)} ({elapsed:.2f}s)")
    return 0
