"""The scenario report: result files (JSON, CSV, the timeline PNG) and the terminal summary,
from results built by hand (no engine, no network)."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

from inaemu.scenario.plot import busiest_links, labelled_events, plot_timeline
from inaemu.scenario.report import summary_lines, write_results
from inaemu.scenario.results import (EventRecord, FlowRecord, IterationRecord, JobRecord,
                                     Samples, ScenarioResult)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def iterations(job: str, algo: str, count: int, start: float, step: float,
               allreduce: float) -> list[IterationRecord]:
    out = []
    for k in range(count):
        begin = start + k * step
        out.append(IterationRecord(job=job, iteration=k, algo=algo, started_s=begin,
                                   compute_done_s=begin + step / 2,
                                   ended_s=begin + step / 2 + allreduce, allreduce_s=allreduce,
                                   correct=True, retransmissions=k % 2))
    return out


def two_job_result() -> ScenarioResult:
    jobs = [JobRecord(name="resnet", algo="ina", workers=("h1", "h2", "h3", "h4"),
                      arrived_s=0.0, ended_s=0.9, iterations_done=3, iterations=3,
                      correct=True, error=None, retransmissions=1,
                      placements=[{"switch": "s1"}, {"switch": "s2"}]),
            JobRecord(name="bert", algo="ina", workers=("h5", "h6"), arrived_s=0.1,
                      ended_s=1.0, iterations_done=4, iterations=4, correct=True, error=None,
                      retransmissions=2, final_algo="ring")]
    its = (iterations("resnet", "ina", 3, 0.0, 0.3, 0.012)
           + iterations("bert", "ring", 4, 0.1, 0.22, 0.02))
    events = [EventRecord(index=0, at_s=0.4, kind="link_down", description="link s1-s2 down",
                          detected_s=0.405, actions=["re-plan resnet", "move bert to ring"],
                          recovery_s={"resnet": 0.0375, "bert": None}),
              EventRecord(index=1, at_s=0.7, kind="link_up", description="link s1-s2 up")]
    flows = [FlowRecord(name="bulk", kind="tcp", sources=("h7", "h8"), destination="h1",
                        started_s=0.2, stopped_s=0.8, bytes_delivered=12_500_000,
                        goodput_mbps=166.7)]
    times = [k * 0.01 for k in range(101)]
    samples = Samples(times_s=times,
                      progress={"resnet": [min(3.0, t / 0.3) for t in times],
                                "bert": [max(0.0, min(4.0, (t - 0.1) / 0.22)) for t in times]},
                      link_times_s=times,
                      link_utilisation={"s1->s2": [0.5] * 101, "s2->s1": [0.25] * 101,
                                        "h1->s1": [1.1 if k == 50 else 0.1 for k in range(101)]})
    return ScenarioResult(name="two-jobs", net="sim", seed=7, jobs=jobs, iterations=its,
                          events=events, flows=flows, samples=samples, duration_s=1.0,
                          wall_s=0.3)


def read_csv(path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames), list(reader)


def test_write_results_writes_every_file(tmp_path):
    result = two_job_result()
    paths = write_results(result, tmp_path / "out")
    assert set(paths) == {"summary.json", "samples.json", "jobs.csv", "iterations.csv",
                          "events.csv", "flows.csv", "timeline.png"}
    for name, path in paths.items():
        assert path == tmp_path / "out" / name
        assert path.is_file() and path.stat().st_size > 0
    assert paths["timeline.png"].read_bytes()[:8] == PNG_MAGIC


def test_summary_json_round_trips(tmp_path):
    result = two_job_result()
    paths = write_results(result, tmp_path)
    summary = json.loads(paths["summary.json"].read_text())
    assert summary["correct"] is True
    assert summary["samples"] == "samples.json"
    assert {key: value for key, value in summary.items() if key != "samples"} \
        == json.loads(json.dumps(result.summary()))
    assert [job["name"] for job in summary["jobs"]] == ["resnet", "bert"]
    assert summary["events"][0]["recovery_s"] == {"resnet": 0.0375, "bert": None}
    samples = json.loads(paths["samples.json"].read_text())
    assert samples["times_s"] == result.samples.times_s
    assert samples["progress"]["bert"] == result.samples.progress["bert"]
    assert set(samples["link_utilisation"]) == {"s1->s2", "s2->s1", "h1->s1"}


def test_csv_headers_and_rows(tmp_path):
    result = two_job_result()
    paths = write_results(result, tmp_path)

    header, rows = read_csv(paths["jobs.csv"])
    assert header[:2] == ["name", "algo"]
    assert {"iterations_done", "iterations", "correct", "retransmissions"} <= set(header)
    assert [row["name"] for row in rows] == ["resnet", "bert"]
    assert rows[0]["workers"] == "4" and rows[1]["final_algo"] == "ring"
    assert rows[0]["error"] == "" and rows[0]["plans"] == "2"
    assert abs(float(rows[0]["mean_allreduce_s"]) - 0.012) < 1e-12

    header, rows = read_csv(paths["iterations.csv"])
    assert header == ["job", "iteration", "algo", "started_s", "compute_done_s", "ended_s",
                      "allreduce_s", "correct", "retransmissions", "restarts", "error"]
    assert len(rows) == 7
    assert [row["job"] for row in rows].count("bert") == 4

    header, rows = read_csv(paths["events.csv"])
    assert header == ["index", "at_s", "kind", "description", "detected_s", "actions", "job",
                      "recovery_s"]
    assert len(rows) == 3     # the link-down affected two jobs, the link-up none
    assert [(row["index"], row["job"]) for row in rows] \
        == [("0", "resnet"), ("0", "bert"), ("1", "")]
    assert rows[0]["actions"] == "re-plan resnet; move bert to ring"
    assert float(rows[0]["recovery_s"]) == 0.0375 and rows[1]["recovery_s"] == ""
    assert rows[2]["detected_s"] == "" and rows[2]["actions"] == ""

    header, rows = read_csv(paths["flows.csv"])
    assert header == ["name", "kind", "sources", "destination", "started_s", "stopped_s",
                      "bytes_delivered", "goodput_mbps"]
    assert len(rows) == 1
    assert rows[0]["sources"] == "h7; h8" and rows[0]["bytes_delivered"] == "12500000"


def test_summary_lines():
    result = two_job_result()
    lines = summary_lines(result)
    text = "\n".join(lines)
    assert all(len(line) <= 100 for line in lines)
    job_lines = {name: next(line for line in lines if line.strip().startswith(name))
                 for name in ("resnet", "bert")}
    assert "3/3" in job_lines["resnet"] and "12.0" in job_lines["resnet"]
    assert "4/4" in job_lines["bert"] and "ina->ring" in job_lines["bert"]
    assert "20.0" in job_lines["bert"]
    assert "link s1-s2 down" in text
    assert "resnet 37.5 ms" in text       # the link-down's recovery, in ms
    assert "bert never" in text
    assert "bulk" in text and "166.7 Mbit/s" in text
    assert lines[-1] == "verdict: correct"


def test_a_wrong_job_makes_the_verdict_wrong(tmp_path):
    result = two_job_result()
    result.jobs[1] = replace(result.jobs[1], correct=False)
    lines = summary_lines(result)
    assert lines[-1].startswith("verdict: WRONG")
    assert "bert" in lines[-1] and "resnet" not in lines[-1]
    assert "NO" in next(line for line in lines if line.strip().startswith("bert"))
    summary = json.loads(write_results(result, tmp_path)["summary.json"].read_text())
    assert summary["correct"] is False

    result.jobs[0] = replace(result.jobs[0], error="switch s1 crashed")
    verdict = summary_lines(result)[-1]
    assert "resnet (error: switch s1 crashed)" in verdict and "bert" in verdict


def test_many_wrong_jobs_fit_the_verdict_line():
    result = big_result(samples=2, links=2, events=2)
    result.jobs = [replace(job, correct=False) for job in result.jobs]
    verdict = summary_lines(result)[-1]
    assert len(verdict) <= 100
    assert verdict.startswith("verdict: WRONG: 30 jobs: job00 (wrong sum), ")
    assert verdict.endswith(" more")


def test_empty_samples_still_give_a_png(tmp_path):
    result = replace(two_job_result(), samples=Samples())
    path = plot_timeline(result, tmp_path / "empty.png")
    assert path.read_bytes()[:8] == PNG_MAGIC

    bare = ScenarioResult(name="nothing", net="sim", seed=0, jobs=[], iterations=[],
                          events=[], flows=[], samples=Samples(), duration_s=0.0, wall_s=0.0)
    paths = write_results(bare, tmp_path / "bare")
    assert paths["timeline.png"].read_bytes()[:8] == PNG_MAGIC
    assert read_csv(paths["events.csv"])[1] == []
    assert summary_lines(bare)[-1] == "verdict: WRONG: no jobs"


def big_result(jobs: int = 30, workers: int = 1024, samples: int = 5000,
               links: int = 2048, events: int = 60) -> ScenarioResult:
    per_job = workers // jobs
    names = [f"job{j:02d}" for j in range(jobs)]
    job_records = [JobRecord(name=name, algo="ina" if j % 2 else "ring",
                             workers=tuple(f"h{j * per_job + w}" for w in range(per_job)),
                             arrived_s=0.1 * j, ended_s=None, iterations_done=5,
                             iterations=10, correct=True, error=None, retransmissions=j)
                   for j, name in enumerate(names)]
    times = [k * 0.002 for k in range(samples)]
    progress = {name: [max(0.0, (t - 0.1 * j) * (1 + j / 10)) for t in times]
                for j, name in enumerate(names)}
    patterns = [[((p * 7 + k) % 100) / 100.0 for k in range(samples)] for p in range(64)]
    utilisation = {f"h{n}->tor{n // 32}": patterns[n % 64] for n in range(links)}
    event_records = [EventRecord(index=i, at_s=1.0 + 0.01 * i + (i % 3) * 0.001,
                                 kind="link_down", description=f"link h{i}-tor{i // 32} down",
                                 recovery_s={names[i % jobs]: 0.05})
                     for i in range(events)]
    return ScenarioResult(name="big", net="sim", seed=1, jobs=job_records, iterations=[],
                          events=event_records, flows=[],
                          samples=Samples(times_s=times, progress=progress, link_times_s=times,
                                          link_utilisation=utilisation),
                          duration_s=times[-1], wall_s=1.0)


def test_plot_with_1024_workers_and_30_jobs(tmp_path):
    result = big_result(samples=500, links=256)
    assert sum(len(job.workers) for job in result.jobs) >= 990
    path = plot_timeline(result, tmp_path / "big.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    lines = summary_lines(result)
    assert all(len(line) <= 100 for line in lines)
    job_rows = [line for line in lines if line.split()[0].startswith("job0")
                or line.split()[0].startswith(("job1", "job2"))]
    assert len(job_rows) == 30


def test_plot_of_5000_samples_draws_a_bounded_figure(tmp_path, monkeypatch):
    """What keeps a big plot quick: the busiest TOP_LINKS link directions and one envelope,
    not 2,048 lines. (Counted, not timed: a wall-clock bound failed on a loaded CI machine.)"""
    from matplotlib.figure import Figure
    from inaemu.scenario.plot import TOP_LINKS
    drawn: list[int] = []
    save = Figure.savefig

    def counting(figure, *args, **kwargs):
        drawn.extend(len(line.get_xdata()) for ax in figure.axes for line in ax.lines)
        return save(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", counting)
    result = big_result()
    path = plot_timeline(result, tmp_path / "quick.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    jobs, links, events = len(result.jobs), 2048, len(result.events)
    assert len(drawn) <= jobs + TOP_LINKS + 1 + events
    assert len(drawn) < links
    assert max(drawn) <= len(result.samples.times_s)


def test_busiest_links_and_labelled_events():
    result = two_job_result()
    links, peak, count = busiest_links(result, top=2)
    assert [name for name, _, _ in links] == ["s1->s2", "s2->s1"]
    assert count == 3 and peak is not None and max(peak) == 1.1
    assert busiest_links(result)[1] is None       # no more links than are drawn: no band

    events = big_result(samples=2, links=1).events
    chosen = labelled_events(events, limit=40)
    assert len(chosen) == 40 and 0 in chosen and len(events) - 1 in chosen
    assert labelled_events(events[:5]) == set(range(5))
