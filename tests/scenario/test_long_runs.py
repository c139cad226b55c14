"""A long scenario holds what is in flight, not everything it has run: finished calls give their
hosts' ports and timers back (and with them their vectors), finished jobs drop their sessions,
and the timeline samples are thinned past a bound. Found by scripts/soak.py (issue 33): the
simulator engine grew by ~10 MB per 1 MiB call before."""

from __future__ import annotations

import gc
import importlib.util
import sys
import weakref

from inaemu.scenario import Experiment
from inaemu.scenario import results as r
from inaemu.scenario.sim_engine import SimScenario
from tests.conftest import PROJECT_ROOT


def _chained_jobs(calls_per_job: int = 2, jobs: int = 4) -> Experiment:
    exp = Experiment.star(hosts=3, bw_mbps=100, loss_percent=1)
    exp.set_options(seed=3)
    previous = None
    for index in range(jobs):
        name = f"j{index}"
        exp.add_job(name, algo=("ina", "ring", "ps")[index % 3], workers=exp.hosts,
                    size="64KiB", iterations=calls_per_job, after=previous)
        previous = name
    return exp


def test_finished_calls_release_their_apps_and_hosts_do_not_accumulate_timers(monkeypatch):
    apps: list[weakref.ref] = []
    from inaemu.scenario import sim_job
    opened = sim_job.JobRun._open_app

    def tracking(self, worker):
        ok = opened(self, worker)
        if ok and worker.app is not None:
            apps.append(weakref.ref(worker.app))
        return ok

    monkeypatch.setattr(sim_job.JobRun, "_open_app", tracking)
    engine = SimScenario(_chained_jobs().scenario(), say=lambda _line: None, bar=False)
    result = engine.run()
    assert result.correct
    gc.collect()
    assert len(apps) >= 4 * 2 * 3                       # every job, call and worker made one
    alive = [ref() for ref in apps if ref() is not None]
    assert alive == []              # though the engine still holds every job it ran
    for node in engine.net.hosts.values():
        assert len(node.timers) == 0
        assert not [key for key in node.handlers if key[0] == 6]     # no TCP port left bound
    assert all(run.sessions == {} and run._inputs == [] for run in engine.runs)


def test_ended_jobs_drop_their_placement_and_the_switches_their_groups():
    """Found by the soak: every ended INA job kept its placement (plan, table entries, InaJob),
    and every switch the multicast nodes of its removed groups (P4Runtime DELETE)."""
    engine = SimScenario(_chained_jobs(jobs=6).scenario(), say=lambda _line: None, bar=False)
    assert engine.run().correct
    assert all(run.placement is None for run in engine.runs)
    assert engine.control.placements == {}
    for switch in engine.net.switches.values():
        assert switch.switch.pre.nodes == {} and switch.switch.mc_groups() == []


def test_samples_are_thinned_and_link_intervals_merged():
    samples = r.Samples()
    kept = 0
    for step in range(3 * r.MAX_POINTS):
        if samples.keep_progress():
            samples.times_s.append(float(step))
            samples.progress.setdefault("a", []).append(float(step))
            kept += 1
        if samples.keep_links():
            samples.link_times_s.append(float(step))
            samples.link_utilisation.setdefault("s1:1->h1:0", []).append(step % 2)
        samples.thin()
    assert len(samples.times_s) <= r.MAX_POINTS
    assert samples.progress_stride == 4 and samples.link_stride == 4     # thinned twice
    assert samples.progress["a"] == samples.times_s            # still aligned
    assert len(samples.link_utilisation["s1:1->h1:0"]) == len(samples.link_times_s)
    # the merged intervals average the 0/1 alternation; later ones cover two steps whole
    assert set(samples.link_utilisation["s1:1->h1:0"][:10]) == {0.5}
    assert kept > r.MAX_POINTS


