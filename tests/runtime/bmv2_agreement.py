"""The runtime against real simple_switch on one BMv2 JSON: the same frames, the same outputs."""

from __future__ import annotations

import json
from pathlib import Path


def assert_agrees_with_simple_switch(program: dict, switch, frames: list[bytes],
                                     tmp_path: Path) -> None:
    """Every frame into `switch` (running `program`) and into real simple_switch on port 0:
    each port must send the same frames in the same order."""
    from p4switch.reference import find_toolchain, run_stf_bmv2
    ours: dict[int, list[bytes]] = {}
    for frame in frames:
        for port, data in switch.receive(0, frame):
            ours.setdefault(port, []).append(data)
    path = tmp_path / "program.json"
    path.write_text(json.dumps(program))
    real = run_stf_bmv2(path, "".join(f"packet 0 {f.hex()}\n" for f in frames),
                        toolchain=find_toolchain())
    assert real.error is None, real.error
    assert real.outputs == ours
