"""Scenarios on both simulator cores (`options.sim_core`): the same summary, event for event
what the controller did, every job's times and counters, the flows' bytes. The scenario
engine changes links, switches and hosts under a running network (failures, crashes,
restarts, slower NICs, loss changes, cross traffic), which whole `simulate` runs never do,
so the native core is checked here too (tests/sim/test_cores.py: the runs themselves)."""

from __future__ import annotations

import pytest

from inaemu.scenario import Experiment, ScenarioError
from inaemu.scenario import model as m
from inaemu.scenario.parse import parse_scenario

FAST = dict(switch_pps=1e6)


def link_failure(core):
    exp = Experiment.fat_tree(k=4, bw_mbps=1000, delay_ms=0.005)
    exp.set_options(sim_core=core, **FAST)
    exp.add_job("train", algo="ina", workers=exp.hosts, size="64KiB", iterations=2)
    exp.link_down("a0_0", "c0", at="1ms")
    exp.link_up("a0_0", "c0", at="30ms")
    return exp


def leaf_crash(core):
    exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, bw_mbps=1000)
    exp.set_options(sim_core=core, **FAST)
    exp.add_job("train", algo="ina", workers=["h1", "h2", "h3", "h4"], size="64KiB",
                iterations=3, compute="1ms")
    exp.switch_crash("l1", at="1.5ms")
    exp.switch_restart("l1", at="20ms")
    return exp


def cross_traffic(core):
    exp = Experiment.leaf_spine(leaves=2, spines=1, hosts_per_leaf=3, bw_mbps=100)
    exp.set_options(sim_core=core, **FAST)
    exp.add_job("ina", algo="ina", workers=["h1", "h4"], size="64KiB", iterations=2)
    exp.tcp_flow("bulk", "h2", "h5", at=0)
    exp.udp_flow("cbr", "h3", "h6", rate_mbps=10, at=0)
    return exp


def straggler_and_loss(core):
    exp = Experiment.star(hosts=6, bw_mbps=1000)
    exp.set_options(sim_core=core, **FAST)
    exp.add_job("ina", algo="ina", workers=["h1", "h2", "h3"], size="128KiB", iterations=2,
                compute="2ms")
    exp.add_job("ring", algo="ring", workers=["h4", "h5", "h6"], size="128KiB", start="0.3ms")
    exp.slow_worker("h2", compute_factor=2.0, nic_factor=3.0)
    exp.link_change("h5", "s1", at="0.5ms", loss_percent=3)
    return exp


SCENARIOS = {"link failure": link_failure, "leaf crash": leaf_crash,
             "cross traffic": cross_traffic, "straggler and loss": straggler_and_loss}


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_scenario_runs_the_same_on_both_cores(name):
    summaries = {}
    for core in ("python", "native"):
        result = SCENARIOS[name](core).run()
        assert result.correct, name
        summary = result.summary()
        summary.pop("wall_s")
        summaries[core] = summary
    assert summaries["native"] == summaries["python"]


def test_the_core_is_an_option_of_the_file_and_a_bad_one_is_refused():
    text = ("network: {topology: star, hosts: 2}\n"
            "jobs: [{name: a, algo: ina, workers: [h1, h2], size: 4KiB}]\n"
            "options: {sim_core: native}\n")
    assert parse_scenario(text).options.sim_core == "native"
    with pytest.raises(ScenarioError, match="options.sim_core.*python, native or auto"):
        m.Options(sim_core="fortran")
