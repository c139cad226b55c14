"""A whole traced run in-process (tests/trace/traced_run.py), read back by `inaemu trace`:
every injected loss is in the trace, the lifecycles follow docs/protocol.md §3, the CLI prints
and plots them, and bad input gets one line and exit status 2."""

from __future__ import annotations

import argparse

import pytest

from inaemu.trace import cli
from inaemu.trace.lifecycle import COMPLETED, CONTRIBUTION, DUPLICATE, LOSS, build
from inaemu.trace.plots import busy_intervals, link_bytes, occupancy, retransmissions
from inaemu.trace.reader import read_run
from tests.ina.packets import wrapping_sum

from .traced_run import JOB, WORKERS, traced_run

SEED = 2        # a seed whose losses hit both directions, results and retransmissions


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = traced_run(tmp_path_factory.mktemp("traced") / "net", seed=SEED)
    assert all(worker.done for worker in result.workers)
    assert result.workers[0].results[0] == wrapping_sum(*result.vectors)
    assert result.lost_in > 0 and result.lost_out > 0
    return result


def test_every_injected_loss_is_a_step_of_some_lifecycle(run):
    trace = read_run(run.run_dir)
    lifecycles = build(trace.events, {"s1"})
    losses = [s for life in lifecycles for s in life.steps if s.what == LOSS]
    assert sum(s.direction == "in" for s in losses) == run.lost_in
    assert sum(s.direction == "out" for s in losses) == run.lost_out


def test_each_slot_round_follows_the_protocol(run):
    lifecycles = build(read_run(run.run_dir).events, {"s1"})
    assert len(lifecycles) == 10 + 1                       # ten chunks and the MAX round
    late_duplicates = 0
    for life in lifecycles:
        assert life.key.job == JOB
        accepted = [s for s in life.steps if s.what in (CONTRIBUTION, COMPLETED)]
        assert sorted(s.worker for s in accepted) == list(range(WORKERS)), life
        assert accepted[0].detail.startswith("first")
        completed = [s for s in life.steps if s.what == COMPLETED]
        assert len(completed) == 1 and completed[0] is accepted[-1]
        assert completed[0].outputs == tuple((w + 1, w) for w in range(WORKERS))
        done_at = life.steps.index(completed[0])
        for position, step in enumerate(life.steps):
            if step.what == DUPLICATE and position > done_at:
                assert step.outputs == ((step.port, step.worker),)      # unicast back
                late_duplicates += 1
            elif step.what == DUPLICATE:
                assert step.outputs == ()
    assert late_duplicates > 0


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    status = cli.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_prints_a_chosen_slot_and_summary(run, capsys):
    status, out, err = _cli([str(run.run_dir.parent), "--slot", "0", "--chunk", "0"], capsys)
    assert status == 0 and err == ""
    assert "job 7 slot 0 v0 chunk 0\n" in out
    assert "CONTRIB w2" in out and "completed" in out and "(s1-eth3)" in out
    assert "job 7 slot 1" not in out
    status, out, _ = _cli([str(run.run_dir), "--summary", "--worker", "1"], capsys)
    assert status == 0 and "job 7 slot" not in out and "completions" in out


def test_cli_plots(run, tmp_path, capsys):
    status, out, _ = _cli([str(run.run_dir), "--summary", "--plots", str(tmp_path)], capsys)
    assert status == 0
    for name in ("occupancy.png", "link_bytes.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"wrote {tmp_path / name}" in out


def test_plot_numbers(run):
    trace = read_run(run.run_dir)
    lifecycles = build(trace.events, {"s1"})
    intervals = busy_intervals(lifecycles, trace.events[-1].time)["s1"]
    assert len(intervals) == len(lifecycles)
    _, busy = occupancy(intervals)
    assert max(busy) <= 4 + 1 and busy[-1] == 0           # pool of 4 slots (+ the MAX cell)
    marks = retransmissions(lifecycles)
    assert set(marks) <= set(range(WORKERS)) and marks
    totals = link_bytes(trace)
    frames_in = sum(1 for e in trace.events if type(e).__name__ == "WireFrame"
                    and e.direction == "in" and e.port == 1)
    assert totals[("s1", "1", "in")] == frames_in * 74      # k = 4: every frame is 74 bytes


def test_occupancy_is_a_step_function():
    times, busy = occupancy([(0.0, 2.0), (1.0, 3.0), (2.0, 2.5)])
    assert list(zip(times, busy)) == [(0.0, 1), (1.0, 2), (2.0, 3), (2.0, 2), (2.5, 1), (3.0, 0)]


def test_a_directory_without_captures_says_to_trace(tmp_path, capsys):
    status, out, err = _cli([str(tmp_path)], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "--trace" in err and str(tmp_path) in err


def test_bad_input_is_one_line_and_status_2(run, tmp_path, capsys):
    status, _, err = _cli([str(tmp_path / "missing")], capsys)
    assert status == 2 and "no such directory" in err
    status, _, err = _cli([str(run.run_dir), "--switch", "s9"], capsys)
    assert status == 2 and "found: s1" in err
    (tmp_path / "s1.log").write_text("1.0 [1] packet in: port 1, 4 bytes: 00010203\n"
                                     "1.0 [1] packet out: port one\n")
    status, _, err = _cli([str(tmp_path)], capsys)
    assert status == 2 and "s1.log:2: malformed line" in err and err.count("\n") == 1
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args([str(tmp_path), "--job", "-1"])
