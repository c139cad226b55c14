"""The same seed gives the same run, byte for byte: in one process, and across processes whose
Python hash seeds differ (nothing may depend on set or dict-of-object iteration order)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from inaemu.sim import SimJob, simulate
from tests.conftest import PROJECT_ROOT
from topologies.builders import star

SCRIPT = """
import hashlib, json, sys
from inaemu.sim import SimJob, simulate
from topologies.builders import star
topology = star(4)
trace = []
result = simulate(topology, [SimJob(1, ("h1", "h2", "h3", "h4"))], algo=sys.argv[1],
                  size_bytes=4096, elems_k=8, loss=10, bw=100, seed=11, trace=trace)
records = [r.as_dict() for r in result.records]
print(hashlib.sha256("\\n".join(trace).encode()).hexdigest(), len(trace))
print(json.dumps(records, sort_keys=True))
print(hashlib.sha256(b"".join(r.result.tobytes() for r in result.records)).hexdigest())
"""


def run_once(algo: str, seed: int) -> tuple[list[str], list[tuple]]:
    topology = star(4)
    trace: list[str] = []
    result = simulate(topology, [SimJob(1, ("h1", "h2", "h3", "h4"))], algo=algo,
                      size_bytes=4096, elems_k=8, loss=10, bw=100, seed=seed, trace=trace)
    return trace, [(r.time_s, r.bytes_sent, r.retransmissions, r.result.tobytes())
                   for r in result.records]


@pytest.mark.parametrize("algo", ["ina", "ring"])
def test_the_same_seed_gives_the_same_trace_and_times(algo: str) -> None:
    first, again, other = run_once(algo, 3), run_once(algo, 3), run_once(algo, 4)
    assert len(first[0]) > 100 and any(" lost " in line for line in first[0])
    assert first == again
    assert first[0] != other[0]


@pytest.mark.parametrize("algo", ["ina", "ring"])
def test_runs_in_processes_with_different_hash_seeds_agree(algo: str) -> None:
    outputs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, "-c", SCRIPT, algo], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    _digest, lines = outputs[0].split("\n")[0].split()
    assert int(lines) > 100
    records = json.loads(outputs[0].split("\n")[1])
    assert all(r["correct"] for r in records)
