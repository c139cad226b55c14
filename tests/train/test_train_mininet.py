"""`inaemu train --net mininet` as root: 2 PyTorch workers on Mininet hosts (gloo for set-up,
gradients through the DDP hook: INA in the switch, then the ring over TCP) train 10 iterations.
Both finish; INA's final loss is within the tolerance of the ring's; INA's whole loss curve is
bit-identical to the simulator's (integer sums in the switch do not depend on the network);
nothing of the run is left behind."""

from __future__ import annotations

import os

import pytest

from tests.leftovers import leftover_interfaces, leftover_processes

if not os.environ.get("CI"):     # CI installs the torch extra, and there a missing torch fails
    pytest.importorskip("torch")

import json
import subprocess
import sys
from pathlib import Path

from inaemu.train.config import TrainConfig
from inaemu.train.sim_train import train_sim

ROOT = Path(__file__).resolve().parents[2]
TAG, GRPC = "tn", 22350
ITERATIONS = 10


def leftovers(out: Path) -> list[str]:
    def ours(argv: list[str]) -> bool:
        line = " ".join(argv)
        return (str(out) in line and "inaemu.train.worker" in line) or f"127.0.0.1:{GRPC}" in line
    return leftover_processes(ours) + leftover_interfaces([f"{TAG}s1-"])


@pytest.mark.root
def test_two_workers_train_on_mininet(tmp_path: Path) -> None:
    out = tmp_path / "train"
    done = subprocess.run(
        [sys.executable, "-m", "inaemu", "train", "--net", "mininet", "--workers", "2",
         "--iterations", str(ITERATIONS), "--eval-every", "5", "--tag", TAG, "--grpc-base",
         str(GRPC), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ina vs ring: largest minibatch-loss gap" in done.stdout
    summary = {s["algo"]: s for s in json.loads((out / "summary.json").read_text())}
    for s in summary.values():
        assert s["net"] == "mininet" and s["error"] is None and s["iterations"] == ITERATIONS
        assert s["comm_ms"] > 0 and s["bytes_sent_per_iteration"] > 0
    assert abs(summary["ina"]["final_batch_loss"] - summary["ring"]["final_batch_loss"]) <= 1e-4
    assert abs(summary["ina"]["final_train_loss"] - summary["ring"]["final_train_loss"]) <= 1e-4
    assert summary["ina"]["max_batch_loss_gap"] <= 1e-4
    # the same run in the simulator: the same INA curve to the last bit
    simulated = train_sim(TrainConfig(algos=("ina",), workers=2, iterations=ITERATIONS,
                                      eval_every=5, net="sim"), "ina", lambda _line: None)
    rows = [line.split(",") for line in (out / "train.csv").read_text().splitlines()[1:]]
    mininet_ina = [float(row[3]) for row in rows if row[0] == "ina"]
    assert mininet_ina == [row["loss"] for row in simulated.rows]
    assert (out / "train.png").exists() and (out / "eval.csv").exists()
    assert leftovers(out) == []
