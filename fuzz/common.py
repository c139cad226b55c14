"""What every harness shares: the `Finding` an oracle raises, a byte reader for structured
inputs that works with and without atheris, and the repository's programs compiled once."""

from __future__ import annotations

import contextlib
import functools
import gc
import types
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Finding(AssertionError):
    """An input broke a promise the entry point makes (an internal error reported as a
    located diagnostic, a gRPC INTERNAL status, a decode that does not round-trip ...)."""


class Reader:
    """Consumes a fuzz input as a stream of small decisions, then the rest as bytes.

    Plain Python on purpose (not atheris.FuzzedDataProvider), so that the corpus replays in CI
    without the fuzzer; running out of bytes yields zeros, never an exception."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def int(self, nbytes: int) -> int:
        return int.from_bytes(bytes(self.byte() for _ in range(nbytes)), "big")

    def pick(self, options):
        return options[self.byte() % len(options)] if options else None

    def take(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk

    def rest(self) -> bytes:
        return self.take(self.left)


@contextlib.contextmanager
def python_packet_code():
    """Generate Python packet code only, within the block: a harness that loads a new program
    per input must not start a C compiler per input (the C path is fuzzed with fixed programs
    instead). The environment is restored after, so replaying in pytest changes nothing else."""
    before = os.environ.get("INAEMU_NATIVE")
    os.environ["INAEMU_NATIVE"] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["INAEMU_NATIVE"]
        else:
            os.environ["INAEMU_NATIVE"] = before


@functools.cache
def compiled(relpath: str):
    """A repository program compiled by inaemu's front end: (bmv2 dict, json text, p4info)."""
    from p4switch.compiler import compile_file

    result = compile_file(ROOT / relpath)
    return result.bmv2, json.dumps(result.bmv2), result.p4info


GENERATED_PREFIX = "<p4switch"


def generated_functions() -> list[types.FunctionType]:
    """The live functions of the switch's generated packet code (exec'd from text, so their
    code's file name is `<p4switch ...>`: the packet path, the fast path, codeshare's copies).

    Why a harness needs them: atheris instruments imported modules, and `instrument_all` skips
    any function whose `__module__` is not in `sys.modules`; exec'd code has none, so the packet
    targets counted only the runtime's own (imported) code. scripts/fuzz.py instruments these
    functions one by one after set-up instead (`atheris.instrument_func`)."""
    # (`type(obj) is`, not isinstance: isinstance asks a proxy for its `__class__`, and some
    # live objects warn when asked, torch's deprecated `reduce_op` among them)
    return [obj for obj in gc.get_objects()
            if type(obj) is types.FunctionType
            and obj.__code__.co_filename.startswith(GENERATED_PREFIX)]
