"""`inaemu train --format int8 --scaling block` on the simulator: the options reach the INA
workers (fewer bytes per iteration than int32) and the model still learns (docs/formats.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from inaemu.cli import main


def test_int8_block_training_sends_fewer_bytes_and_learns(tmp_path: Path, capsys) -> None:
    sent = {}
    for fmt in ("int32", "int8"):
        out = tmp_path / fmt
        status = main(["train", "--net", "sim", "--algo", "ina", "--workers", "3",
                       "--iterations", "8", "--eval-every", "8", "--elems", "64",
                       "--format", fmt, "--scaling", "block", "--out", str(out)])
        printed = capsys.readouterr().out
        assert status == 0, printed
        (summary,) = json.loads((out / "summary.json").read_text())
        assert summary["error"] is None and summary["iterations"] == 8
        points = list(csv.DictReader((out / "eval.csv").open()))
        assert float(points[-1]["train_loss"]) < float(points[0]["train_loss"])   # it learns
        sent[fmt] = summary["bytes_sent_per_iteration"]
    assert sent["int8"] < 0.35 * sent["int32"]
