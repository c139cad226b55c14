"""controller.trees: tree shapes and plans (sans-I/O), refusals, and installation over P4Runtime
against real switch runtimes (the simulator's switches and servers), with registers and counters
read back through the controller after packets went up and down a tree."""

from __future__ import annotations

import numpy as np
import pytest

from controller.client import DELETE
from controller.errors import P4RuntimeError
from controller.fabric import Fabric
from controller.ina_control import InaJobs
from controller.ina_jobs import InaProgram, JobRefused, aggregator_address
from controller.trees import (TreeJob, TreeJobs, check_tree_job, choose_root, choose_roots,
                              plan_tree, read_cell, tree_shape)
from hosts.framing import UdpFrame, build_udp_frame, parse_udp_frame
from hosts.ina_wire import InaPacket, Kind, decode, encode
from inaemu.sim import control
from inaemu.sim.network import SimNetwork
from topologies.builders import fat_tree, leaf_spine, linear, star

K = 8
PROGRAM = InaProgram(k=K, cells=2048, max_workers=32, counter_jobs=1024)
INA_PORT = 48879


def hosts_of(topology) -> tuple[str, ...]:
    return tuple(h.name for h in topology.hosts)


# -- shapes ---------------------------------------------------------------------------------------

def test_fat_tree_root_and_levels() -> None:
    topology = fat_tree(4)
    shape = tree_shape(topology, 1, hosts_of(topology))
    assert shape.root == "c0" and shape.depth == 3
    assert shape.members["c0"] == ("a0_0", "a1_0", "a2_0", "a3_0")
    assert shape.members["a1_0"] == ("e1_0", "e1_1")
    assert shape.members["e1_1"] == ("h7", "h8")
    assert shape.parent["e1_1"] == "a1_0" and shape.parent["a1_0"] == "c0"
    assert shape.order[0] == "c0" and len(shape.order) == 13


def test_root_minimises_the_deepest_worker_with_deterministic_ties() -> None:
    topology = fat_tree(4)
    assert choose_root(topology, ("h1", "h2")) == "e0_0"          # one edge: depth 1
    assert choose_root(topology, ("h1", "h3")) == "a0_0"          # one pod: a0_0 before a0_1
    assert choose_root(topology, ("h1", "h5")) == "c0"
    assert choose_root(leaf_spine(2, 2, 2), ("h1", "h4")) == "sp1"
    assert choose_root(linear(3, 2), hosts_of(linear(3, 2))) == "s2"
    shape = tree_shape(topology, 1, ("h1", "h2"))
    assert shape.depth == 1 and shape.members == {"e0_0": ("h1", "h2")}


def test_concurrent_jobs_spread_over_equally_near_roots() -> None:
    topology = fat_tree(4)
    hosts = hosts_of(topology)
    assert choose_roots(topology, [(j, hosts[j::4]) for j in range(4)]) == ["c0", "c2", "c1", "c3"]
    # a nearer root always wins over a less busy one
    assert choose_root(topology, ("h1", "h3"), busy={"a0_0": 5, "e0_0": 1}) == "a0_1"
    assert choose_root(topology, ("h1", "h2"), busy={"e0_0": 9}) == "e0_0"


def test_a_given_root_is_kept_and_a_root_with_its_own_workers_lists_them_first() -> None:
    topology = linear(3, 2)
    shape = tree_shape(topology, 1, hosts_of(topology), "s1")
    assert shape.root == "s1" and shape.depth == 3
    assert shape.members["s1"] == ("h1", "h2", "s2")
    assert shape.members["s2"] == ("h3", "h4", "s3")


# -- plans ----------------------------------------------------------------------------------------

