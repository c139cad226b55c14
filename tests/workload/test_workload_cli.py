"""`inaemu workload` as a user runs it: a Chakra trace in, a run's table and files out, and
the run exported as Chakra ET that reads back as the same workload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inaemu.workload import graph as g
from inaemu.workload.chakra import read_chakra, write_chakra

ROOT = Path(__file__).resolve().parents[2]


def toy(n: int = 4) -> g.Workload:
    buckets = [(0.002, 64 * 1024), (0.001, 128 * 1024)]
    return g.Workload("toy", tuple(g.RankGraph(r, tuple(g.ddp_iteration(r, 0.003, buckets,
                                                                        0.0005)))
                                   for r in range(n)))


def inaemu(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inaemu", "workload", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_a_trace_runs_and_the_run_exports_as_the_same_workload(tmp_path):
    workload = toy()
    write_chakra(workload, tmp_path / "in")
    done = inaemu("--chakra", str(tmp_path / "in"), "--algo", "both", "--workers", "4",
                  "--switch-pps", "1e6", "--out", str(tmp_path / "out"), "--export-chakra",
                  str(tmp_path / "run"), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ina" in done.stdout and "ring" in done.stdout and "INA speedup" in done.stdout
    for name in ("summary.json", "workload.csv", "timeline-ina.png", "timeline-ring.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    back = read_chakra(tmp_path / "run")
    assert back.n == workload.n
    for mine, theirs in zip(workload.ranks, back.ranks):
        assert [(type(a), a.id, a.deps, getattr(a, "size_bytes", None)) for a in mine.nodes] \
            == [(type(b), b.id, b.deps, getattr(b, "size_bytes", None)) for b in theirs.nodes]
        for a, b in zip(mine.nodes, theirs.nodes):
            if isinstance(a, g.Compute):
                assert b.duration_s == pytest.approx(a.duration_s, abs=1e-6)


def test_bad_arguments_are_refused_in_one_line(tmp_path):
    done = inaemu("--model", "resnet51")
    assert done.returncode == 2 and "unknown model 'resnet51'" in done.stderr
    done = inaemu("--chakra", str(tmp_path / "missing"))
    assert done.returncode == 2 and "no such file" in done.stderr
    done = inaemu("--model", "resnet50", "--algo", "nccl")
    assert done.returncode == 2 and "--algo: unknown nccl" in done.stderr
    write_chakra(toy(8), tmp_path / "big")
    done = inaemu("--chakra", str(tmp_path / "big"), "--topo", "star", "--workers", "4")
    assert done.returncode == 2 and "8 ranks" in done.stderr
