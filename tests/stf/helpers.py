"""Running `inaemu stf` as a user does, for the tests in this folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT


def inaemu_stf(*args: str | Path) -> subprocess.CompletedProcess:
    """`inaemu stf ARGS...` via the console script when installed (as in CI), else the module."""
    script = Path(sys.executable).parent / "inaemu"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "inaemu"]
    return subprocess.run(command + ["stf", *map(str, args)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120)
