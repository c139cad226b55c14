"""inaemu/scenario/parse.py: scenario files (YAML, JSON) read into the model, written back, and
every refusal giving the line of the file where the problem is."""

from __future__ import annotations

import json

import pytest
import yaml

from inaemu.scenario.model import (FlowStart, FlowStop, Job, LinkChange, LinkDown, LinkUp,
                                   Network, Options, Scenario, ScenarioError, SlowWorker,
                                   SwitchCrash, SwitchRestart, Workload)
from inaemu.scenario.parse import (dump_scenario, load_scenario, parse_scenario,
                                   scenario_to_dict)

# Line numbers matter: the refusal tests below name lines of this text.
FULL = """\
name: link-failure
network:
  topology: fat-tree
  k: 4
  bw_mbps: 1000
  delay_ms: 50us
  loss_percent: 0
options:
  seed: 1
  elems_k: 32
  pool_size: 64
  detection_s: 1ms
  time_limit_s: 30
  switch_pps: 65000
jobs:
  - name: train
    algo: ina
    workers: [h1, h2, h3, h4]
    size: 8MiB
    iterations: 3
    compute: 2ms
    start: 0
    root: c0
  - name: later
    algo: ring
    workers: h5..h8
    size: 4KB
    after: train
events:
  - {at: 5ms, link_down: [a0_0, c0]}
  - {at: 20ms, link_up: [a0_0, c0]}
  - {at: 1ms, link_change: {link: [h1, e0_0], loss_percent: 1, delay_ms: 2, bw_mbps: 100}}
  - {at: 3ms, switch_crash: e0_0}
  - {at: 9ms, switch_restart: e0_0}
  - {at: 0, slow_worker: {host: h3, compute_factor: 2, nic_factor: 1}}
  - {at: 0, flow_start: {name: bulk, kind: tcp, from: h9, to: h10, size: 100MiB}}
  - {at: 0.5 s, flow_start: {name: noise, kind: udp, from: [h11], to: h12, rate_mbps: 50}}
  - {at: 2s, flow_start: {name: burst, kind: incast, from: [h13, h14, h15], to: h16}}
  - {at: 1s, flow_stop: bulk}
"""

EXPECTED = Scenario(
    name="link-failure",
    network=Network(kind="fat-tree", k=4, bw_mbps=1000, delay_ms=0.05, loss_percent=0),
    options=Options(seed=1, elems_k=32, pool_size=64, detection_s=0.001, time_limit_s=30.0,
                    switch_pps=65000),
    jobs=(Job("train", "ina", ("h1", "h2", "h3", "h4"),
              Workload(size_bytes=8 * 2**20, iterations=3, compute_s=0.002), start_s=0.0,
              root="c0"),
          Job("later", "ring", ("h5", "h6", "h7", "h8"), Workload(size_bytes=4000),
              after="train")),
    events=(LinkDown(0.005, "a0_0", "c0"),
            LinkUp(0.02, "a0_0", "c0"),
            LinkChange(0.001, "h1", "e0_0", loss_percent=1, delay_ms=2.0, bw_mbps=100),
            SwitchCrash(0.003, "e0_0"),
            SwitchRestart(0.009, "e0_0"),
            SlowWorker(0.0, "h3", compute_factor=2, nic_factor=1),
            FlowStart(0.0, "bulk", "tcp", ("h9",), "h10", size_bytes=100 * 2**20),
            FlowStart(0.5, "noise", "udp", ("h11",), "h12", rate_mbps=50),
            FlowStart(2.0, "burst", "incast", ("h13", "h14", "h15"), "h16"),
            FlowStop(1.0, "bulk")))

SMALL = """\
network:
  topology: star
  hosts: 4
jobs:
  - name: a
    algo: ina
    workers: [h1, h2]
    size: 4KiB
"""


def refusal(text: str, source: str = "<text>") -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source)
    return caught.value


def assert_refused(text: str, line: int, *phrases: str, source: str = "<text>") -> None:
    error = refusal(text, source)
    message = str(error)
    assert message.startswith(f"line {line}: "), message
    assert error.line == line
    for phrase in phrases:
        assert phrase in message, message


def edit(old: str, new: str, text: str = FULL) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# -- reading ----------------------------------------------------------------------------------

def test_full_file_parses_to_the_model(tmp_path):
    assert parse_scenario(FULL) == EXPECTED
    path = tmp_path / "link-failure.yaml"
    path.write_text(FULL)
    assert load_scenario(path) == EXPECTED


def test_defaults_and_name_from_the_file(tmp_path):
    path = tmp_path / "small-one.yml"
    path.write_text(SMALL)
    scenario = load_scenario(path)
    assert scenario.name == "small-one"
    assert scenario.options == Options()
    assert scenario.events == ()
    assert scenario.jobs[0] == Job("a", "ina", ("h1", "h2"), Workload(4096))
    assert parse_scenario(SMALL).name == "scenario"


