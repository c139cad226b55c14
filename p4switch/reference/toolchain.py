"""Where the reference toolchain (real p4c and BMv2) is, if it is installed at all.

`find_toolchain()` looks in `$INAEMU_P4REF` (if set) or `/opt/p4ref`, and for the optimized
simple_switch in `/opt/p4ref-fast` (or `$INAEMU_P4REF_FAST`). It returns None when p4c or
simple_switch is missing: inaemu never needs the toolchain, callers skip instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ROOT = "/opt/p4ref"
DEFAULT_FAST_ROOT = "/opt/p4ref-fast"


@dataclass(frozen=True)
class Toolchain:
    root: Path
    p4c: Path                    # p4c-bm2-ss
    simple_switch: Path          # default build: logs, which the driver reads
    cli: Path                    # simple_switch_CLI (thrift)
    p4include: Path | None
    fast_simple_switch: Path | None = None   # -O3, no logging: for benchmarks only


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_toolchain(root: str | os.PathLike | None = None) -> Toolchain | None:
    """The toolchain under `root` (default: $INAEMU_P4REF or /opt/p4ref), or None."""
    base = Path(root or os.environ.get("INAEMU_P4REF") or DEFAULT_ROOT)
    tools = {name: base / "bin" / name
             for name in ("p4c-bm2-ss", "simple_switch", "simple_switch_CLI")}
    if not all(_executable(p) for p in tools.values()):
        return None
    include = base / "share" / "p4c" / "p4include"
    fast = Path(os.environ.get("INAEMU_P4REF_FAST") or DEFAULT_FAST_ROOT) / "bin/simple_switch"
    return Toolchain(root=base, p4c=tools["p4c-bm2-ss"], simple_switch=tools["simple_switch"],
                     cli=tools["simple_switch_CLI"],
                     p4include=include if include.is_dir() else None,
                     fast_simple_switch=fast if _executable(fast) else None)
