"""scripts/bench_agent.py: the wire digest it compares trees by is deterministic (two runs of
the same hosts/ agree, so a difference means different packets), and a comparison prints its
ratio."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "bench_agent.py"
SMALL = ["--workers", "2", "--k", "32", "--size-mib", "1", "--pool", "8", "--window", "4",
         "--rounds", "1"]


def run(*args: str) -> str:
    return subprocess.run([sys.executable, str(SCRIPT), *args, *SMALL], check=True,
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=300).stdout


def test_the_wire_digest_is_the_same_for_the_same_code() -> None:
    """Two digests per run: results handed over one by one (`receive`) and in batches
    (`receive_many`); each is deterministic and each run exercises recovery."""
    first, second = (json.loads(run("--role", "digest")) for _ in range(2))
    assert first == second
    assert set(first) == {"one", "batched"}
    for how in ("one", "batched"):
        assert first[how]["retransmissions"] > 0      # the lossy run exercises recovery


def test_a_comparison_prints_equal_digests_and_a_ratio() -> None:
    out = run("--baseline", str(PROJECT_ROOT))
    lines = [line.split() for line in out.splitlines() if "wire digest" in line]
    # per way of handing results over: the baseline's digest, then this tree's
    assert [words[0] for words in lines] == ["baseline", "now", "baseline", "now"]
    assert lines[0][3] == lines[1][3] and lines[2][3] == lines[3][3]
    assert "WIRE BEHAVIOUR DIFFERS" not in out
    assert "baseline / now:" in out