@pytest.mark.parametrize("text, seconds", [
    ("5ms", 0.005), ("100us", 0.0001), ("2s", 2.0), ("0.5 s", 0.5), ("1min", 60.0),
    ("250ns", 2.5e-7), ("0", 0.0), ("1.5", 1.5), ("3e-3", 0.003)])
def test_durations(text, seconds):
    scenario = parse_scenario(SMALL + f"    start: {text}\n")
    assert scenario.jobs[0].start_s == seconds


@pytest.mark.parametrize("text, size", [
    ("1000B", 1000), ("4MB", 4_000_000), ("512KiB", 512 * 1024), ("1GiB", 2**30),
    ("0.5MiB", 2**19), ("4096", 4096), ("1e3", 1000)])
def test_sizes(text, size):
    assert parse_scenario(edit("4KiB", text, SMALL)).jobs[0].workload.size_bytes == size


def test_json_file(tmp_path):
    path = tmp_path / "s.json"
    data = {"network": {"topology": "leaf-spine", "leaves": 2, "spines": 1,
                        "hosts_per_leaf": 2, "delay_ms": 0.5},
            "jobs": [{"name": "j", "algo": "ring", "workers": "h1..h4", "size": 1024}],
            "events": [{"at": "1ms", "link_down": ["l1", "sp1"]}]}
    path.write_text(json.dumps(data, indent="\t"))    # tabs are JSON whitespace, not YAML's
    scenario = load_scenario(path)
    assert scenario.name == "s"
    assert scenario.network == Network(kind="leaf-spine", leaves=2, spines=1,
                                       hosts_per_leaf=2, delay_ms=0.5)
    assert scenario.jobs[0].workers == ("h1", "h2", "h3", "h4")
    assert scenario.events == (LinkDown(0.001, "l1", "sp1"),)


def test_round_trip():
    scenario = parse_scenario(FULL)
    assert parse_scenario(yaml.safe_dump(scenario_to_dict(scenario))) == scenario
    assert parse_scenario(json.dumps(scenario_to_dict(scenario)), "x.json") == scenario


def test_dump_and_load(tmp_path):
    for name in ("out.yaml", "out.json"):
        dump_scenario(EXPECTED, tmp_path / name)
        assert load_scenario(tmp_path / name) == EXPECTED
    with pytest.raises(ScenarioError, match="ends in"):
        dump_scenario(EXPECTED, tmp_path / "out.txt")


def test_other_suffixes_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    with pytest.raises(ScenarioError, match="ends in .yaml, .yml, .json"):
        load_scenario(path)


# -- refusals, each with its line -------------------------------------------------------------

def test_unknown_key_at_top_level():
    assert_refused(FULL + "extra: 1\n", 40, "top level: unknown key 'extra'", "known: name,")


def test_unknown_key_in_network():
    assert_refused(edit("  k: 4", "  topo: 4"), 4, "network: unknown key 'topo'",
                   "known: topology, k,")


def test_unknown_key_in_job():
    assert_refused(edit("    iterations: 3", "    iterations: 3\n    gpus: 8"), 21,
                   "jobs[train]: unknown key 'gpus'")


def test_unknown_key_in_event():
    assert_refused(edit("{at: 3ms, switch_crash: e0_0}", "{at: 3ms, switch_crash: e0_0, x: 1}"),
                   33, "events[3]: unknown key 'x'")
    assert_refused(edit("compute_factor: 2,", "compute_factor: 2, cpu: 1,"), 35,
                   "events[5] (slow_worker): unknown key 'cpu'")


def test_setting_of_another_topology():
    assert_refused(edit("  k: 4", "  hosts: 8"), 4, "'hosts' is not a setting of a fat-tree")


def test_bad_size_string():
    assert_refused(edit("size: 8MiB", "size: 8XB"), 19, "jobs[train].size", "'8XB'",
                   "like '8MiB'")


def test_fractional_size():
    assert_refused(edit("size: 8MiB", "size: 1.5B"), 19, "must be whole bytes")
    assert_refused(edit("size: 100MiB", "size: 100.5"), 36, "must be whole bytes")


def test_size_not_a_multiple_of_4():
    assert_refused(edit("size: 8MiB", "size: 10"), 19,
                   "jobs[train].workload.size_bytes: must be a multiple of 4")


def test_job_naming_a_missing_host():
    # the line of the job's workers key (the model names jobs[train].workers)
    assert_refused(edit("[h1, h2, h3, h4]", "[h1, h2, h3, h99]"), 18,
                   "jobs[train].workers: no host 'h99'")


def test_job_errors_of_the_model_at_their_key():
    assert_refused(edit("algo: ina", "algo: nccl"), 17, "jobs[train].algo: expected one of")
    assert_refused(edit("root: c0", "root: c9"), 23, "jobs[train].root: no switch 'c9'")
    assert_refused(edit("after: train", "after: nobody"), 28, "no job named 'nobody'")
    assert_refused(edit("  - name: later", "  - name: train"), 24,
                   "two jobs have this name (the other at line 16)")
    assert_refused(edit("    size: 4KB\n", ""), 24, "jobs[later]: a job runs exactly one of size")


