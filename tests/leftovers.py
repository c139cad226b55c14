"""What a Mininet run left behind: processes whose command line matches, and interfaces whose
name starts with a prefix (the teardown tests of `inaemu run` and `inaemu train`)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable


def leftover_processes(matches: Callable[[list[str]], bool]) -> list[str]:
    """'process PID: COMMAND' for every process whose argv `matches` says is the run's."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if matches(argv):
            found.append(f"process {entry.name}: {' '.join(argv)[:100]}")
    return found


def leftover_interfaces(prefixes: Iterable[str]) -> list[str]:
    prefixes = tuple(prefixes)
    return [f"interface {p.name}" for p in Path("/sys/class/net").iterdir()
            if p.name.startswith(prefixes)]
