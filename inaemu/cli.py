"""The one command-line entry point, `inaemu`.

Each subcommand lives in the module that owns its concept; this file only maps names to those
modules. A subcommand module exposes `add_arguments(parser)` and `run(args) -> int` (the exit
status). Modules are imported lazily so that `inaemu --help` stays fast and a broken optional
part cannot take the whole CLI down.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from controller.p4runtime_gencode import stale_bindings_hint

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("inaemu.run", "all-reduce experiment: in-network aggregation vs ring, on Mininet or the simulator"),
    "train": ("inaemu.train.cli", "train a small model with PyTorch DDP whose gradients cross the emulated network (INA or host algorithms)"),
    "scenario": ("inaemu.scenario.cli", "one network through a timeline of jobs and events (failures, stragglers, cross traffic), on the simulator or Mininet"),
    "workload": ("inaemu.workload.cli", "training iterations of a real model (DDP buckets) or a Chakra trace over the network: iteration time, exposed communication, INA's speedup"),
    "compare": ("inaemu.compare", "every all-reduce algorithm over sizes and worker counts: time and busbw vs size, measured and modelled"),
    "compile": ("p4switch.compiler.cli", "compile a P4_16 v1model program to BMv2 JSON and P4Info"),
    "stf": ("p4switch.stf.cli", "run an STF test against a P4 program or its BMv2 JSON"),
    "switch": ("p4switch.switch_cli", "run a software switch on Linux interfaces (simple_switch_grpc-like)"),
    "controller": ("controller.cli", "push programs and entries to running switches over P4Runtime"),
    "topology": ("topologies.cli", "write a topology (star, linear, leaf-spine, fat-tree) as JSON"),
    "trace": ("inaemu.trace.cli", "follow every aggregation packet of a traced run: per-slot lifecycles and plots"),
    "selfcheck": ("inaemu.selfcheck", "compile and packet-test (STF) every P4 program the project ships"),
    "shims": ("inaemu.shims", "write p4c-bm2-ss, simple_switch_grpc and simple_switch commands "
                              "that run inaemu"),
}


def _load(name: str):
    module_name, _ = SUBCOMMANDS[name]
    return importlib.import_module(module_name)


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument error is one line on stderr (what, and where to look), then exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="inaemu",
        description="In-network aggregation emulator: P4 switches, P4Runtime, Mininet.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=OneLineErrorParser)
    for name, (_, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only == name:
            _load(name).add_arguments(p)
    return parser


def _stale_bindings(prog: str, error: TypeError) -> int:
    """Exit 2 with the fix when protobuf refused the P4Runtime bindings; any other TypeError is
    a bug and goes on up."""
    hint = stale_bindings_hint(error)
    if hint is None:
        raise error
    print(f"{prog}: {hint}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in SUBCOMMANDS:
        parser = build_parser()
        if command is None:
            parser.print_help()
            return 0 if any(a in ("-h", "--help") for a in argv) else 2
        parser.error(f"unknown command '{command}' (choose from {', '.join(SUBCOMMANDS)})")
    try:
        parser = build_parser(only=command)
    except ImportError as exc:
        print(f"inaemu: the '{command}' command is not available in this installation: {exc}",
              file=sys.stderr)
        return 2
    except TypeError as exc:
        return _stale_bindings("inaemu", exc)
    args, extra = parser.parse_known_args(argv)
    if extra:
        print(f"inaemu {command}: error: unrecognized arguments: {' '.join(extra)} "
              f"(see 'inaemu {command} --help')", file=sys.stderr)
        return 2
    try:
        return int(_load(command).run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except TypeError as exc:
        return _stale_bindings(f"inaemu {command}", exc)
