"""Multi-tier builders: leaf-spine oversubscription through link bandwidths, the fat-tree's tiers,
wiring and addresses, and `python -m topologies` (the JSON writer)."""

from __future__ import annotations

import argparse
import ipaddress
import json

import pytest

from topologies import cli
from topologies.builders import fat_tree, leaf_spine
from topologies.model import Topology, TopologyError


def _bandwidths(topo: Topology) -> tuple[set, set]:
    """(host link bandwidths, switch-to-switch link bandwidths)."""
    host_names = {h.name for h in topo.hosts}
    hosts = {l.bw_mbps for l in topo.links if {l.a.node, l.b.node} & host_names}
    fabric = {l.bw_mbps for l in topo.links if not {l.a.node, l.b.node} & host_names}
    return hosts, fabric


@pytest.mark.parametrize("spines, hosts_per_leaf, ratio, uplink", [
    (2, 4, 1, 200.0),    # non-blocking: 4 x 100 in, 2 x 200 out
    (2, 4, 2, 100.0),    # 2:1
    (4, 6, 3, 50.0),     # 6 x 100 / (4 x 3)
    (1, 1, 0.5, 200.0),  # under-subscribed: uplinks faster than the hosts need
])
def test_leaf_spine_oversubscription_sets_uplink_bandwidth(spines, hosts_per_leaf, ratio, uplink):
    topo = leaf_spine(3, spines, hosts_per_leaf, bw=100, oversubscription=ratio)
    hosts, fabric = _bandwidths(topo)
    assert hosts == {100}
    assert len(fabric) == 1 and next(iter(fabric)) == pytest.approx(uplink)
    leaf_in = hosts_per_leaf * 100
    leaf_out = spines * next(iter(fabric))
    assert leaf_in / leaf_out == pytest.approx(ratio)


def test_leaf_spine_without_bandwidth_stays_unshaped_and_refuses_bad_ratios():
    assert _bandwidths(leaf_spine(2, 2, 2, oversubscription=4)) == ({None}, {None})
    for bad in (0, -1, "2", True):
        with pytest.raises(TopologyError, match="oversubscription"):
            leaf_spine(2, 2, 2, bw=10, oversubscription=bad)


@pytest.mark.parametrize("k", [2, 4, 6])
def test_fat_tree_tiers_wiring_and_addresses(k):
    half = k // 2
    topo = fat_tree(k)
    tiers = {t: [s for s in topo.switches if s.tier == t] for t in ("edge", "agg", "core")}
    assert [len(tiers[t]) for t in ("edge", "agg", "core")] == [k * half, k * half, half * half]
    assert len(topo.hosts) == k ** 3 // 4
    pod = {s.name: int(s.name[1:].split("_")[0]) for s in tiers["edge"] + tiers["agg"]}
    for edge in tiers["edge"]:              # k/2 hosts down, the k/2 aggs of its own pod up
        kinds = [topo.node(n.node) for n in topo.neighbours(edge.name)]
        assert sum(1 for n in kinds if n.name in {h.name for h in topo.hosts}) == half
        up = [n.name for n in kinds if n.name in pod]
        assert sorted(up) == sorted(f"a{pod[edge.name]}_{i}" for i in range(half))
    for agg in tiers["agg"]:                # the k/2 edges of its pod down, k/2 cores up
        names = [n.node for n in topo.neighbours(agg.name)]
        assert sorted(n for n in names if n.startswith("e")) == \
            sorted(f"e{pod[agg.name]}_{i}" for i in range(half))
        assert sum(1 for n in names if n.startswith("c")) == half
    for core in tiers["core"]:              # one aggregation switch in every pod
        assert sorted(pod[n.node] for n in topo.neighbours(core.name)) == list(range(k))
    # addresses: hN = 10.0.0.N in pod-major order, one subnet, unique MACs and device ids
    for n, host in enumerate(topo.hosts, start=1):
        assert host.name == f"h{n}" and host.ip == str(ipaddress.IPv4Address("10.0.0.0") + n)
        edge = topo.host_link(host.name).node
        assert pod[edge] == (n - 1) // (half * half)
    assert len({h.mac for h in topo.hosts}) == len(topo.hosts)
    assert sorted(s.device_id for s in topo.switches) == list(range(1, 5 * half * half + 1))
    across = topo.shortest_path("h1", f"h{k ** 3 // 4}")      # first pod to last: via a core
    assert [topo.switch(s).tier for s in across[1:-1]] == ["edge", "agg", "core", "agg", "edge"]


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_writes_a_leaf_spine_that_loads_back(tmp_path, capsys):
    out = tmp_path / "ls.json"
    assert _cli(["leaf-spine", "--spines", "2", "--leaves", "3", "--hosts-per-leaf", "4",
                 "--bw", "100", "--oversubscription", "2", "-o", str(out)]) == 0
    topo = Topology.load(out)
    assert topo == leaf_spine(3, 2, 4, bw=100, oversubscription=2)
    assert "5 switches, 12 hosts" in capsys.readouterr().err


def test_cli_prints_json_and_reports_bad_sizes(capsys, tmp_path):
    assert _cli(["fat-tree", "--k", "4"]) == 0
    assert len(json.loads(capsys.readouterr().out)["switches"]) == 20
    assert _cli(["fat-tree", "--k", "5"]) == 2
    assert "even k" in capsys.readouterr().err
    assert _cli(["leaf-spine", "--spines", "0", "--leaves", "1", "--hosts-per-leaf", "1"]) == 2
    assert "n_spines" in capsys.readouterr().err
    assert _cli(["star", "--hosts", "2", "-o", str(tmp_path / "missing" / "x.json")]) == 2
    assert "cannot write" in capsys.readouterr().err
