"""Workloads in scenario files and the Python API: a model's DDP iterations or a Chakra trace
as a job (docs/workloads.md, docs/scenarios.md)."""

from __future__ import annotations

import pytest

from inaemu.scenario import Experiment, ScenarioError, load_scenario
from inaemu.scenario.parse import dump_scenario
from inaemu.workload import graph as g
from inaemu.workload.chakra import write_chakra


def toy(n: int = 4) -> g.Workload:
    buckets = [(0.001, 64 * 1024), (0.001, 128 * 1024)]
    return g.Workload("toy", tuple(g.RankGraph(r, tuple(g.ddp_iteration(r, 0.001, buckets)))
                                   for r in range(n)))


def test_a_model_job_in_a_file_round_trips(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("network: {topology: star, hosts: 4}\njobs:\n"
                    "  - {name: r50, algo: ina, workers: h1..h4, model: resnet50,\n"
                    "     iterations: 2, bucket_cap: 5MiB, compute_speedup: 40}\n")
    scenario = load_scenario(path)
    workload = scenario.jobs[0].workload
    assert workload.meta["model"] == "resnet50" and workload.meta["iterations"] == 2
    assert len(workload.allreduce_bytes()) == 2 * len(workload.meta["buckets"])
    again = tmp_path / "again.yaml"
    dump_scenario(scenario, again)
    assert load_scenario(again) == scenario


def test_a_chakra_job_reads_its_trace_relative_to_the_file_and_runs(tmp_path):
    (tmp_path / "traces").mkdir()
    write_chakra(toy(), tmp_path / "traces" / "toy")
    path = tmp_path / "c.yaml"
    path.write_text("network: {topology: star, hosts: 4, bw_mbps: 1000}\n"
                    "options: {elems_k: 256, switch_pps: 1000000}\n"
                    "jobs:\n  - {name: t, algo: ring, workers: h1..h4, chakra: traces/toy}\n")
    result = Experiment.from_file(path).run()
    assert result.correct, result.jobs[0].error
    assert result.jobs[0].iterations_done == 2


@pytest.mark.parametrize("job, line, phrase", [
    ("{name: a, algo: ina, workers: h1..h4, size: 1MiB, model: resnet50}", 3,
     "exactly one of size"),
    ("{name: a, algo: ina, workers: h1..h4}", 3, "exactly one of size"),
    ("{name: a, algo: ina, workers: h1..h4, model: resnet50, compute: 1ms}", 3,
     "does not apply to a job with model"),
    ("{name: a, algo: ina, workers: h1..h4, size: 1MiB, bucket_cap: 1MiB}", 3,
     "does not apply to a job with size"),
    ("{name: a, algo: ina, workers: h1..h4, model: resnet51}", 3, "unknown model 'resnet51'"),
    ("{name: a, algo: ina, workers: h1..h4, chakra: nowhere/x}", 3, "no such file"),
])
def test_bad_workload_jobs_are_refused_with_their_line(tmp_path, job, line, phrase):
    path = tmp_path / "bad.yaml"
    path.write_text(f"network: {{topology: star, hosts: 4}}\njobs:\n  - {job}\n")
    with pytest.raises(ScenarioError, match=phrase) as refused:
        load_scenario(path)
    assert refused.value.line == line


def test_the_api_adds_model_and_chakra_jobs(tmp_path):
    write_chakra(toy(), tmp_path / "toy")
    exp = Experiment.star(hosts=8, bw_mbps=1000)
    exp.set_options(elems_k=256, switch_pps=1e6)
    job = exp.add_model_job("bert", model="bert-base", algo="ina", workers=exp.hosts[:4],
                            compute_speedup=50)
    assert job.workload.meta["model"] == "bert-base" and job.workload.n == 4
    exp.jobs.remove(job)
    exp.add_chakra_job("toy", tmp_path / "toy", algo="ina", workers=exp.hosts[4:])
    result = exp.run()
    assert result.correct and result.jobs[0].workload["calls"] == 2
