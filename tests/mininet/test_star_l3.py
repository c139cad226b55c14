"""A Mininet star of three hosts around one `inaemu switch`, configured only over P4Runtime.

The switch starts with no program; the controller library pushes `p4src/l3_forward.p4` (compiled
at test time by `inaemu compile`) and the /32 routes computed from the topology. Then ping, a TCP
transfer (checked byte for byte) and a UDP transfer (iperf3) must get through, and the program's per-port counters, read back over
P4Runtime, must show exactly the packets that were sent. Names and gRPC ports are unusual so the
test cannot collide with another Mininet run on the same machine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.fabric import Fabric
from mn_helpers import tcp_transfer
from topologies.builders import star
from topologies.mininet_net import MininetNetwork
from mn_helpers import relabel

pytestmark = pytest.mark.root

PROJECT = Path(__file__).resolve().parents[2]
INAEMU = str(Path(sys.executable).with_name("inaemu"))


def compile_l3_forward(out_dir: Path) -> tuple[Path, Path]:
    bmv2_json, p4info = out_dir / "l3_forward.json", out_dir / "l3_forward.p4info.txtpb"
    result = subprocess.run([INAEMU, "compile", str(PROJECT / "p4src" / "l3_forward.p4"),
                             "-o", str(bmv2_json), "--p4runtime-files", str(p4info)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"inaemu compile failed:\n{result.stdout}\n{result.stderr}"
    return p4info, bmv2_json


@pytest.fixture(scope="module")
def network(tmp_path_factory):
    """The running star, its program pushed and routes installed; torn down after the module."""
    build = tmp_path_factory.mktemp("l3")
    p4info, bmv2_json = compile_l3_forward(build)
    topology = relabel(star(3), "t", grpc_base=20700)
    with MininetNetwork(topology, run_dir=str(build / "run"), seed=1) as net:
        with Fabric(topology, timeout=20) as fabric:
            fabric.push_pipeline(p4info, bmv2_json)
            assert fabric.install_routes() == 3
            yield net, fabric


def _rx_tx(fabric: Fabric, switch: str) -> tuple[dict, dict]:
    client = fabric[switch]
    return client.read_counter("rx_port_counter"), client.read_counter("tx_port_counter")


def _delta(after: dict, before: dict, port: int) -> int:
    return after.get(port, (0, 0))[0] - before.get(port, (0, 0))[0]


def test_ping_between_every_pair_and_counters_match(network):
    net, fabric = network
    rx0, tx0 = _rx_tx(fabric, "ts1")
    for src, dst_ip in (("th1", "10.0.0.2"), ("th2", "10.0.0.3"), ("th3", "10.0.0.1")):
        out = net.host(src).cmd(f"ping -c 3 -i 0.2 -W 2 {dst_ip}")
        assert " 0% packet loss" in out, out
    rx1, tx1 = _rx_tx(fabric, "ts1")
    # each host sent 3 requests and 3 replies, and received as many: 6 in, 6 out per port
    assert [_delta(rx1, rx0, p) for p in (1, 2, 3)] == [6, 6, 6]
    assert [_delta(tx1, tx0, p) for p in (1, 2, 3)] == [6, 6, 6]
    entries = fabric["ts1"].read_table("ipv4_lpm")
    assert sorted((e.match["hdr.ipv4.dstAddr"], e.params["port"]) for e in entries) == [
        ((0x0A000001, 32), 1), ((0x0A000002, 32), 2), ((0x0A000003, 32), 3)]


def test_tcp_transfer_arrives_intact(network, tmp_path):
    """4 MiB over TCP through the switch; the receiver's byte count and SHA-256 must match."""
    net, _ = network
    size = 4 * 1024 * 1024
    received, expected, rate = tcp_transfer(net, "th1", "th2", "10.0.0.2", 5301, size, tmp_path)
    assert received == expected, rate
    print(f"TCP through inaemu switch: {rate.strip()}")


def test_udp_transfer_with_iperf3(network):
    net, fabric = network
    rx0, _ = _rx_tx(fabric, "ts1")
    server = net.host("th3").popen(["iperf3", "-s", "-1", "-p", "5302"], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
    try:
        _wait_listening(net.host("th3"), 5302)
        out = net.host("th1").cmd("iperf3 -c 10.0.0.3 -p 5302 -u -b 4M -l 1000 -n 500K -J")
        report = json.loads(out[out.index("{"):])
        assert "error" not in report, report.get("error")
        udp = report["end"]["sum"]
        assert udp["packets"] >= 500
        # a software switch may drop a few datagrams under load, never most of them
        assert udp["lost_percent"] < 10, udp
    finally:
        server.terminate()
        server.wait(timeout=10)
    rx1, _ = _rx_tx(fabric, "ts1")
    assert _delta(rx1, rx0, 1) >= udp["packets"]


def _wait_listening(host, port: int) -> None:
    for _ in range(100):
        if re.search(rf":{port}\b", host.cmd(f"ss -ltnH sport = :{port}")):
            return
        host.cmd("sleep 0.05")
    raise AssertionError(f"nothing listens on {host.name}:{port}")


def test_arp_flooding_through_multicast_groups(network):
    """With flood groups written over P4Runtime, a host without a static entry resolves by ARP."""
    net, fabric = network
    assert fabric.install_flooding() == 3
    assert sorted(fabric["ts1"].read_multicast_group(1)) == [(2, 0), (3, 0)]
    h1 = net.host("th1")
    h1.cmd("ip neigh del 10.0.0.3 dev th1-eth0")
    try:
        out = h1.cmd("ping -c 2 -i 0.2 -W 2 10.0.0.3")
        assert " 0% packet loss" in out, out
        assert "02:00:0a:00:00:03" in h1.cmd("ip neigh show 10.0.0.3")
    finally:
        h1.cmd("ip neigh replace 10.0.0.3 lladdr 02:00:0a:00:00:03 dev th1-eth0 nud permanent")


def test_controller_cli_reports_counters_and_refused_updates(network, tmp_path):
    """`inaemu controller` as a second controller (higher election id): it adopts the running
    program, reads counters, and reports each route the switch refuses as already present."""
    net, _ = network
    net.topology.save(tmp_path / "topo.json")
    base = [INAEMU, "controller", "--topology", str(tmp_path / "topo.json"), "--election-id", "9"]
    read = subprocess.run(base + ["--read-counters", "rx_port_counter"], capture_output=True,
                          text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert re.search(r"controller: ts1 rx_port_counter\[1\]: \d+ packets", read.stdout)
    again = subprocess.run(base + ["--routes"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 1
    assert again.stderr.count("ALREADY_EXISTS") == 3, again.stderr
    assert "(route 10.0.0.2/32 -> port 2)" in again.stderr