def test_event_naming_a_missing_link():
    assert_refused(edit("link_up: [a0_0, c0]", "link_up: [a0_0, c2]"), 31,
                   "events[1] (link_up): no link between 'a0_0' and 'c2'")


def test_event_errors_of_the_model():
    assert_refused(edit("loss_percent: 1,", "loss_percent: 101,"), 32,
                   "events[2] (link_change).loss_percent: must be a percentage")
    assert_refused(edit("kind: tcp", "kind: sctp"), 36, "events[6] (flow_start).kind")
    assert_refused(edit("flow_stop: bulk", "flow_stop: nothing"), 39,
                   "no flow named 'nothing'")


def test_event_with_zero_kind_keys():
    assert_refused(edit("{at: 9ms, switch_restart: e0_0}", "{at: 9ms}"), 34,
                   "events[4]: an event has exactly one of link_down, link_up,", "(got none)")


def test_event_with_two_kind_keys():
    assert_refused(edit("{at: 3ms, switch_crash: e0_0}",
                        "{at: 3ms, switch_crash: e0_0, switch_restart: e0_0}"), 33,
                   "exactly one of", "(got switch_crash, switch_restart)")


def test_event_without_at_and_negative_at():
    assert_refused(edit("{at: 3ms, switch_crash: e0_0}", "{switch_crash: e0_0}"), 33,
                   "missing key 'at'")
    assert_refused(edit("{at: 3ms, switch_crash: e0_0}", "{at: -3ms, switch_crash: e0_0}"),
                   33, "events[3] (switch_crash).at: a duration cannot be negative")


def test_yaml_syntax_error():
    assert_refused(edit("  k: 4", "  k: [4"), 5, "YAML syntax")
    assert_refused(SMALL + "  bad: indentation\n", 9, "YAML syntax")


def test_json_syntax_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "network": {"topology": "star"},\n  "jobs": [\n'
                    '    {"name": "a" "algo": "ina"}\n  ]\n}\n')
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value).startswith("line 4: JSON syntax: Expecting ',' delimiter")


def test_duplicate_key_in_json():
    assert_refused('{"network": {"topology": "star"},\n "jobs": [],\n "jobs": []}', 3,
                   "key 'jobs' given twice (first at line 2)", source="s.json")


def test_wrong_types():
    assert_refused(edit("  k: 4", "  k: true"), 4, "network.k: expected an integer, got True")
    assert_refused(edit("  bw_mbps: 1000", "  bw_mbps: fast"), 5,
                   "network.bw_mbps: expected a number, got 'fast'")
    assert_refused(edit("iterations: 3", "iterations: 2.5"), 20, "expected an integer")
    assert_refused(edit("workers: [h1, h2, h3, h4]", "workers: {h1: 1}"), 18,
                   "expected a list of hosts or a range", "got a mapping")
    assert_refused("network: [star]\njobs: []\n", 1, "network: expected a mapping, got a list")
    assert_refused("network: {topology: star}\njobs: 3\n", 2, "jobs: expected a list, got 3")
    assert_refused(edit("link_down: [a0_0, c0]", "link_down: a0_0"), 30,
                   "expected a link: a list of its two nodes")
    assert_refused(edit("detection_s: 1ms", "detection_s: 1 fortnight"), 12,
                   "options.detection_s: expected a duration like '5ms'")


def test_bad_ranges():
    assert_refused(edit("h5..h8", "h8..h5"), 26, "a range goes upwards")
    assert_refused(edit("h5..h8", "h5..x8"), 26, "same prefix")


def test_model_errors_of_network_and_options():
    assert_refused(edit("  k: 4", "  k: 3"), 4, "network.k: a fat-tree needs an even k")
    assert_refused(edit("topology: fat-tree", "topology: ring"), 3,
                   "network.topology: expected one of star, leaf-spine, fat-tree")
    assert_refused(edit("time_limit_s: 30", "time_limit_s: 0"), 13,
                   "options.time_limit_s: must be a number > 0")


def test_empty_file(tmp_path):
    assert_refused("", 1, "the file is empty")
    assert_refused("# nothing here\n", 1, "the file is empty")
    path = tmp_path / "empty.json"
    path.write_text("")
    with pytest.raises(ScenarioError, match="^line 1: .*empty"):
        load_scenario(path)


def test_top_level_not_a_mapping():
    assert_refused("- network\n- jobs\n", 1, "top level: expected a mapping, got a list")


def test_missing_sections():
    assert_refused("network: {topology: star}\n", 1, "missing key 'jobs'")
    assert_refused("network: {topology: star}\njobs: []\n", 2,
                   "jobs: a scenario needs at least one job")
