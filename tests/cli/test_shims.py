"""`inaemu shims DIR`: commands named like the real tools that run inaemu, never taken for the
real tools, never overwriting a file they did not write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from topologies.mininet_switch import reference_tool

INAEMU = [sys.executable, "-m", "inaemu"]
BASIC = Path(__file__).resolve().parents[2] / "tests" / "p4" / "basic.p4"


def test_shims_compile_like_p4c_and_are_refreshed_not_duplicated(tmp_path):
    shims = tmp_path / "bin"
    for _ in range(2):                                   # idempotent
        done = subprocess.run([*INAEMU, "shims", str(shims)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in shims.iterdir()) == ["p4c-bm2-ss", "simple_switch",
                                                       "simple_switch_grpc"]
    assert all(os.access(p, os.X_OK) for p in shims.iterdir())
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}
    done = subprocess.run(["p4c-bm2-ss", "--p4v", "16", "-o", "b.json", str(BASIC)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and (tmp_path / "b.json").exists(), done.stderr
    done = subprocess.run(["simple_switch_grpc", "--no-p4", "-L", "loud"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("inaemu switch: error: --log-level")


def test_a_real_file_is_not_overwritten(tmp_path):
    (tmp_path / "simple_switch_grpc").write_text("#!/bin/sh\necho real\n")
    done = subprocess.run([*INAEMU, "shims", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "exists and is not an inaemu shim; not overwritten" in done.stderr
    assert (tmp_path / "simple_switch_grpc").read_text() == "#!/bin/sh\necho real\n"


def test_shims_on_path_are_not_the_reference_tools(tmp_path, monkeypatch):
    subprocess.run([*INAEMU, "shims", str(tmp_path)], check=True, capture_output=True)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("INAEMU_P4REF", str(tmp_path / "none"))
    monkeypatch.setattr("topologies.mininet_switch.REFERENCE_ROOT", str(tmp_path / "none"))
    assert reference_tool("simple_switch_grpc") is None
    assert reference_tool("p4c-bm2-ss") is None
