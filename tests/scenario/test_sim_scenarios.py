"""Scenarios on the simulator: jobs arriving on one network, failures the controller routes
and re-plans around, stragglers, cross traffic; every sum checked (docs/scenarios.md)."""

from __future__ import annotations

import pytest

from inaemu.scenario import Experiment, ScenarioError
from inaemu.scenario import model as m

FAST = dict(switch_pps=1e6)


def fat_tree_job(size="64KiB", **job):
    exp = Experiment.fat_tree(k=4, bw_mbps=1000, delay_ms=0.005)
    exp.set_options(**FAST)
    exp.add_job("train", algo="ina", workers=exp.hosts, size=size, **job)
    return exp


def test_a_link_of_the_tree_fails_mid_job_and_the_job_is_replanned_with_right_sums():
    exp = fat_tree_job(size="256KiB", iterations=2)
    exp.link_down("a0_0", "c0", at="1ms")
    exp.link_up("a0_0", "c0", at="50ms")
    result = exp.run()
    job = result.job("train")
    assert result.correct and job.iterations_done == 2
    first, second = job.placements[0]["switches"], job.placements[1]["switches"]
    assert first[0] == "c0" and second[0] != "c0"       # the new tree avoids the link
    failure = result.events[0]
    detection = failure.detected_s - failure.at_s
    assert detection == pytest.approx(exp.options.detection_s)
    assert any("re-planned" in action for action in failure.actions)
    # progress again within 10 ms of virtual time beyond the detection delay
    assert failure.recovery_s["train"] is not None
    assert failure.recovery_s["train"] <= detection + 0.010
    assert sum(it.restarts for it in result.iterations) == 1


def test_a_link_that_no_placement_uses_changes_routes_only():
    exp = fat_tree_job()
    exp.link_down("a3_1", "c3", at="0.5ms")         # c3 is not the root of this job
    result = exp.run()
    assert result.correct
    assert len(result.job("train").placements) == 1
    assert any("re-routed" in action for action in result.events[0].actions)


def test_a_leaf_crash_cuts_workers_off_until_it_restarts_then_the_job_finishes():
    exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, bw_mbps=1000)
    exp.set_options(**FAST)
    exp.add_job("train", algo="ina", workers=["h1", "h2", "h3", "h4"], size="64KiB",
                iterations=3, compute="1ms")
    exp.switch_crash("l1", at="1.5ms")
    exp.switch_restart("l1", at="20ms")
    result = exp.run()
    assert result.correct, result.job("train").error
    crash, restart = result.events
    assert any("waiting" in action for action in crash.actions)
    assert any("pipeline pushed again" in action for action in restart.actions)
    assert any("re-planned" in action for action in restart.actions)
    assert result.job("train").iterations_done == 3


def test_a_job_cut_off_for_good_ends_with_a_clear_error_in_bounded_time():
    exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, bw_mbps=1000)
    exp.set_options(repair_wait_s=0.05, **FAST)
    exp.add_job("train", algo="ina", workers=["h1", "h2", "h3", "h4"], size="64KiB",
                iterations=50, compute="1ms")
    exp.switch_crash("l1", at="1.5ms")
    result = exp.run()
    job = result.job("train")
    assert not result.correct and not job.correct
    assert "cut off" in job.error and "l1" in job.error
    assert job.ended_s == pytest.approx(0.0015 + exp.options.detection_s + 0.05)


def test_the_ring_rides_out_a_link_failure_on_its_transport():
    exp = Experiment.fat_tree(k=4, bw_mbps=1000, delay_ms=0.005)
    exp.set_options(**FAST)
    exp.add_job("ring", algo="ring", workers=exp.hosts[::2], size="256KiB")
    exp.link_down("a0_0", "c0", at="0.5ms")
    result = exp.run()
    assert result.correct


