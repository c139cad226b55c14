"""Compiling with real p4c (`p4c-bm2-ss`), with a content-addressed cache of its outputs.

p4c needs about a second per program, so a differential run that compiles the same program for
several tests would spend most of its time there. `compile_p4` keys its cache on the bytes of
the program, the defines, the include directories' names and p4c's own path, so a test session
compiles each program once (the cache lives in a directory the caller chooses, e.g. a pytest
temporary directory, or by default a temporary directory per process, removed at its exit).
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .toolchain import Toolchain

_DEFAULT_CACHE: Path | None = None


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    json_path: Path | None        # BMv2 JSON (None when p4c failed)
    p4info_path: Path | None      # P4Info text
    stderr: str                   # p4c's messages (warnings even when ok)
    seconds: float                # p4c's wall time; 0.0 when the result came from the cache
    cached: bool = False


def _cache_dir(cache_dir: str | Path | None) -> Path:
    global _DEFAULT_CACHE
    if cache_dir is not None:
        path = Path(cache_dir)
    else:
        if _DEFAULT_CACHE is None:
            _DEFAULT_CACHE = Path(tempfile.mkdtemp(prefix="inaemu-p4c-"))
            atexit.register(shutil.rmtree, _DEFAULT_CACHE, ignore_errors=True)
        path = _DEFAULT_CACHE
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cache_key(toolchain: Toolchain, program: Path, includes, defines, p4runtime) -> str:
    digest = hashlib.sha256()
    digest.update(str(toolchain.p4c).encode() + (b"\0P4RT" if p4runtime else b""))
    digest.update(program.read_bytes())
    for directory in includes:
        digest.update(b"\0I" + str(directory).encode())
    for name, value in sorted(defines.items()):
        digest.update(b"\0D" + f"{name}={value}".encode())
    # programs that #include siblings change with them: hash the sibling sources too
    for sibling in sorted(program.parent.glob("*.p4*")):
        if sibling != program:
            digest.update(b"\0S" + sibling.name.encode() + sibling.read_bytes())
    return digest.hexdigest()[:24]


def compile_p4(toolchain: Toolchain, program: str | Path, *, includes=(), defines=None,
               cache_dir: str | Path | None = None, p4runtime: bool = True,
               timeout_s: float = 120.0) -> CompileResult:
    """`p4c-bm2-ss PROGRAM -o X.json --p4runtime-files X.p4info.txtpb [-I..] [-D..]`, cached.

    With `p4runtime=False` no P4Info is asked for: p4c then accepts programs it can run on BMv2
    but not describe to P4Runtime (e.g. an action profile without a name).
    """
    program = Path(program)
    defines = dict(defines or {})
    key = _cache_key(toolchain, program, includes, defines, p4runtime)
    directory = _cache_dir(cache_dir) / key
    json_path = directory / f"{program.stem}.json"
    p4info_path = directory / f"{program.stem}.p4info.txtpb"
    stderr_path = directory / "p4c.stderr"
    status_path = directory / "p4c.status"
    if status_path.exists():
        ok = status_path.read_text().strip() == "0"
        return CompileResult(ok, json_path if ok else None,
                             p4info_path if ok and p4runtime else None,
                             stderr_path.read_text(), 0.0, cached=True)
    directory.mkdir(parents=True, exist_ok=True)
    command = [str(toolchain.p4c), "--arch", "v1model", "-o", str(json_path)]
    if p4runtime:
        command += ["--p4runtime-files", str(p4info_path)]
    for include in includes:
        command += ["-I", str(include)]
    for name, value in defines.items():
        command += ["-D", f"{name}={value}" if value is not None else name]
    command.append(str(program))
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
        returncode, stderr = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        returncode, stderr = -1, f"p4c did not finish within {timeout_s:.0f} s"
    seconds = time.monotonic() - start
    ok = returncode == 0 and json_path.exists()
    stderr_path.write_text(stderr)
    status_path.write_text("0" if ok else str(returncode or 1))
    has_p4info = ok and p4runtime
    return CompileResult(ok, json_path if ok else None, p4info_path if has_p4info else None,
                         stderr, seconds)
