"""scripts/p4c_samples.py: which samples it takes from a p4c checkout or bare git directory, what
it reports for each, and its summary (with and without real BMv2). A fake checkout stands in
for p4c's, so the test needs neither p4c's sources nor the network."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import program

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("p4c_samples", ROOT / "scripts" / "p4c_samples.py")
samples = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("p4c_samples", samples)   # dataclasses look their module up there
SPEC.loader.exec_module(samples)

PASSING = program("apply { sm.egress_spec = 2; }")
PASSING_STF = "packet 0 000000000001 000000000002 0800\nexpect 2 000000000001 000000000002 0800 $\n"
FAILING_STF = "packet 0 000000000001 000000000002 0800\nexpect 3 000000000001 000000000002 0800 $\n"
REFUSED = program("apply { sm.egress_spec = nosuch; }")


@pytest.fixture
def checkout(tmp_path) -> Path:
    folder = tmp_path / "p4c" / samples.SAMPLES
    folder.mkdir(parents=True)
    files = {
        "good-bmv2.p4": PASSING, "good-bmv2.stf": PASSING_STF,
        "wrong-bmv2.p4": PASSING, "wrong-bmv2.stf": FAILING_STF,
        "refused-bmv2.p4": REFUSED, "refused-bmv2.stf": PASSING_STF,
        "no-stf-bmv2.p4": PASSING,                                  # no test: not a sample
        "psa-bmv2.p4": "#include <psa.p4>\n", "psa-bmv2.stf": "",   # not v1model
        "good.p4": PASSING, "good.stf": PASSING_STF,               # not a -bmv2 program
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    return tmp_path / "p4c"


def test_samples_are_v1model_bmv2_programs_with_an_stf(checkout, tmp_path):
    folder = samples.samples_folder(checkout, tmp_path / "scratch")
    assert [p.name for p in samples.select_samples(folder)] == [
        "good-bmv2.p4", "refused-bmv2.p4", "wrong-bmv2.p4"]


def test_a_bare_git_directory_is_read_from_head(checkout, tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(checkout)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "samples"], check=True)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(checkout), str(bare)], check=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    folder = samples.samples_folder(bare, scratch)
    assert folder.is_relative_to(scratch)
    assert len(samples.select_samples(folder)) == 3


def test_inaemu_outcomes_name_the_reason(checkout):
    folder = checkout / samples.SAMPLES
    run = {p.stem: samples.run_inaemu(p, p.with_suffix(".stf"))
           for p in samples.select_samples(folder)}
    assert run["good-bmv2"] == ("pass", "")
    assert run["wrong-bmv2"][0] == "fail"
    kind, reason = run["refused-bmv2"]
    assert kind == "refused" and reason.startswith("refused-bmv2.p4:") and "nosuch" in reason


def test_the_summary_counts_inaemu_among_bmv2_passes():
    results = [samples.SampleResult("a-bmv2", "pass", "pass"),
               samples.SampleResult("b-bmv2", "pass", "internal", "b-bmv2.p4:3:1: error: x"),
               samples.SampleResult("c-bmv2", "refused", "refused", "c", "p4c: no")]
    out = io.StringIO()
    assert samples.print_report(results, out) == 1
    text = out.getvalue()
    assert "b-bmv2  internal  b-bmv2.p4:3:1: error: x" in text
    assert "c-bmv2: bmv2 refused (p4c: no); inaemu refused" in text
    assert text.rstrip().endswith(
        "3 v1model STF samples; real BMv2 passes 2; inaemu passes 1 of those (1 in all)")


def test_without_bmv2_every_sample_counts():
    results = [samples.SampleResult("a-bmv2", "absent", "pass"),
               samples.SampleResult("b-bmv2", "absent", "fail", "why")]
    out = io.StringIO()
    assert samples.print_report(results, out) == 1
    assert out.getvalue().rstrip().endswith("2 v1model STF samples (no real BMv2 here); "
                                            "inaemu passes 1")


def test_main_runs_inaemu_only_and_exits_1_on_a_failure(checkout, capsys):
    assert samples.main([str(checkout), "--no-bmv2", "-j", "1", "--only", "good-bmv2"]) == 0
    assert samples.main([str(checkout), "--no-bmv2", "-j", "1"]) == 1
    assert "wrong-bmv2" in capsys.readouterr().out
