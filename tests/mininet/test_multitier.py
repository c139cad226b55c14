"""Multi-tier fabrics on Mininet, configured only over P4Runtime: a 2x2 leaf-spine with two hosts
per leaf and a k=4 fat-tree (16 hosts, 20 switches) of `inaemu switch` processes running
p4src/l3_forward.p4, with the controller's shortest-path routes and ECMP groups.

Checked: pings between pairs chosen to cross every tier (the TTL says how many switches routed
them), a TCP transfer across the fat-tree's core (byte count and SHA-256), and ECMP itself: each
UDP flow between two leaves leaves its leaf on exactly the spine crc16(5-tuple) mod 2 names, and
several concurrent TCP flows load both spines (per-port counters read over P4Runtime).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from controller.fabric import Fabric
from mn_helpers import relabel, tcp_transfer
from test_star_l3 import compile_l3_forward
from tests.ina.packets import ecmp_member, ip
from topologies.builders import fat_tree, leaf_spine
from topologies.mininet_net import MininetNetwork

pytestmark = pytest.mark.root

UPLINKS = (3, 4)     # ports of leaf l1 towards sp1 and sp2 (hosts take ports 1 and 2)

UDP_SOURCE = """
import socket, sys
dst, dport, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for sport in (int(p) for p in sys.argv[4:]):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", sport))
        for i in range(count):
            s.sendto(b"%d/%d" % (sport, i), (dst, dport))
"""

TCP_FLOWS = """
import random, socket, sys, threading
dst, dport, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def flow(sport):
    with socket.socket() as s:
        s.bind(("0.0.0.0", sport))
        s.settimeout(60)
        s.connect((dst, dport))
        s.sendall(random.Random(sport).randbytes(size))
threads = [threading.Thread(target=flow, args=(int(p),)) for p in sys.argv[4:]]
for t in threads: t.start()
for t in threads: t.join()
print("sent", len(threads), flush=True)
"""

TCP_MANY_SINK = """
import socket, sys, threading
listener = socket.create_server(("0.0.0.0", int(sys.argv[1])))
print("listening", flush=True)
totals = []
def drain(conn):
    n = 0
    while chunk := conn.recv(65536):
        n += len(chunk)
    totals.append(n)
threads = []
for _ in range(int(sys.argv[2])):
    conn, _ = listener.accept()
    threads.append(threading.Thread(target=drain, args=(conn,)))
    threads[-1].start()