def test_plan_entries_of_a_three_level_tree() -> None:
    topology = fat_tree(4)
    job = TreeJob(7, hosts_of(topology), K, 16)
    shape = tree_shape(topology, 7, job.workers)
    check_tree_job(topology, {s: PROGRAM for s in shape.order}, job, shape)
    addresses = {s: aggregator_address(topology, s) for s in shape.order}
    plan = plan_tree(topology, job, shape, bases={s: 34 for s in shape.order},
                     mgids={s: 1024 for s in shape.order}, new_addresses=set(addresses.values()))
    jobs = {s: e for s, e in plan.entries if e.table == "ina_jobs"}
    assert jobs["c0"].action == "ina_root_job"
    assert jobs["c0"].params == {"base": 34, "pool_size": 16, "n": 4, "mgid": 1024,
                                 "result_count": 16}
    assert jobs["a2_0"].action == "ina_child_job"
    assert jobs["a2_0"].params["parent"] == addresses["c0"]
    assert jobs["a2_0"].params["child_index"] == 2 and jobs["a2_0"].params["n"] == 2
    assert jobs["e2_1"].params["parent"] == addresses["a2_0"]
    # the core addresses results for member 2 to a2_0's aggregator, out of its port to a2_0
    results = [e for s, e in plan.entries
               if s == "c0" and e.table == "ina_result_addresses"]
    assert results[2].params["dstAddr"] == addresses["a2_0"]
    assert plan.groups["c0"] == ((1, 0), (2, 1), (3, 2), (4, 3))
    # a worker sends to its edge's address as its index there
    assert plan.endpoints[11].address == addresses["e2_1"] and plan.endpoints[11].worker_id == 1
    routes = [(s, e) for s, e in plan.entries if e.table == "ipv4_lpm"]
    # every new address on its neighbouring switches only (children send partials up to it)
    assert len(routes) == sum(1 for sw in shape.order for n in topology.neighbours(sw)
                              if topology.is_switch(n.node))
    for child, parent in shape.parent.items():
        if parent is not None:
            (up,) = [e for s, e in routes if s == child
                     and e.match["hdr.ipv4.dstAddr"] == (addresses[parent], 32)]
            assert up.params["port"] == topology.port_towards(child, parent)
    assert plan.cell_range("e0_0") == range(34, 34 + 34)


@pytest.mark.parametrize("change, message", [
    ({"k": 16}, "k mismatch: the job's hosts send 16 values per packet, c0 runs INA_K=8"),
    ({"pool_size": 2000}, "a pool of 2000 slots needs 4002 cells, c0 has 2048"),
    ({"pool_size": 0}, "pool size 0 outside 1..65535"),
    ({"job_id": 1024}, r"job id must be in 0..1023"),
])
def test_jobs_that_do_not_fit_are_refused(change, message) -> None:
    topology = fat_tree(4)
    fields = {"job_id": 1, "workers": hosts_of(topology), "k": K, "pool_size": 16, **change}
    job = TreeJob(**fields)
    shape = tree_shape(topology, job.job_id, job.workers)
    with pytest.raises(JobRefused, match=message):
        check_tree_job(topology, {s: PROGRAM for s in shape.order}, job, shape)


def test_member_and_worker_limits() -> None:
    topology = star(33)
    shape = tree_shape(topology, 1, hosts_of(topology))
    with pytest.raises(JobRefused, match="s1 would aggregate 33 members; its worker bitmap "
                                         "holds 32"):
        check_tree_job(topology, {"s1": PROGRAM}, TreeJob(1, hosts_of(topology), K, 4), shape)
    big = star(256)
    with pytest.raises(JobRefused, match="s1 would aggregate 256 members"):
        check_tree_job(big, {"s1": PROGRAM}, TreeJob(1, hosts_of(big), K, 4),
                       tree_shape(big, 1, hosts_of(big)))
    # the whole tree counts up to 65535 workers (RESULT's count is 16 bits)
    names = tuple(f"h{i}" for i in range(1, 65537))
    with pytest.raises(JobRefused, match="65536 workers; a tree counts at most 65535"):
        check_tree_job(big, {"s1": PROGRAM}, TreeJob(1, names, K, 4), shape)


def test_bad_workers_and_roots_are_refused() -> None:
    topology = leaf_spine(2, 2, 2)
    with pytest.raises(JobRefused, match="worker 'h9' is not a host"):
        tree_shape(topology, 1, ("h1", "h9"))
    with pytest.raises(JobRefused, match="listed twice"):
        tree_shape(topology, 1, ("h1", "h1"))
    with pytest.raises(JobRefused, match="no switch named 'x'"):
        tree_shape(topology, 1, ("h1",), "x")


# -- over P4Runtime -------------------------------------------------------------------------------

@pytest.fixture
def network():
    """leaf_spine(2, 2, 2) of real switch runtimes with P4Runtime servers, ina.p4 and routes."""
    topology = leaf_spine(2, 2, 2)
    net = SimNetwork(topology, seed=0)
    control_topology = net.start_servers()
    try:
        with Fabric(control_topology, timeout=10.0) as fabric:
            program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(K)),))
            control.push_program(fabric, program)
            control.install_host_routes(fabric)
            yield net, fabric, TreeJobs(control_topology, fabric.clients)
    finally:
        net.stop_servers()


