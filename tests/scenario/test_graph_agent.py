"""The scenario agent's workload-graph mode without a network: a stand-in all-reducer sums the
ranks' seeded gradients (or gets it wrong), and the agent's messages must say so."""

import io
import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from hosts import scenario_agent
from hosts.agent import gradient
from hosts.api import AllreduceStats

N = 3
SIZES = (4096, 1000, 65536 + 12)


def _graph() -> dict:
    nodes, calls = [{"id": 0, "kind": "compute", "duration_s": 0.001, "size_bytes": 0,
                     "deps": [], "name": "forward"}], []
    for index, size in enumerate(SIZES):
        nodes.append({"id": 1 + 2 * index, "kind": "compute", "duration_s": 0.001,
                      "size_bytes": 0, "deps": [2 * index if index else 0], "name": "bwd"})
        nodes.append({"id": 2 + 2 * index, "kind": "all_reduce", "duration_s": 0.0,
                      "size_bytes": size * 4, "deps": [1 + 2 * index], "name": "bucket"})
        calls.append(2 + 2 * index)
    return {"graph": nodes, "calls": calls, "prefetch_bytes": 8192}


class _SummingWorker:
    """All-reduces by computing the float32 sum of every rank's seeded gradient of the call
    whose size it is given; `wrong_call` returns a result off by one at one element."""

    def __init__(self, agent, wrong_call=None):
        self.agent, self.wrong_call, self.calls = agent, wrong_call, 0
        self.stats = None

    def allreduce(self, x):
        index = self.calls
        self.calls += 1
        seed = scenario_agent.iteration_seed(self.agent["seed_base"], index)
        total = sum(gradient(seed, r, x.size).astype(np.float64) for r in range(N))
        result = total.astype(np.float32)
        if index == self.wrong_call:
            result[7] += 1.0
        self.stats = AllreduceStats("ring", seconds=0.001)
        return result

    def bytes_received_so_far(self):
        return 0


def _run(monkeypatch, rank, wrong_call=None):
    agent = {"algo": "ring", "rank": rank, "length": 0, "seed_base": 5, "magnitude": 1.0}
    config = SimpleNamespace(n=N, accumulate="float64")
    lines = []
    out = scenario_agent._Out()
    monkeypatch.setattr(out, "say", lambda **fields: lines.append(json.loads(json.dumps(fields))))
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"begin": true}\n'))
    scenario_agent._run_graph(_SummingWorker(agent, wrong_call), _graph(), agent, config, out)
    return lines


def test_prepared_before_any_call_then_digests_and_own_checks(monkeypatch):
    lines = _run(monkeypatch, rank=1)
    assert "prepared" in lines[0]
    done = [m for m in lines if "call_done" in m]
    assert [m["call_done"] for m in done] == [0, 1, 2]
    final = lines[-1]
    assert final["graph_done"] and set(final["checks"]) == {"1"}   # index % 3 == rank 1
    assert final["checks"]["1"]["correct"] is True
    other = _run(monkeypatch, rank=0)
    assert [m["digest"] for m in other if "call_done" in m] == [m["digest"] for m in done]
    assert set(other[-1]["checks"]) == {"0"}


def test_a_wrong_result_is_caught_by_its_checking_rank(monkeypatch):
    final = _run(monkeypatch, rank=2, wrong_call=2)[-1]
    assert final["checks"]["2"]["correct"] is False


def test_a_graph_without_begin_is_refused(monkeypatch):
    agent = {"algo": "ring", "rank": 0, "length": 0, "seed_base": 5}
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    out = scenario_agent._Out()
    monkeypatch.setattr(out, "say", lambda **fields: None)
    with pytest.raises(scenario_agent.HostError, match="begin"):
        scenario_agent._run_graph(_SummingWorker(agent), _graph(), agent,
                                  SimpleNamespace(n=N, accumulate="float64"), out)


def _graph_run():
    from inaemu.scenario import model as m
    from inaemu.scenario.mininet_job import MininetGraphRun
    from inaemu.workload import graph as g
    workload = g.Workload("toy", tuple(g.RankGraph(r, tuple(g.ddp_iteration(
        r, 0.01, [(0.01, 4096), (0.01, 4096)], 0.0))) for r in range(2)))
    run = MininetGraphRun(SimpleNamespace(t0=0.0), m.Job("toy", "ring", ("h1", "h2"),
                                                         workload), 0)
    run.state = "running"
    return run


def _call_done(run, call, digests):
    for rank, digest in enumerate(digests):
        run.message(0, rank, {"call_done": call, "digest": digest, "started_t": 1.0 + call,
                              "t": 2.0 + call, "retransmissions": 0})


def test_the_engine_marks_a_call_whose_ranks_disagree():
    run = _graph_run()
    _call_done(run, 0, ["aa:1024", "aa:1024"])
    _call_done(run, 1, ["aa:1024", "bb:1024"])
    assert [r.correct for r in run.iterations] == [True, False]
    assert run.iterations[1].error == "the ranks' results differ"


def test_the_engine_applies_each_checking_ranks_verdict():
    run = _graph_run()
    _call_done(run, 0, ["aa:1024", "aa:1024"])
    _call_done(run, 1, ["cc:1024", "cc:1024"])
    run.finished_ranks = {
        0: {"checks": {"0": {"correct": True}}},
        1: {"checks": {"1": {"correct": False, "max_abs_error": 2.0, "error_bound": 1e-6}}}}
    run._apply_checks()
    assert [r.correct for r in run.iterations] == [True, False]
    assert "rank 1" in run.iterations[1].error and not run._correct
    run.finished_ranks = {0: {"checks": {}}, 1: {"checks": {}}}
    run._apply_checks()
    assert run.iterations[0].error == "no rank checked this call"


def test_a_big_call_on_a_slow_link_gets_a_deadline_it_can_meet():
    """Regression: a fixed 60 s deadline failed ResNet-50's 30 MiB bucket on the 16-rank ring
    at 10 Mbit/s (~47 s of link time per call, more with TCP's overheads)."""
    from inaemu.scenario import model as m
    from inaemu.scenario.mininet_job import CALL_TIMEOUT_S, MininetGraphRun
    from inaemu.workload.models import model_workload
    workload = model_workload("resnet50", 16, compute_speedup=1000)
    engine = SimpleNamespace(t0=0.0, scenario=SimpleNamespace(
        network=m.Network("star", hosts=16, bw_mbps=10)))
    run = MininetGraphRun(engine, m.Job("r50", "ring", tuple(f"h{i}" for i in range(1, 17)),
                                        workload), 0)
    ring_link_time = 2 * 15 / 16 * max(workload.allreduce_bytes()) * 8 / 10e6
    assert run._call_deadline_s() > 4 * ring_link_time > CALL_TIMEOUT_S
