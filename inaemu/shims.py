"""`inaemu shims DIR`: `p4c-bm2-ss`, `simple_switch_grpc` and `simple_switch` commands that run
inaemu.

Scripts written for the real tools (the p4lang tutorials' Makefile and utils/run_exercise.py,
p4c's STF test harness backends/bmv2/bmv2stf.py) then run on inaemu with only PATH changed:

    inaemu shims ~/inaemu-shims && export PATH=~/inaemu-shims:$PATH && make run

Each shim is a two-line shell script that execs `inaemu compile` or `inaemu switch` with the
same arguments, through this installation's own `inaemu` (absolute path), so it works from any
directory and under sudo. `simple_switch` is `inaemu switch --no-grpc`: simple_switch's command
line is simple_switch_grpc's without the gRPC target options, and it serves no P4Runtime. A
shim carries `SHIM_MARK`, so nothing that looks for the real tools (`inaemu run --target
bmv2`) mistakes it for them. Existing files other than shims are never
overwritten. See docs/tutorials.md.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from pathlib import Path

SHIM_MARK = "# inaemu shim"
# real tool name -> the inaemu command line (subcommand and fixed options) that takes its own
SHIMS = {"p4c-bm2-ss": ("compile",), "simple_switch_grpc": ("switch",),
         "simple_switch": ("switch", "--no-grpc")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR",
                        help="where to write p4c-bm2-ss, simple_switch_grpc and simple_switch "
                             "(created if missing); put it first on PATH")


def inaemu_command() -> list[str]:
    """This installation's `inaemu`: the console script beside the interpreter, else PATH's,
    else the interpreter running the package."""
    beside = Path(sys.executable).with_name("inaemu")
    if beside.exists():
        return [str(beside.absolute())]
    found = shutil.which("inaemu")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "inaemu"]


def shim_target(tool: str) -> str:
    """What `tool` runs, as words: e.g. `switch --no-grpc`."""
    return " ".join(SHIMS[tool])


# simple_switch serves Thrift on 9090 unless told another port, and Thrift is its only runtime
THRIFT_DEFAULT = {"simple_switch": 9090}


def shim_text(tool: str) -> str:
    command = " ".join(shlex.quote(part) for part in [*inaemu_command(), *SHIMS[tool]])
    default = ""
    if tool in THRIFT_DEFAULT:
        default = (f'case " $* " in *" --thrift-port"*) ;; '
                   f'*) set -- --thrift-port {THRIFT_DEFAULT[tool]} "$@" ;; esac\n')
    return (f"#!/bin/sh\n{SHIM_MARK}: {tool} -> inaemu {shim_target(tool)}\n"
            f"{default}exec {command} \"$@\"\n")


def is_shim(path: Path) -> bool:
    """Whether `path` is a shim this command wrote (and not the real tool)."""
    try:
        with open(path, "rb") as f:
            return SHIM_MARK.encode() in f.read(200)
    except OSError:
        return False


def write_shims(directory: Path) -> list[Path]:
    """Write (or refresh) every shim; OSError or FileExistsError (a real file in the way)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for tool in SHIMS:
        path = directory / tool
        if path.exists() and not is_shim(path):
            raise FileExistsError(f"{path} exists and is not an inaemu shim; not overwritten")
        path.write_text(shim_text(tool))
        path.chmod(0o755)
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        written = write_shims(directory)
    except FileExistsError as error:
        print(f"inaemu shims: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"inaemu shims: error: {directory}: {error.strerror}", file=sys.stderr)
        return 2
    for path in written:
        print(f"inaemu shims: {path} -> inaemu {shim_target(path.name)}")
    print(f"inaemu shims: now run: export PATH={shlex.quote(str(directory.absolute()))}:$PATH")
    return 0