def test_a_straggler_shows_in_every_iteration():
    times = {}
    for factor in (1.0, 2.0):
        exp = Experiment.star(hosts=8, bw_mbps=1000)
        exp.set_options(**FAST)
        exp.add_job("ina", algo="ina", workers=exp.hosts, size="64KiB", iterations=2,
                    compute="5ms")
        exp.slow_worker("h3", compute_factor=factor)
        result = exp.run()
        assert result.correct
        times[factor] = [it.ended_s - it.started_s for it in result.iterations]
    for normal, slow in zip(times[1.0], times[2.0]):
        assert slow - normal == pytest.approx(0.005, rel=0.05)   # one more compute time


def test_tenants_arrive_in_turn_and_beside_each_other():
    exp = Experiment.leaf_spine(leaves=2, spines=1, hosts_per_leaf=4, bw_mbps=1000)
    exp.set_options(**FAST)
    exp.add_job("first", algo="ina", workers=["h1", "h5"], size="64KiB")
    exp.add_job("second", algo="ina", workers=["h1", "h5"], size="64KiB", after="first",
                start="1ms")
    exp.add_job("beside", algo="ring", workers=["h2", "h6", "h3"], size="64KiB",
                start="0.2ms")
    result = exp.run()
    assert result.correct
    first, second, beside = (result.job(n) for n in ("first", "second", "beside"))
    assert second.arrived_s == pytest.approx(first.ended_s + 0.001)
    assert beside.arrived_s == pytest.approx(0.0002)
    assert first.placements[0]["p4_job"] != second.placements[0]["p4_job"]


def test_a_job_on_hosts_another_job_still_uses_fails_clearly():
    exp = Experiment.star(hosts=4)
    exp.add_job("a", algo="ring", workers=["h1", "h2"], size="64KiB", iterations=5)
    exp.add_job("b", algo="ring", workers=["h2", "h3"], size="64KiB", start="0.1ms")
    result = exp.run()
    assert result.job("a").correct
    assert "h2" in result.job("b").error and "one job per host" in result.job("b").error


def test_cross_traffic_shares_the_link_and_everything_is_delivered():
    exp = Experiment.leaf_spine(leaves=2, spines=1, hosts_per_leaf=3, bw_mbps=100)
    exp.set_options(**FAST)
    exp.add_job("ina", algo="ina", workers=["h1", "h4"], size="256KiB", iterations=2)
    exp.tcp_flow("bulk", "h2", "h5", at=0)
    exp.udp_flow("cbr", "h3", "h6", rate_mbps=10, at=0)
    result = exp.run()
    assert result.correct
    flows = {f.name: f for f in result.flows}
    assert flows["bulk"].bytes_delivered > 0 and flows["cbr"].bytes_delivered > 0
    assert flows["bulk"].goodput_mbps < 100
    assert flows["cbr"].goodput_mbps == pytest.approx(10, rel=0.1)


def test_a_lossy_link_change_is_recovered_by_the_protocol():
    exp = Experiment.star(hosts=4, bw_mbps=1000)
    exp.set_options(**FAST)
    exp.add_job("ina", algo="ina", workers=exp.hosts, size="256KiB", iterations=2)
    exp.link_change("h2", "s1", at="0.1ms", loss_percent=2)
    result = exp.run()
    assert result.correct and result.job("ina").retransmissions > 0


