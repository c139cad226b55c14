"""The topology description: validation with located errors, JSON round-trip, paths, builders."""

from __future__ import annotations

import json

import pytest

from topologies.builders import leaf_spine, linear, star
from topologies.model import Direction, Endpoint, Host, Link, Switch, Topology, TopologyError


def test_star_addresses_are_deterministic():
    topo = star(3, bw=10, loss=1.5, delay_ms=2)
    assert [h.name for h in topo.hosts] == ["h1", "h2", "h3"]
    assert [h.ip_with_prefix for h in topo.hosts] == ["10.0.0.1/24", "10.0.0.2/24", "10.0.0.3/24"]
    assert topo.host("h3").mac == "02:00:0a:00:00:03"
    (s1,) = topo.switches
    assert (s1.name, s1.device_id, s1.grpc_port) == ("s1", 1, 20001)
    assert topo.port_towards("s1", "h2") == 2
    assert topo.host_link("h3").node == "s1" and topo.host_link("h3").remote_port == 3
    link = topo.host_link("h1").link
    assert link.bw_mbps == 10
    assert link.leaving("s1") == Direction(delay_ms=2, loss_percent=1.5)
    assert star(3) == star(3)


def test_json_round_trip_preserves_everything(tmp_path):
    topo = leaf_spine(2, 2, 2, bw=100, loss=0.5, delay_ms=1)
    path = tmp_path / "topo.json"
    topo.save(path)
    again = Topology.load(path)
    assert again == topo
    assert again.to_dict() == json.loads(path.read_text())
    assert [s.tier for s in again.switches] == ["leaf", "leaf", "spine", "spine"]


def test_per_direction_impairments_survive_json():
    link = Link(a=Endpoint(node="h1", port=0), b=Endpoint(node="s1", port=1),
                a_to_b=Direction(loss_percent=5), b_to_a=Direction(delay_ms=3))
    topo = Topology(hosts=[Host(name="h1", ip="10.0.0.1", mac="02:00:0a:00:00:01")],
                    switches=[Switch(name="s1", device_id=1, grpc_port=50001)], links=[link])
    again = Topology.from_json(topo.to_json())
    assert again.links[0].leaving("h1").loss_percent == 5
    assert again.links[0].leaving("s1").delay_ms == 3
    assert again.links[0].leaving("s1").loss_percent == 0


def _star_dict():
    return star(2).to_dict()


@pytest.mark.parametrize("mutate, where, problem", [
    (lambda d: d["hosts"][1].update(ip="10.0.0.1"), "hosts[1].ip", "already used by h1"),
    (lambda d: d["hosts"][0].update(ip="10.0.0.300"), "hosts[0].ip", "not a dotted IPv4"),
    (lambda d: d["hosts"][0].update(mac="01:00:00:00:00:01"), "hosts[0].mac", "multicast"),
    (lambda d: d["hosts"][0].update(name="h-1"), "hosts[0].name", "must be a letter"),
    (lambda d: d["switches"][0].update(grpc_port=70000), "switches[0].grpc_port", "out of range"),
    (lambda d: d["switches"][0].update(colour="red"), "switches[0]", "unknown field 'colour'"),
    (lambda d: d["links"][0]["b"].update(node="s9"), "links[0].b.node", "unknown node 's9'"),
    (lambda d: d["links"][1]["b"].update(port=1), "links[1].b.port", "port 1 of s1 is used twice"),
    (lambda d: d["links"][0]["b"].update(port=511), "links[0].b.port", "out of range"),
    (lambda d: d["links"][0]["b"].update(port=0), "links[0].b.port", "switch ports are 1..510"),
    (lambda d: d["links"][0]["a_to_b"].update(loss_percent=101), "links[0].a_to_b.loss_percent",
     "out of range"),
    (lambda d: d["links"][0].update(bw_mbps="fast"), "links[0].bw_mbps", "expected a number"),
    (lambda d: d["links"].pop(), "hosts[1]", "has 0 links"),
    (lambda d: d.update(hosts={}), "hosts", "expected a list"),
])
def test_bad_descriptions_raise_located_errors(mutate, where, problem):
    data = _star_dict()
    mutate(data)
    with pytest.raises(TopologyError) as info:
        Topology.from_dict(data)
    assert info.value.where == where
    assert problem in info.value.problem


def test_bad_json_text_and_missing_file(tmp_path):
    with pytest.raises(TopologyError, match="line 1 column"):
        Topology.from_json("{nope")
    with pytest.raises(TopologyError, match="cannot read"):
        Topology.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"links": [{"a": {"node": "h1", "port": 0}}]}))
    with pytest.raises(TopologyError, match=r"bad.json: links\[0\]: missing field 'b'"):
        Topology.load(bad)


def test_host_to_host_link_is_refused():
    hosts = [Host(name="h1", ip="10.0.0.1", mac="02:00:0a:00:00:01"),
             Host(name="h2", ip="10.0.0.2", mac="02:00:0a:00:00:02")]
    link = Link(a=Endpoint(node="h1", port=0), b=Endpoint(node="h2", port=0))
    with pytest.raises(TopologyError, match="at least one switch"):
        Topology(hosts=hosts, links=[link])


def test_shortest_paths_are_deterministic_and_never_transit_hosts():
    chain = linear(3, hosts_per_switch=2)
    assert chain.shortest_path("h1", "h6") == ["h1", "s1", "s2", "s3", "h6"]
    assert chain.shortest_path("h1", "h2") == ["h1", "s1", "h2"]
    assert chain.distances_to("h6") == {"h6": 0, "s3": 1, "h5": 2, "s2": 2, "h3": 3, "h4": 3,
                                        "s1": 3, "h1": 4, "h2": 4}
    clos = leaf_spine(2, 3, 1)
    # equal-cost choice: the lowest port, i.e. spine sp1, every time
    assert clos.shortest_path("h1", "h2") == ["h1", "l1", "sp1", "l2", "h2"]
    assert clos.shortest_path("h2", "h1") == ["h2", "l2", "sp1", "l1", "h1"]


def test_builders_scale_addressing_beyond_one_slash24():
    big = star(300)
    assert big.host("h254").ip_with_prefix == "10.0.0.254/16"
    assert big.host("h300").ip == "10.0.1.44"
    assert len({h.mac for h in big.hosts}) == 300
    with pytest.raises(TopologyError, match="n_hosts"):
        star(0)


def test_lookups_name_the_problem():
    topo = star(2)
    with pytest.raises(KeyError, match="no node named 'h9'"):
        topo.node("h9")
    with pytest.raises(KeyError, match="is a switch"):
        topo.host("s1")
    with pytest.raises(KeyError, match="no link to h2"):
        topo.port_towards("h1", "h2")


def test_fat_tree_shape_and_paths():
    from topologies.builders import fat_tree, from_spec
    topo = fat_tree(4)
    assert (len(topo.hosts), len(topo.switches), len(topo.links)) == (16, 20, 48)
    assert sorted({s.tier for s in topo.switches}) == ["agg", "core", "edge"]
    assert all(len(topo.neighbours(s.name)) == 4 for s in topo.switches)
    assert len(topo.shortest_path("h1", "h2")) == 3                 # same edge switch
    assert len(topo.shortest_path("h1", "h3")) == 5                 # same pod
    assert [topo.switch(n).tier for n in topo.shortest_path("h1", "h16")[1:-1]] == [
        "edge", "agg", "core", "agg", "edge"]
    assert from_spec("fat_tree:4") == topo
    with pytest.raises(TopologyError, match="even k"):
        fat_tree(3)
