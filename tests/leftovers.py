"""What a Mininet run left behind: processes whose command line matches, and interfaces whose
name starts with a prefix (the teardown tests of `inaemu run` and `inaemu train`)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from inaemu.experiment.mininet_run import running_processes


def leftover_processes(matches: Callable[[list[str]], bool]) -> list[str]:
    """'process PID: COMMAND' for every process whose argv `matches` says is the run's."""
    return [f"process {pid}: {' '.join(argv)[:100]}" for pid, argv in running_processes()
            if matches(argv)]


def leftover_interfaces(prefixes: Iterable[str]) -> list[str]:
    prefixes = tuple(prefixes)
    return [f"interface {p.name}" for p in Path("/sys/class/net").iterdir()
            if p.name.startswith(prefixes)]
