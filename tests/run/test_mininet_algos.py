"""Every algorithm on Mininet from one command: `inaemu run --net mininet --algo all` on a star
of 5 workers (not a power of two), at 0 % and 5 % loss: all seven correct (INA and the six host
algorithms over kernel TCP), each with its model time; nothing left running afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.leftovers import leftover_interfaces, leftover_processes

ALL = ["ina", "ring", "ps", "hring", "dbtree", "rhd", "torus"]


def leftovers(tag: str, out: Path) -> list[str]:
    return leftover_processes(lambda argv: str(out) in " ".join(argv)
                              and "hosts.agent" in " ".join(argv)) \
        + leftover_interfaces([f"{tag}s1-"])


@pytest.mark.root
@pytest.mark.parametrize("loss", [0, 5])
def test_every_algorithm_on_mininet(loss, tmp_path):
    tag, grpc_base = f"qa{loss}", 22100 + 10 * loss
    out = tmp_path / "run"
    command = [sys.executable, "-m", "inaemu", "run", "--net", "mininet", "--algo", "all",
               "--workers", "5", "--size-mib", "0.03", "--elems", "32", "--pool", "32",
               "--window", "32", "--rto", "0.05", "--loss", str(loss), "--timeout", "90",
               "--tag", tag, "--grpc-base", str(grpc_base), "--out", out.name]
    done = subprocess.run(command, cwd=out.parent, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    summaries = json.loads((out / "summary.json").read_text())
    assert [s["algo"] for s in summaries] == ALL
    for s in summaries:
        assert s["correct"] and s["finished"] == 5, s
        assert s["model_time_s"] > 0
    assert "meas/model" in done.stdout
    assert leftovers(tag, out) == []
