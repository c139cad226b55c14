"""Two switches in a chain: routes from the topology carry traffic across the switch-to-switch
link, every switch decrements the TTL once, and shaped (htb) links still pass traffic."""

from __future__ import annotations

import re

import pytest

from controller.fabric import Fabric
from mn_helpers import relabel
from test_star_l3 import compile_l3_forward
from topologies.builders import leaf_spine, linear
from topologies.mininet_net import MininetNetwork

pytestmark = pytest.mark.root


def test_routes_span_two_switches(tmp_path):
    p4info, bmv2_json = compile_l3_forward(tmp_path)
    topology = relabel(linear(2, hosts_per_switch=2, bw=50), "u", grpc_base=20780)
    with MininetNetwork(topology) as net:
        with Fabric(topology, timeout=20) as fabric:
            fabric.push_pipeline(p4info, bmv2_json)
            assert fabric.install_routes() == 8
            routes = {e.match["hdr.ipv4.dstAddr"][0] & 0xFF: e.params["port"]
                      for e in fabric["us2"].read_table("ipv4_lpm")}
            assert routes == {1: 3, 2: 3, 3: 1, 4: 2}
            across = net.host("uh1").cmd("ping -c 2 -i 0.2 -W 2 10.0.0.4")
            local = net.host("uh3").cmd("ping -c 2 -i 0.2 -W 2 10.0.0.4")
            back = net.host("uh4").cmd("ping -c 2 -i 0.2 -W 2 10.0.0.2")
            counters = fabric["us1"].read_counter("tx_port_counter")
    for out in (across, local, back):
        assert " 0% packet loss" in out, out
    # replies come back through both switches (64 - 2), or through one on the same switch
    assert set(re.findall(r"ttl=(\d+)", across)) == {"62"}
    assert set(re.findall(r"ttl=(\d+)", local)) == {"63"}
    # us1 reaches us2 through its port 4: uh1's 2 requests and uh2's 2 replies to uh4 left there;
    # uh4's requests went out on port 2 (to uh2) and uh4's replies on port 1 (to uh1)
    assert (counters[4][0], counters[1][0], counters[2][0], counters[3][0]) == (4, 2, 2, 0)


def test_routes_on_a_leaf_spine_with_cycles(tmp_path):
    """Leaf-spine has equal-cost paths and cycles: with ECMP turned off, the deterministic
    single-path /32 routes must not loop and all take the lowest-port spine."""
    p4info, bmv2_json = compile_l3_forward(tmp_path)
    topology = relabel(leaf_spine(2, 2, 1), "v", grpc_base=20790)
    with MininetNetwork(topology) as net:
        with Fabric(topology, timeout=20) as fabric:
            fabric.push_pipeline(p4info, bmv2_json)
            assert fabric.install_routes(ecmp=False) == 8
            out = net.host("vh1").cmd("ping -c 2 -i 0.2 -W 2 10.0.0.2")
            spine_rx = {name: fabric[name].read_counter("rx_port_counter")
                        for name in ("vsp1", "vsp2")}
    assert " 0% packet loss" in out, out
    assert set(re.findall(r"ttl=(\d+)", out)) == {"61"}       # leaf, spine, leaf
    # both directions took the lowest-port spine, sp1; sp2 saw nothing
    assert sum(p for p, _ in spine_rx["vsp1"].values()) == 4
    assert sum(p for p, _ in spine_rx["vsp2"].values()) == 0
