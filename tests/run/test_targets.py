"""`inaemu run --target inaemu|bmv2 --compiler inaemu|p4c`: the main job on the real
simple_switch_grpc, with p4c's JSON and with inaemu's, and p4c's JSON on inaemu switch (Mininet,
root, reference toolchain), and the refusals that keep a run from starting when it cannot work (any user, one line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inaemu.cli import main
from topologies import mininet_switch

from test_mininet_runs import inaemu_run, leftovers

REFERENCE = Path("/opt/p4ref/bin")
HAS_REFERENCE = (REFERENCE / "simple_switch_grpc").exists() and \
    (REFERENCE / "p4c-bm2-ss").exists()
SMALL = ["--net", "mininet", "--size-mib", "0.05", "--elems", "64", "--pool", "32",
         "--window", "16", "--rto", "0.05", "--timeout", "60"]


@pytest.mark.parametrize("argv, message", [
    (["--net", "sim", "--target", "bmv2"], "--net sim runs inaemu's own runtime and compiler"),
    (["--net", "sim", "--compiler", "p4c"], "needs --net mininet"),
    (["--target", "bmv2", "--loss", "1"], "simple_switch_grpc has no loss model"),
    (["--target", "bmv2", "--trace"], "`inaemu trace` reads inaemu switch logs"),
    (["--target", "tofino"], "invalid choice: 'tofino'"),
])
def test_runs_that_cannot_work_are_refused_in_one_line(argv, message):
    done = subprocess.run([sys.executable, "-m", "inaemu", "run", *argv], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("inaemu run: error: ") and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


@pytest.mark.parametrize("option, tool", [("--target", "simple_switch_grpc"),
                                          ("--compiler", "p4c-bm2-ss")])
def test_a_missing_reference_tool_is_one_line(monkeypatch, capsys, tmp_path, option, tool):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("INAEMU_P4REF", raising=False)
    monkeypatch.setattr(mininet_switch, "REFERENCE_ROOT", str(tmp_path / "p4ref"))
    value = "bmv2" if option == "--target" else "p4c"
    status = main(["run", option, value, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and not (tmp_path / "out").exists()
    assert err == (f"inaemu run: error: {option} {value}: {tool} is not on PATH nor in "
                   f"{tmp_path / 'p4ref'}/bin (install BMv2/p4c or set INAEMU_P4REF)\n")


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.skipif(not HAS_REFERENCE, reason="reference toolchain (/opt/p4ref) not installed")
@pytest.mark.parametrize("target, compiler", [("bmv2", "p4c"), ("bmv2", "inaemu"),
                                              ("inaemu", "p4c")])
def test_main_job_on_real_simple_switch_grpc_and_p4c(tmp_path, target, compiler):
    tag, grpc_base = {("bmv2", "p4c"): ("rbp", 21700), ("bmv2", "inaemu"): ("rbi", 21710),
                      ("inaemu", "p4c"): ("rip", 21720)}[target, compiler]
    out = tmp_path / "run"
    done = inaemu_run(tag, grpc_base, out, *SMALL, "--target", target, "--compiler", compiler,
                      timeout=200)
    assert done.returncode == 0, done.stdout + done.stderr
    switch = "simple_switch_grpc" if target == "bmv2" else "inaemu switch"
    assert f"1 switch ({switch})" in done.stdout
    summaries = json.loads((out / "summary.json").read_text())
    assert [s["algo"] for s in summaries] == ["ina", "ring"]
    for s in summaries:
        assert s["correct"] and s["finished"] == 4, s
        assert (s["target"], s["compiler"]) == (target, compiler)
    # the program came from the compiler asked for, and the switch asked for ran it
    meta = json.loads((out / "ina.json").read_text())["__meta__"]["compiler"]
    assert (meta == "inaemu") == (compiler == "inaemu")
    switch_output = (out / "net" / f"{tag}s1.out").read_text()
    assert ("inaemu switch ready" in switch_output) == (target == "inaemu")
    assert ("Adding interface" in switch_output) == (target == "bmv2")
    counters = json.loads((out / "switch_counters.json").read_text())["1"][f"{tag}s1"]
    assert counters["ina_contributions"] > 0
    config = json.loads((out / "config.json").read_text())
    assert (config["target"], config["compiler"]) == (target, compiler)
    assert leftovers(tag, grpc_base, out) == []