def deliver(net: SimNetwork, sender: str, frame: bytes) -> dict[str, list[bytes]]:
    """Carry `frame` from host `sender` through the switches; what each host receives."""
    topology = net.topology
    received: dict[str, list[bytes]] = {}
    link = topology.host_link(sender)
    pending = [(link.node, link.remote_port, frame)]
    while pending:
        switch, port, data = pending.pop(0)
        for out_port, out in net.switches[switch].switch.receive(port, data):
            peer = next(n for n in topology.neighbours(switch) if n.port == out_port)
            if topology.is_switch(peer.node):
                pending.append((peer.node, peer.remote_port, out))
            else:
                received.setdefault(peer.node, []).append(out)
    return received


def contribution(net, plan, host: str, values) -> bytes:
    endpoint = next(e for e in plan.endpoints if e.host == host)
    me = net.topology.host(host)
    payload = encode(InaPacket(kind=Kind.CONTRIB, job=plan.job.job_id, worker=endpoint.worker_id,
                               slot=0, chunk=0, values=np.asarray(values, dtype=np.int32)))
    return build_udp_frame(UdpFrame(src_mac=me.mac, dst_mac="02:53:00:00:00:00", src_ip=me.ip,
                                    dst_ip=endpoint.address, src_port=INA_PORT,
                                    dst_port=INA_PORT, payload=payload))


def test_two_jobs_installed_aggregate_in_their_own_cells(network) -> None:
    net, fabric, trees = network
    first = trees.install(TreeJob(1, ("h1", "h3"), K, 8))
    second = trees.install(TreeJob(2, ("h2", "h4"), K, 8, root="sp1"))
    assert first.shape.root == second.shape.root == "sp1"
    third = trees.install(TreeJob(3, ("h1", "h4"), K, 4))      # no root given: the idle spine
    assert third.shape.root == "sp2"
    for switch in first.nodes:
        a, b = first.cell_range(switch), second.cell_range(switch)
        assert a.stop <= b.start or b.stop <= a.start
        assert first.nodes[switch].mgid != second.nodes[switch].mgid
    # job 1, slot 0 version 0: h1 and h3 contribute; the partials meet at sp1; results come down
    got = {}
    for host, value in (("h1", 5), ("h3", -2)):
        for receiver, frames in deliver(net, host, contribution(net, first, host,
                                                                [value] * K)).items():
            got.setdefault(receiver, []).extend(frames)
    assert sorted(got) == ["h1", "h3"]
    for host, frames in got.items():
        (frame,) = frames
        udp = parse_udp_frame(frame)
        result = decode(udp.payload, K)
        assert result.kind == Kind.RESULT and list(result.values) == [3] * K
        assert result.count == 2 and udp.dst_ip == net.topology.host(host).ip
    # the registers, read through the controller: job 1's cells hold the sums, job 2's are idle
    leaf = trees.slot_state(1, "l1", 0, 0)
    assert leaf.values == (3,) * K and leaf.complete and leaf.seen == 0b1
    root = trees.slot_state(1, "sp1", 0, 0)
    assert root.values == (3,) * K and root.seen == 0b11 and root.pending == 0
    for switch in second.nodes:
        for cell in second.cell_range(switch):
            state = trees.cell_state(2, switch, cell)
            assert state.seen == 0 and state.values == (0,) * K
    program = InaProgram.from_p4info(fabric["l1"].index)
    outside = max(first.cell_range("l1").stop, second.cell_range("l1").stop)
    assert read_cell(fabric["l1"], program, outside).seen == 0
    counters = trees.counters(1)
    assert counters["l1"]["ina_contributions"] == 1 and counters["l1"]["ina_partials_up"] == 1
    assert counters["sp1"]["ina_contributions"] == 2
    assert counters["sp1"]["ina_results_multicast"] == 1
    assert all(c["ina_contributions"] == 0 for c in trees.counters(2).values())


