"""Every example runs as a user runs it, at a reduced size (examples/, docs/scenarios.md)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from inaemu.scenario import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))
FILES = sorted((ROOT / "examples" / "scenarios").glob("*.yaml"))


def test_there_are_the_examples_the_docs_name():
    assert {p.stem for p in SCRIPTS} >= {"link_failure", "switch_crash", "straggler",
                                         "two_tenants", "cross_traffic"}
    assert {p.stem for p in FILES} >= {"link-failure", "two-tenants"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_an_example_script_runs_and_its_sums_are_right(script, tmp_path):
    done = subprocess.run([sys.executable, str(script), "--size", "64KiB", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (tmp_path / "summary.json").exists()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_scenario_file_runs_at_a_reduced_size(path):
    scenario = load_scenario(path)
    small = tuple(dataclasses.replace(job, workload=dataclasses.replace(
        job.workload, size_bytes=min(job.workload.size_bytes, 64 * 1024)))
        for job in scenario.jobs)
    result = run_scenario(dataclasses.replace(scenario, jobs=small), bar=False)
    assert result.correct, [job.error for job in result.jobs]


def test_the_command_runs_a_file_and_says_where_the_results_are(tmp_path):
    text = (ROOT / "examples/scenarios/link-failure.yaml").read_text()
    small = tmp_path / "small.yaml"
    small.write_text(text.replace("size: 8MiB", "size: 64KiB"))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "inaemu", "scenario", str(small), "--out",
                           str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: correct" in done.stdout and str(out) in done.stdout
    assert (out / "timeline.png").exists()


def test_the_command_refuses_a_bad_file_with_its_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("network:\n  topology: star\n  hosts: 4\njobs:\n  - name: a\n"
                   "    algo: ina\n    workers: [h1, h9]\n    size: 1MiB\n")
    done = subprocess.run([sys.executable, "-m", "inaemu", "scenario", str(bad)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "line 7" in done.stderr and "h9" in done.stderr
