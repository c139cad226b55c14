"""`inaemu run --fallback SLOTS` (docs/fallback.md) on the simulator: each job holds SLOTS of its
pool in the switch and a host aggregator on its first worker's host does the rest; results stay
correct, and that host visibly carries the aggregator's traffic. Refusals name the setting."""

from __future__ import annotations

import json

import pytest

from inaemu.cli import main
from inaemu.experiment.config import ConfigError, RunConfig

SMALL = ["--net", "sim", "--algo", "ina", "--size-mib", "0.03", "--elems", "8", "--pool", "16",
         "--window", "16", "--jobs", "2", "--workers", "3", "--timeout", "120"]


def test_fallback_jobs_are_correct_and_the_host_aggregates(tmp_path, capsys) -> None:
    received = {}
    for name, extra in (("switch", []), ("fallback", ["--fallback", "4"])):
        out = tmp_path / name
        status = main(["run", *SMALL, *extra, "--out", str(out)])
        printed = capsys.readouterr().out
        assert status == 0, printed
        summaries = json.loads((out / "summary.json").read_text())
        assert len(summaries) == 2
        assert all(s["correct"] and s["finished"] == 3 for s in summaries)
        workers = json.loads((out / "workers.json").read_text())
        received[name] = {(w["job"], w["worker"]): w["bytes_received"] for w in workers}
    for job in (1, 2):
        # 3/4 of the chunks: every worker's contribution lands on worker 0's host
        assert received["fallback"][job, 0] > 2 * received["fallback"][job, 1]
        assert received["switch"][job, 0] < 1.2 * received["switch"][job, 1]


def test_fallback_refusals() -> None:
    with pytest.raises(ConfigError, match=r"fallback: expected 1..pool size - 1 \(15\)"):
        RunConfig(net="sim", pool_size=16, window=16, fallback_slots=16)
    with pytest.raises(ConfigError, match="fallback: a host aggregator serves jobs aggregated "
                                          "at one switch"):
        RunConfig(net="sim", topo="leaf-spine", pool_size=16, window=16, fallback_slots=4)