for t in threads: t.join()
print(" ".join(str(n) for n in sorted(totals)), flush=True)
"""


def _ping(net, src: str, dst_ip: str) -> str:
    return net.host(src).cmd(f"ping -c 2 -i 0.2 -W 2 {dst_ip}")


def _ttls(out: str) -> set[str]:
    return set(re.findall(r"ttl=(\d+)", out))


def _uplink_packets(fabric: Fabric, leaf: str) -> list[int]:
    cells = fabric[leaf].read_counter("tx_port_counter")
    return [cells.get(port, (0, 0))[0] for port in UPLINKS]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return compile_l3_forward(tmp_path_factory.mktemp("multitier"))


@pytest.fixture(scope="module")
def clos(build):
    """2 leaves x 2 spines x 2 hosts, routes with ECMP groups on the leaves."""
    p4info, bmv2_json = build
    topology = relabel(leaf_spine(2, 2, 2), "w", grpc_base=20850)
    with MininetNetwork(topology) as net:
        with Fabric(topology, timeout=20) as fabric:
            fabric.push_pipeline(p4info, bmv2_json)
            assert fabric.install_routes() == 16
            yield net, fabric


def test_leaf_spine_pings_within_and_across_leaves(clos):
    net, fabric = clos
    assert len(fabric["wl1"].read_table("ecmp_nhop")) == 2        # one group, both spines
    same_leaf = _ping(net, "wh1", "10.0.0.2")
    across = [_ping(net, "wh1", "10.0.0.3"), _ping(net, "wh4", "10.0.0.1"),
              _ping(net, "wh2", "10.0.0.4")]
    for out in (same_leaf, *across):
        assert " 0% packet loss" in out, out
    assert _ttls(same_leaf) == {"63"}                 # one switch each way
    for out in across:
        assert _ttls(out) == {"61"}                   # leaf, spine, leaf


def test_each_udp_flow_takes_the_spine_its_hash_names(clos, tmp_path):
    net, fabric = clos
    source = tmp_path / "udp_source.py"
    source.write_text(UDP_SOURCE)
    count, chosen = 5, []
    for sport in range(41000, 41008):
        before = _uplink_packets(fabric, "wl1")
        net.host("wh1").cmd(f"{sys.executable} {source} 10.0.0.3 9 {count} {sport}")
        after = _uplink_packets(fabric, "wl1")
        moved = [a - b for a, b in zip(after, before)]
        spine = ecmp_member(ip("10.0.0.1"), ip("10.0.0.3"), 17, sport, 9, 2)
        assert moved[spine] == count and moved[1 - spine] == 0, (sport, moved)
        chosen.append(spine)
    assert set(chosen) == {0, 1}, chosen


def test_concurrent_tcp_flows_load_both_spines(clos, tmp_path):
    net, fabric = clos
    # two source ports hashed onto each spine, picked from the same hash the switch computes
    by_spine: dict[int, list[int]] = {0: [], 1: []}
    for sport in range(42000, 42100):
        spine = ecmp_member(ip("10.0.0.2"), ip("10.0.0.4"), 6, sport, 5401, 2)
        if len(by_spine[spine]) < 2:
            by_spine[spine].append(sport)
    ports = by_spine[0] + by_spine[1]
    size = 512 * 1024
    (tmp_path / "flows.py").write_text(TCP_FLOWS)
    before = _uplink_packets(fabric, "wl1")
    sink = net.host("wh4").popen([sys.executable, "-c", TCP_MANY_SINK, "5401", str(len(ports))],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert sink.stdout.readline().strip() == "listening"
        sent = net.host("wh2").cmd(
            f"{sys.executable} {tmp_path / 'flows.py'} 10.0.0.4 5401 {size} "
            + " ".join(map(str, ports)))
        totals = sink.stdout.readline().split()
        sink.wait(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
    assert totals == [str(size)] * len(ports), sent
    moved = [a - b for a, b in zip(_uplink_packets(fabric, "wl1"), before)]
    # each spine carried two flows' data: at least size / 1500 segments per flow
    assert all(m >= 2 * size // 1500 for m in moved), moved


@pytest.fixture(scope="module")
def fat(build):
    """k = 4: 16 hosts, 8 edge, 8 aggregation and 4 core switches."""
    p4info, bmv2_json = build
    topology = relabel(fat_tree(4), "f", grpc_base=20900)
    with MininetNetwork(topology) as net:
        with Fabric(topology, timeout=30) as fabric:
            fabric.push_pipeline(p4info, bmv2_json)
            assert fabric.install_routes() == 16 * 20
            yield net, fabric


def test_fat_tree_pings_across_every_tier(fat):
    net, _ = fat
    cases = {                                  # (source, destination): switches on the way
        ("fh1", "10.0.0.2"): 1,                # same edge switch
        ("fh1", "10.0.0.3"): 3,                # same pod: edge, aggregation, edge
        ("fh1", "10.0.0.16"): 5,               # pod 0 to pod 3 through a core
        ("fh9", "10.0.0.5"): 5,                # pod 2 to pod 1
        ("fh14", "10.0.0.13"): 1,
    }
    for (src, dst), switches in cases.items():
        out = _ping(net, src, dst)
        assert " 0% packet loss" in out, (src, dst, out)
        assert _ttls(out) == {str(64 - switches)}, (src, dst, out)


def test_fat_tree_tcp_transfer_across_the_core(fat, tmp_path):
    net, fabric = fat
    cores = [f"fc{j}" for j in range(4)]

    def core_packets() -> int:
        return sum(p for c in cores for p, _ in fabric[c].read_counter("rx_port_counter").values())

    before = core_packets()
    size = 2 * 1024 * 1024
    received, expected, rate = tcp_transfer(net, "fh1", "fh16", "10.0.0.16", 5402, size, tmp_path)
    assert received == expected, rate
    assert core_packets() - before >= size // 1500       # the data went through the core
    print(f"TCP across a k=4 fat-tree (5 inaemu switches each way): {rate.strip()}")