def test_recovery_is_timed_from_the_event_on_a_long_chain_of_jobs():
    exp = _chained_jobs(calls_per_job=3, jobs=3)
    exp.link_change("h1", "s1", at="20ms", loss_percent=5)
    result = exp.run()
    assert result.correct
    (event,) = result.events
    assert event.recovery_s and all(v is not None and v >= 0 for v in event.recovery_s.values())


def test_the_soak_script_passes_a_short_run_in_the_simulator(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("soak", PROJECT_ROOT / "scripts" / "soak.py")
    soak = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("soak", soak)
    spec.loader.exec_module(soak)
    status = soak.main(["--net", "sim", "--calls", "12", "--calls-per-job", "2", "--warmup",
                        "4", "--max-size", "128KiB", "--max-growth", "50", "--out",
                        str(tmp_path)])
    out = capsys.readouterr().out
    assert "12 of 12 all-reduces correct" in out
    assert "nothing left behind" in out and status == 0
    rows = (tmp_path / "soak.csv").read_text().splitlines()
    assert rows[0] == "calls_done,role,processes,rss_kib,fds,threads"
    assert len([row for row in rows if ",engine," in row]) == 7     # 6 arrivals and the end


def test_the_soak_script_refuses_bad_arguments(capsys):
    spec = importlib.util.spec_from_file_location("soak2", PROJECT_ROOT / "scripts" / "soak.py")
    soak = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("soak2", soak)
    spec.loader.exec_module(soak)
    for argv in (["--calls", "0"], ["--min-size", "2MiB", "--max-size", "1MiB"],
                 ["--warmup", "600"], ["--loss", "100"]):
        try:
            soak.parse_args(argv)
        except SystemExit as stop:
            assert stop.code == 2
        else:
            raise AssertionError(f"{argv} accepted")
    assert "error" in capsys.readouterr().err


def test_recovery_is_found_when_the_clock_moves_between_readings():
    """On Mininet the engine's clock is the wall clock: the time an action is recorded under
    and the time its watch starts must be one reading (a leaf crash's recovery came out None)."""
    from inaemu.scenario import model as m
    from inaemu.scenario.job_life import JobLife
    from inaemu.scenario.reactions import _acted

    class Clock:
        t = 0.0

        def now(self):
            self.t += 0.001              # every reading later than the last
            return self.t

    class Job(JobLife):
        units = 5.0

        def progress_units(self):
            return self.units

    engine = Clock()
    engine.event_jobs = [{}]
    job = Job(engine, m.Job("train", "ina", ("h1", "h2"), m.Workload(64)), 0)
    _acted(engine, 0, job)
    acted = engine.event_jobs[0]["train"]
    job.note_progress(acted + 0.5, 5.0)            # no progress yet
    job.note_progress(acted + 1.0, 6.0)
    assert job.first_progress_after(acted) == acted + 1.0


def test_the_soak_levels_ignore_transient_threads_and_catch_a_leaked_one():
    """Counts are levelled by their minimum: the pipe readers of an ended job come and go
    around each sample (11-15 engine threads on Mininet), a leaked thread stays."""
    spec = importlib.util.spec_from_file_location("soak3", PROJECT_ROOT / "scripts" / "soak.py")
    soak = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("soak3", soak)
    spec.loader.exec_module(soak)

    def curve(threads):
        return [(calls, {"engine": soak.Usage(1, 1000 + calls % 7, 22 + (t - 11), t)})
                for calls, t in zip(range(0, 5 * len(threads), 5), threads)]

    transient = [11, 13, 11, 15, 12, 11, 14, 11, 12, 11, 11, 15, 11, 13, 11, 12]
    base, end, peak, grown = soak.growth(curve(transient), warmup=10, window=25)[
        ("engine", "threads")]
    assert (base, end, peak, grown) == (11, 11, 15, 0.0)
    leaking = [t + i // 6 for i, t in enumerate(transient)]      # one more every 6 samples
    base, end, _, grown = soak.growth(curve(leaking), warmup=10, window=25)[("engine", "threads")]
    assert end > base and grown > 5
