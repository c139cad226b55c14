"""Workload graphs: checked as data, run as scenario jobs on the simulator (compute overlapping
the bucket all-reduces, DDP's way), and predicted by the α-β-γ model with overlap."""

from __future__ import annotations

import pytest

from inaemu.model import predict
from inaemu.model.network import SwitchCosts
from inaemu.model.overlap import predict_workload
from inaemu.scenario import Experiment
from inaemu.scenario import model as m
from inaemu.scenario.sim_engine import run_sim
from inaemu.workload import graph as g

BUCKETS = [(0.002, 256 * 1024), (0.002, 512 * 1024), (0.001, 128 * 1024)]


def ddp(n: int, buckets=BUCKETS, forward=0.003) -> g.Workload:
    return g.Workload("toy", tuple(g.RankGraph(r, tuple(g.ddp_iteration(r, forward, buckets,
                                                                        0.0005)))
                                   for r in range(n)))


def test_graphs_are_checked():
    with pytest.raises(g.WorkloadError, match="missing node"):
        g.RankGraph(0, (g.Compute(0, 0.1, (7,)),))
    with pytest.raises(g.WorkloadError, match="cycle"):
        g.RankGraph(0, (g.Compute(0, 0.1, (1,)), g.Compute(1, 0.1, (0,))))
    with pytest.raises(g.WorkloadError, match="'all_gather' is not supported yet"):
        g.RankGraph(0, (g.Collective(0, "all_gather", 64),))
    with pytest.raises(g.WorkloadError, match="whole float32"):
        g.RankGraph(0, (g.Collective(0, "all_reduce", 6),))
    ranks = (g.RankGraph(0, (g.Collective(0, "all_reduce", 64),)),
             g.RankGraph(1, (g.Collective(0, "all_reduce", 128),)))
    with pytest.raises(g.WorkloadError, match="same collectives in the same order"):
        g.Workload("bad", ranks)


def test_a_ddp_iteration_has_its_buckets_in_order():
    nodes = g.ddp_iteration(0, 0.003, BUCKETS, 0.0005)
    graph = g.RankGraph(0, tuple(nodes))
    assert [c.size_bytes for c in graph.collectives()] == [b for _, b in BUCKETS]
    step = nodes[-1]
    assert step.name == "optimizer step"
    assert set(step.deps) >= {c.id for c in graph.collectives()}


@pytest.mark.parametrize("algo", ["ina", "ring"])
def test_a_ddp_graph_runs_correct_and_matches_the_model_with_overlap(algo):
    workload = ddp(4)
    scenario = m.Scenario(network=m.Network("star", hosts=4, bw_mbps=1000),
                          jobs=(m.Job("toy", algo, ("h1", "h2", "h3", "h4"), workload),),
                          options=m.Options(switch_pps=1e6, elems_k=256))
    result = run_sim(scenario)
    job = result.jobs[0]
    assert result.correct, job.error
    assert job.iterations_done == 3 and len(result.iterations) == 3
    topology = scenario.network.topology()
    model = predict_workload(workload, lambda size: predict(
        algo, topology, ["h1", "h2", "h3", "h4"], size, bw_mbps=1000,
        switch=SwitchCosts(1e-6, 0.0), elems_k=256, window=64).time_s)
    assert job.workload["compute_s"] == pytest.approx(model["compute_s"])
    assert job.workload["time_s"] == pytest.approx(model["time_s"], rel=0.10)
    # the communication overlapped the backward pass: less is exposed than was spent
    assert job.workload["exposed_comm_s"] < job.workload["comm_s"]


def test_long_backward_compute_hides_all_but_the_last_bucket():
    slow = [(0.02, 64 * 1024), (0.02, 64 * 1024), (0.02, 64 * 1024)]
    workload = ddp(4, slow)
    scenario = m.Scenario(network=m.Network("star", hosts=4, bw_mbps=1000),
                          jobs=(m.Job("toy", "ina", ("h1", "h2", "h3", "h4"), workload),),
                          options=m.Options(switch_pps=1e6, elems_k=256))
    result = run_sim(scenario)
    last = result.iterations[-1]
    assert result.correct
    # exposed: the last bucket's all-reduce (nothing computes beside it), not the others
    assert result.jobs[0].workload["exposed_comm_s"] == pytest.approx(last.allreduce_s,
                                                                     rel=0.05)


def test_a_graph_job_survives_a_link_failure_mid_call():
    workload = ddp(16, [(0.0005, 256 * 1024), (0.0005, 256 * 1024)], forward=0.0005)
    exp = Experiment.fat_tree(k=4, bw_mbps=1000, delay_ms=0.005)
    exp.set_options(switch_pps=1e6, elems_k=256)
    exp.jobs.append(m.Job("ddp", "ina", tuple(exp.hosts), workload))
    exp.link_down("a0_0", "c0", at="1.5ms")
    result = exp.run()
    assert result.correct, result.jobs[0].error
    assert len(result.jobs[0].placements) == 2


def test_a_graph_with_the_wrong_number_of_ranks_is_refused():
    with pytest.raises(m.ScenarioError, match="4 ranks, the job 2 workers"):
        m.Job("toy", "ina", ("h1", "h2"), ddp(4))


def test_the_iteration_plot_stays_readable_at_1024_ranks(tmp_path):
    from inaemu.workload.plot import MAX_RANKS_SHOWN, plot_iteration
    timelines = {r: [("compute", "forward", 0.0, 0.003), ("all_reduce", "bucket 0", 0.003,
                                                           0.004 + r * 1e-6)]
                 for r in range(1024)}
    path = plot_iteration(timelines, tmp_path / "t.png", title="1024 ranks")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image
    height = matplotlib.image.imread(path).shape[0]
    small = plot_iteration({0: timelines[0]}, tmp_path / "one.png")
    # rows for at most MAX_RANKS_SHOWN ranks, not 1,024
    assert height < matplotlib.image.imread(small).shape[0] + MAX_RANKS_SHOWN * 60