def test_refusals_change_nothing_and_removal_frees_the_cells(network) -> None:
    net, fabric, trees = network
    plan = trees.install(TreeJob(1, ("h1", "h3"), K, 500))
    before = {s: len(fabric[s].read_table("ina_jobs")) for s in plan.nodes}
    with pytest.raises(JobRefused, match=r"job 2: refused: on l1: cells exhausted: the job needs "
                                         r"1202 contiguous cells, 1046 of 2048 are free"):
        trees.install(TreeJob(2, ("h2", "h4"), K, 600))
    with pytest.raises(JobRefused, match="job 1: refused: a job with this id already runs"):
        trees.install(TreeJob(1, ("h2", "h4"), K, 4))
    with pytest.raises(JobRefused, match="k mismatch"):
        trees.install(TreeJob(3, ("h2", "h4"), 16, 4))
    assert {s: len(fabric[s].read_table("ina_jobs")) for s in plan.nodes} == before
    assert fabric["sp1"].read_multicast_group(plan.nodes["sp1"].mgid) == [(1, 0), (2, 1)]
    trees.remove(1)
    assert all(len(fabric[s].read_table("ina_jobs")) == 0 for s in plan.nodes)
    assert len(fabric["l1"].read_table("ina_workers")) == 0
    again = trees.install(TreeJob(2, ("h2", "h4"), K, 600))
    assert again.nodes["sp1"].base == 0


def test_a_new_controller_learns_the_cells_in_use_from_the_switches(network) -> None:
    net, fabric, trees = network
    first = trees.install(TreeJob(1, ("h1", "h3"), K, 8))
    restarted = TreeJobs(trees.topology, fabric.clients)
    second = restarted.install(TreeJob(2, ("h2", "h4"), K, 8))
    assert second.nodes["l1"].base == first.cell_range("l1").stop
    assert second.nodes["l1"].mgid != first.nodes["l1"].mgid


def test_flat_and_tree_jobs_on_the_same_switch_never_share_cells_or_groups(network) -> None:
    net, fabric, trees = network
    flat = InaJobs(trees.topology, fabric.clients).install(1, ("h1", "h2"), "l1", k=K,
                                                            pool_size=8)
    with pytest.raises(JobRefused, match="job 1: refused: a job with this id already runs on l1"):
        trees.install(TreeJob(1, ("h1", "h3"), K, 8))
    tree = trees.install(TreeJob(2, ("h1", "h3"), K, 8))
    assert tree.nodes["l1"].base == flat.base + flat.job.cells
    assert tree.nodes["l1"].mgid == flat.mgid + 1
    # both read the switch the same way: a flat controller started now sees the tree's cells
    later = InaJobs(trees.topology, fabric.clients).install(3, ("h2",), "l1", k=K, pool_size=1)
    assert later.base == tree.cell_range("l1").stop and later.mgid == flat.mgid + 2


def test_a_write_that_fails_half_way_is_rolled_back(network) -> None:
    net, fabric, trees = network
    # an entry the planner cannot know about makes l2's batch fail after sp1's and l1's landed
    fabric["l2"].add_entry("ina_workers", {"hdr.ina.job": 9, "hdr.ina.worker": 0},
                           "ina_worker_port", {"port": 1})
    tables = ("ina_jobs", "ina_workers", "ina_result_addresses", "ina_aggregator_addresses",
              "ipv4_lpm")
    before = {(s, t): len(fabric[s].read_table(t)) for s in ("sp1", "l1", "l2") for t in tables}
    with P4RuntimeErrorExpected("ALREADY_EXISTS"):
        trees.install(TreeJob(9, ("h1", "h3"), K, 8))
    after = {(s, t): len(fabric[s].read_table(t)) for s in ("sp1", "l1", "l2") for t in tables}
    assert after == before
    for switch in ("sp1", "l1", "l2"):
        with pytest.raises(P4RuntimeError, match="NOT_FOUND: .*no such group"):
            fabric[switch].read_multicast_group(1024)
    assert trees.plans == {}
    fabric["l2"].write([(DELETE, entity_of(fabric["l2"]))])
    plan = trees.install(TreeJob(9, ("h1", "h3"), K, 8))
    assert plan.nodes["l2"].base == 0 and plan.nodes["sp1"].mgid == 1024


class P4RuntimeErrorExpected:
    def __init__(self, code: str):
        self.code = code

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _tb) -> bool:
        assert isinstance(error, P4RuntimeError), error
        assert any(u.code == self.code for u in error.updates) or error.code == self.code
        return True


def entity_of(client):
    from p4.v1 import p4runtime_pb2

    from controller import entities
    entry = entities.table_entry(client.index, "ina_workers",
                                 {"hdr.ina.job": 9, "hdr.ina.worker": 0}, "ina_worker_port",
                                 {"port": 1})
    return p4runtime_pb2.Entity(table_entry=entry)