def test_results_are_written_and_the_progress_samples_end_complete(tmp_path):
    exp = fat_tree_job()
    exp.link_down("a0_0", "c0", at="0.5ms")
    result = exp.run(out=tmp_path)
    for name in ("summary.json", "jobs.csv", "iterations.csv", "events.csv", "timeline.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert result.samples.progress["train"][-1] == 1.0
    series, times = result.samples.progress["train"], result.samples.times_s
    # progress goes back once: the re-plan restarts the iteration's all-reduce
    drops = [t for t, a, b in zip(times[1:], series, series[1:]) if b < a]
    assert len(drops) == 1 and drops[0] >= result.events[0].detected_s


def test_the_same_scenario_and_seed_give_the_same_timeline():
    def once():
        exp = fat_tree_job()
        exp.link_down("a0_0", "c0", at="0.5ms")
        return exp.run().summary()
    first, second = once(), once()
    for summary in (first, second):
        summary.pop("wall_s")
    assert first == second


def test_bad_experiments_are_refused_before_anything_runs():
    exp = Experiment.star(hosts=4)
    with pytest.raises(ScenarioError, match="size"):
        exp.add_job("a", algo="ina", workers=["h1", "h2"], size="12 parsecs")
    exp.add_job("a", algo="ina", workers=["h1", "h2"], size="64KiB")
    exp.link_down("h1", "h3", at=0)
    with pytest.raises(ScenarioError, match="no link between"):
        exp.run()
    exp = Experiment.star(hosts=4)            # unshaped: a NIC slowdown has no rate to divide
    exp.add_job("a", algo="ina", workers=["h1", "h2"], size="64KiB")
    exp.slow_worker("h1", nic_factor=2)
    with pytest.raises(ScenarioError, match="shaped network"):
        exp.run()
    with pytest.raises(ScenarioError, match="time_limit"):
        exp.set_options(time_limit=float("nan"))
    assert isinstance(exp.scenario(), m.Scenario)


def test_workers_that_finish_computing_while_their_job_is_cut_off_wait_for_the_repair():
    """Regression: a worker whose compute ended while its job waited for a repair started a
    call on no placement (AttributeError out of the event loop)."""
    exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, bw_mbps=1000)
    exp.set_options(**FAST)
    exp.add_job("train", algo="ina", workers=["h1", "h2", "h3", "h4"], size="64KiB",
                iterations=2, compute="5ms")
    exp.switch_crash("l1", at="6ms")       # during the first call or the second compute
    exp.switch_crash("l2", at="6.5ms")
    exp.switch_restart("l1", at="20ms")
    exp.switch_restart("l2", at="21ms")
    result = exp.run()
    assert result.correct, result.job("train").error


def test_a_ring_straggler_costs_its_compute_not_a_retransmission_timeout():
    """Regression: ring ranks created only when their compute ended dropped what faster
    neighbours had sent (no listener yet), and each straggler iteration waited out TCP's
    200 ms retransmission floor."""
    times = {}
    for factor in (1.0, 2.0):
        exp = Experiment.star(hosts=8, bw_mbps=1000)
        exp.set_options(**FAST)
        exp.add_job("ring", algo="ring", workers=exp.hosts, size="256KiB", iterations=2,
                    compute="5ms")
        exp.slow_worker("h3", compute_factor=factor)
        result = exp.run()
        assert result.correct
        assert result.job("ring").retransmissions == 0
        times[factor] = [it.ended_s - it.started_s for it in result.iterations]
    for normal, slow in zip(times[1.0], times[2.0]):
        assert slow - normal <= 0.005 + 1e-6        # at most the extra compute


def test_the_bar_of_a_simulation_shows_virtual_time_and_frames_per_second(capsys, monkeypatch):
    from inaemu.scenario import sim_engine
    monkeypatch.setattr(sim_engine, "BAR_EVERY_SAMPLES", 10)   # at every look
    exp = fat_tree_job(size="256KiB", iterations=2)
    assert exp.run(progress=lambda _line: None, bar=True).correct
    err = capsys.readouterr().err
    assert "ms virtual" in err and "frames/s" in err


def test_a_long_simulation_without_a_terminal_says_how_far_it_has_got(monkeypatch):
    from inaemu.scenario import sim_engine
    monkeypatch.setattr(sim_engine, "PROGRESS_LINE_S", 0.0)
    lines = []
    exp = fat_tree_job(size="256KiB", iterations=2)
    assert exp.run(progress=lines.append, bar=False).correct
    reached = [line for line in lines if "virtual reached" in line]
    assert reached and "train" in reached[0] and "of 2 calls" in reached[0]
    # and the frames per wall second since the line before, moving while the calls run
    rates = [int(line.rsplit("(", 1)[1].split(" frames/s")[0].replace(",", ""))
             for line in reached]
    assert any(rate > 0 for rate in rates)
