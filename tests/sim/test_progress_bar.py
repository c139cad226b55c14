"""The simulator's progress bar (`simulate(progress_bar=...)`, docs/sim.md): frames, their
rate, the virtual time reached and the workers running on stderr; none by default when stderr
is not a terminal, where the progress lines stay."""

import inaemu.sim.driver as driver
from inaemu.sim import SimJob, simulate
from topologies.builders import star


def _run(**kwargs):
    topology = star(3)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    return simulate(topology, jobs, algo="ina", size_bytes=96 << 10, bw=1000, **kwargs)


def test_the_bar_shows_frames_virtual_time_and_workers(capsys, monkeypatch):
    monkeypatch.setattr(driver, "BAR_EVERY_S", 0.0)      # redraw at every look (4,096 events)
    result = _run(progress_bar=True)
    assert result.correct and result.events > 4096
    err = capsys.readouterr().err
    assert "frame" in err and "ms virtual" in err and "workers running" in err


def test_no_bar_when_stderr_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(driver, "BAR_EVERY_S", 0.0)
    monkeypatch.setattr(driver, "PROGRESS_EVERY_S", 0.0)  # a progress line at every look
    lines = []
    result = _run(progress=lines.append)                 # stderr is pytest's capture: no tty
    assert result.correct
    assert "ms virtual" not in capsys.readouterr().err
    assert any("workers running" in line for line in lines)


def test_long_starts_are_said_and_short_ones_are_not(monkeypatch):
    """The workers' starts (a streamed INA worker's max pass over its input) run before any
    frame: 16,000 of them took ~20 s without a word. Said when they take long."""
    for threshold, said in ((0.0, True), (1e9, False)):
        monkeypatch.setattr(driver, "STARTS_SAID_AFTER_S", threshold)
        lines = []
        result = _run(progress=lines.append, keep_results=False)
        assert result.correct
        assert any(line.startswith("sim: 3 workers started in ") for line in lines) == said
