"""The set-up of a fat-tree(40) run without the simulation (issue 30: 16,000 workers): the
topology, every switch's aggregated routes and one tree job's placement, checked for what
makes them right, not only built:

- routes: on every one of the 2,000 switches, the longest prefix matching each of the 16,000
  host addresses sends it one hop closer to that host (or out of the host's own link), so every
  packet reaches every host; no switch holds more than `ipv4_lpm`'s 1024 entries, aggregator
  /32s included;
- the tree: every worker once, no switch with more members than ina.p4's 64-bit `ina_seen`
  bitmap, parents are neighbours, aggregator addresses unique and no host's.

Also that the pieces made fast for this are still their definitions (`aggregator_routes`)."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest

from controller.ina_jobs import InaProgram, aggregator_address, aggregator_routes
from controller.routing import forwarding_plans
from controller.trees import (MAX_MEMBERS, TreeJob, check_tree_job, choose_roots, plan_tree,
                              tree_shape)
from inaemu.experiment.config import ConfigError, MAX_FAT_TREE_K, RunConfig
from inaemu.sim import control
from topologies.builders import fat_tree, leaf_spine, linear

LPM_SIZE = 1024


def _ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


@pytest.fixture(scope="module")
def k40():
    cfg = RunConfig(algos=("ina",), workers=16000, size_bytes=1 << 20, net="sim",
                    topo="fat-tree", fat_k=40)
    topology = cfg.topology()
    (job, workers), = cfg.job_hosts(topology).items()
    return cfg, topology, job, workers


@pytest.fixture(scope="module")
def k40_routes(k40):
    return forwarding_plans(k40[1], aggregate_prefixes=True)


def _route_per_host(plan, addresses: np.ndarray) -> tuple[np.ndarray, list]:
    """The route each host address takes on one switch (index into the returned list of
    next-hop tuples; -1: no match), by longest prefix: prefixes applied shortest first, each
    over the contiguous slice of sorted addresses it covers."""
    chosen = np.full(len(addresses), -1, dtype=np.int64)
    actions = []
    for planned in sorted(plan.routes, key=lambda p: p.route.prefix_len):
        route = planned.route
        length = route.prefix_len
        low = _ip(route.prefix) & ((0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF)
        a, b = np.searchsorted(addresses, [low, low + (1 << (32 - length))])
        chosen[a:b] = len(actions)
        actions.append(route.next_hops)
    return chosen, actions


def test_k40_routes_reach_every_host_from_every_switch(k40, k40_routes):
    _, topology, _, _ = k40
    assert len(topology.hosts) == 16000 and len(topology.switches) == 2000
    table = topology.switch_distances()
    n = len(table.names)
    hosts = sorted(topology.hosts, key=lambda h: _ip(h.ip))
    addresses = np.array([_ip(h.ip) for h in hosts], dtype=np.int64)
    attached = np.array([table.index[topology.host_link(h.name).node] for h in hosts])
    assert set(k40_routes) == set(table.names)
    for switch, plan in k40_routes.items():
        s = table.index[switch]
        assert len(plan.routes) <= LPM_SIZE, switch
        chosen, actions = _route_per_host(plan, addresses)
        assert (chosen >= 0).all(), f"{switch}: a host address misses every route"
        # towards a switch: every next hop one hop closer to the host's switch; checked once
        # per (route, host's switch) pair, every hop of the route at once
        width = max(len(hops) for hops in actions)
        hop_index = np.full((len(actions), width), -1, dtype=np.int64)
        last_hop = np.zeros(len(actions), dtype=bool)
        for i, hops in enumerate(actions):
            if hops[0].node in table.index:
                hop_index[i, :len(hops)] = [table.index[h.node] for h in hops]
            else:
                last_hop[i] = True
        pairs = np.unique(chosen * n + attached)
        route, target = pairs // n, pairs % n
        towards = ~last_hop[route]
        through = hop_index[route[towards]]
        there = table.matrix[through.clip(0), target[towards][:, None]]
        here = table.matrix[s, target[towards]][:, None]
        assert ((through < 0) | (there == here - 1)).all(), switch
        # the last hop: a route of one host, on this switch, out of that host's own link
        used, first, count = np.unique(chosen, return_index=True, return_counts=True)
        for i, at, times in zip(used.tolist(), first.tolist(), count.tolist()):
            if last_hop[i]:
                assert times == 1 and attached[at] == s, (switch, actions[i])
                assert [h.node for h in actions[i]] == [hosts[at].name], (switch, actions[i])


def test_k40_tree_respects_the_member_bitmap_and_the_tables(k40, k40_routes):
    cfg, topology, job_id, workers = k40
    program = InaProgram.from_p4info(control.compile_program(
        str(control.INA_PROGRAM), (("INA_K", str(cfg.elems_k)),)).p4info)
    assert program.max_workers == MAX_MEMBERS == 64
    root, = choose_roots(topology, [(job_id, workers)])
    shape = tree_shape(topology, job_id, tuple(workers), root, max_members=program.max_workers)
    assert shape.depth == 3 and topology.switch(root).tier == "core"
    assert max(len(m) for m in shape.members.values()) <= program.max_workers
    members = [m for ms in shape.members.values() for m in ms]
    assert sorted(m for m in members if m not in shape.parent) == sorted(workers)
    assert len(members) == len(set(members)) == len(workers) + len(shape.order) - 1
    for switch, parent in shape.parent.items():
        if parent is not None:
            assert parent in {n.node for n in topology.neighbours(switch)}
    job = TreeJob(job_id, tuple(workers), cfg.elems_k, cfg.pool_size, root)
    check_tree_job(topology, {s: program for s in shape.order}, job, shape)
    assert job.cells <= program.cells
    addresses = {s: aggregator_address(topology, s) for s in shape.order}
    plan = plan_tree(topology, job, shape, bases={s: 0 for s in shape.order},
                     mgids={s: 1 for s in shape.order}, new_addresses=set(addresses.values()))
    assert len(set(addresses.values())) == len(shape.order)
    subnet = ipaddress.IPv4Network("10.0.0.0/16")
    host_ips = {h.ip for h in topology.hosts}
    assert all(ipaddress.IPv4Address(a) in subnet and a not in host_ips
               for a in addresses.values())
    assert len(plan.endpoints) == len(workers)
    routes = k40_routes
    extra: dict[str, int] = {}
    for switch, entry in plan.entries:
        if entry.table == "ipv4_lpm":
            extra[switch] = extra.get(switch, 0) + 1
    assert extra, "the tree's aggregator addresses need routes on their neighbours"
    for switch, count in extra.items():
        assert len(routes[switch].routes) + count <= LPM_SIZE, switch


def test_fat_tree_k_limit_is_said(k40):
    assert MAX_FAT_TREE_K >= 40
    with pytest.raises(ConfigError, match=f"2..{MAX_FAT_TREE_K}, got {MAX_FAT_TREE_K + 2}"):
        RunConfig(algos=("ina",), workers=16, net="sim", topo="fat-tree",
                  fat_k=MAX_FAT_TREE_K + 2)
    with pytest.raises(ConfigError, match=f"on Mininet \\(--net sim: {MAX_FAT_TREE_K}\\)"):
        RunConfig(algos=("ina",), workers=16, net="mininet", topo="fat-tree", fat_k=10)


def _aggregator_routes_by_definition(topology, switch, address, only=None):
    distance = topology.distances_to(switch)
    out = []
    for other in topology.switches:
        if other.name == switch or other.name not in distance or \
                (only is not None and other.name not in only):
            continue
        closer = [nb for nb in topology.neighbours(other.name)
                  if distance.get(nb.node, -1) == distance[other.name] - 1]
        out.append((other.name, closer[0].port))
    return out


@pytest.mark.parametrize("topology", [fat_tree(4), leaf_spine(4, 3, 2), linear(4, 1)],
                         ids=lambda t: t.name)
def test_aggregator_routes_are_the_definitions(topology):
    for switch in topology.switches:
        address = aggregator_address(topology, switch.name)
        for only in (None, {n.node for n in topology.neighbours(switch.name)}):
            got = [(r.switch, r.port) for r in aggregator_routes(topology, switch.name, address,
                                                                 only)]
            assert got == _aggregator_routes_by_definition(topology, switch.name, address, only)


def test_a_run_config_builds_its_topology_once(monkeypatch):
    """Regression: the checks, the host count and `topology()` each built the fat-tree again
    (three 18,000-node builds at k = 40); a changed copy builds its own."""
    from inaemu.experiment import config as config_module
    built = []
    real = config_module.fat_tree

    def counted(*args, **kwargs):
        built.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(config_module, "fat_tree", counted)
    cfg = RunConfig(algos=("ina",), workers=16, net="sim", topo="fat-tree", fat_k=4)
    topology = cfg.topology()
    assert cfg.host_count == 16 and len(topology.hosts) == 16 and len(built) == 1
    tagged = cfg.with_(tag="x", fat_k=6, workers=54)
    assert [h.name for h in tagged.topology().hosts][:2] == ["xh1", "xh2"]
    assert len(built) == 2 and tagged.host_count == 54


def test_hosts_by_address():
    topology = fat_tree(4)
    assert topology.host_by_ip("10.0.0.16").name == "h16"
    with pytest.raises(KeyError, match="no host has address 10.0.0.17"):
        topology.host_by_ip("10.0.0.17")
