"""How a topology becomes Mininet data and switch command lines (no root: nothing is started)."""

from __future__ import annotations

import math

import pytest

from topologies.builders import linear, star
from topologies.mininet_net import NetworkError, mininet_topo, port_impairments
from topologies.mininet_switch import P4Switch, PortImpairment
from topologies.model import Direction, Topology


def test_star_becomes_hosts_switches_and_numbered_links():
    topo = mininet_topo(star(3, bw=20))
    assert topo.hosts() == ["h1", "h2", "h3"]
    assert topo.switches() == ["s1"]
    info = topo.nodeInfo("h2")
    assert (info["ip"], info["mac"]) == ("10.0.0.2/24", "02:00:0a:00:00:02")
    sw = topo.nodeInfo("s1")
    assert (sw["cls"], sw["device_id"], sw["grpc_port"]) == (P4Switch, 1, 20001)
    links = sorted((opts["node1"], opts["port1"], opts["node2"], opts["port2"], opts.get("bw"))
                   for _, _, opts in topo.links(withInfo=True))
    assert links == [("h1", 0, "s1", 1, 20), ("h2", 0, "s1", 2, 20), ("h3", 0, "s1", 3, 20)]


def test_host_link_impairments_land_on_the_switch_port():
    assert port_impairments(star(2, loss=10, delay_ms=3)) == {
        "s1": {1: PortImpairment(loss=0.1, delay_ms=6), 2: PortImpairment(loss=0.1, delay_ms=6)}}
    assert port_impairments(star(2)) == {"s1": {}}


def test_switch_to_switch_loss_is_split_over_both_ports():
    chain = linear(2, loss=19)
    s1_port = port_impairments(chain)["s1"][3]
    assert math.isclose(1 - (1 - s1_port.loss) ** 2, 0.19)
    assert s1_port.delay_ms == 0


def test_asymmetric_loss_is_refused_with_the_link_named():
    base = star(1)
    lossy = base.links[0].__class__(a=base.links[0].a, b=base.links[0].b,
                                    a_to_b=Direction(loss_percent=1), b_to_a=Direction())
    topo = Topology(hosts=base.hosts, switches=base.switches, links=[lossy])
    with pytest.raises(NetworkError, match=r"links\[0\] \(h1-s1\): loss differs"):
        port_impairments(topo)


def test_switch_command_line_for_inaemu():
    switch = P4Switch.__new__(P4Switch)        # no Mininet node: only the command is under test
    switch.name, switch.device_id, switch.grpc_port, switch.target = "s2", 2, 50002, "inaemu"
    switch.json_path, switch.run_dir, switch.trace, switch.pcap, switch.seed = None, None, False, False, 7
    switch.impairments = {1: PortImpairment(loss=0.05, delay_ms=2.5)}
    switch.switch_ports = lambda: {2: "s2-eth2", 1: "s2-eth1"}
    cmd = switch.command()
    assert cmd[1:] == ["switch", "--no-p4", "--device-id", "2", "--grpc-server-addr",
                       "127.0.0.1:50002", "-i", "1@s2-eth1", "-i", "2@s2-eth2",
                       "--loss", "1:0.05", "--delay-ms", "1:2.5", "--seed", "7"]


def test_every_switch_gets_its_own_loss_seed():
    topo = mininet_topo(linear(3), seed=5)
    seeds = [topo.nodeInfo(s)["seed"] for s in topo.switches()]
    assert len(set(seeds)) == 3
    assert seeds == [topo.nodeInfo(s)["seed"] for s in mininet_topo(linear(3), seed=5).switches()]
    assert seeds != [mininet_topo(linear(3), seed=6).nodeInfo(s)["seed"] for s in topo.switches()]


def test_bmv2_target_is_checked_before_anything_starts(monkeypatch, tmp_path):
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.delenv("INAEMU_P4REF", raising=False)
    monkeypatch.setattr("topologies.mininet_switch.REFERENCE_ROOT", str(tmp_path))
    with pytest.raises(ValueError, match="simple_switch_grpc is not on PATH nor in"):
        P4Switch("s1", device_id=1, grpc_port=50001, target="bmv2")
    with pytest.raises(ValueError, match="target must be one of inaemu, bmv2"):
        P4Switch("s1", device_id=1, grpc_port=50001, target="tofino")
