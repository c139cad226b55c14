"""Agent processes in network namespaces, real kernel UDP/TCP, ina.p4 on raw sockets (root).

Each worker is `python -m hosts.agent` in its own namespace behind a veth pair; the switch is
ina.p4 in this process, driven by p4switch's packet driver on the veths' root-namespace ends.
Hosts reach the aggregator address (and, for the ring, each other) through static neighbour
entries pointing at the switch's MAC, as the orchestration must set them up; the switch routes
worker-to-worker traffic with /32 routes. Offloads are off (a raw-socket switch needs complete
checksums). This is what a Mininet run does, without Mininet.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from p4switch.driver import PacketDriver
from p4switch.ports.forwarding import Forwarder
from p4switch.ports.rawsock import RawSocketPort
from p4switch.runtime import LpmKey
from tests.hosts.inproc import (AGGREGATOR_IP, SWITCH_MAC, action_params, ina_switch, ip_int,
                                mac_int, worker_ip, worker_mac)

pytestmark = pytest.mark.root
ROOT = Path(__file__).resolve().parents[2]
N, K, JOB = 3, 8, 9


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


class Namespaces:
    """One namespace per worker, each with a veth pair to the root namespace."""

    def __init__(self, n: int):
        tag = f"ih{os.getpid() % 100000}"
        self.names = [f"{tag}w{w}" for w in range(n)]
        self.switch_ends = [f"{tag}s{w}" for w in range(n)]
        self.host_ends = [f"{tag}h{w}" for w in range(n)]
        try:
            for w in range(n):
                self._add(w, n)
        except BaseException:
            self.close()
            raise

    def _add(self, w: int, n: int) -> None:
        ns, sw_end, host_end = self.names[w], self.switch_ends[w], self.host_ends[w]
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", sw_end, "type", "veth", "peer", "name", host_end)
        sh("ip", "link", "set", host_end, "netns", ns)
        inside = ("ip", "netns", "exec", ns)
        sh(*inside, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh(*inside, "ip", "link", "set", host_end, "address", worker_mac(w))
        sh(*inside, "ip", "addr", "add", f"{worker_ip(w)}/24", "dev", host_end)
        sh(*inside, "ethtool", "-K", host_end, "tx", "off", "rx", "off")
        sh(*inside, "ip", "link", "set", host_end, "up")
        sh(*inside, "ip", "link", "set", "lo", "up")
        for other in [AGGREGATOR_IP] + [worker_ip(p) for p in range(n) if p != w]:
            sh(*inside, "ip", "neigh", "replace", other, "lladdr", SWITCH_MAC, "dev", host_end,
               "nud", "permanent")
        sh("sysctl", "-qw", f"net.ipv6.conf.{sw_end}.disable_ipv6=1")
        sh("ethtool", "-K", sw_end, "tx", "off", "rx", "off")
        sh("ip", "link", "set", sw_end, "up")

    @contextlib.contextmanager
    def serving(self, switch):
        """`switch` on the veths' root ends (port w + 1: worker w), moved by a PacketDriver
        thread until the block ends; then the driver and its ports are closed."""
        ports = [RawSocketPort(w + 1, end) for w, end in enumerate(self.switch_ends)]
        driver = PacketDriver(Forwarder(switch, [p.port for p in ports]), ports)
        thread = threading.Thread(target=driver.run, daemon=True)
        thread.start()
        try:
            yield
        finally:
            driver.stop()
            thread.join(10)
            driver.close()
            for port in ports:
                port.close()

    def close(self) -> None:
        for ns in self.names:       # deleting a namespace deletes its veth end and the peer
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def network():
    nets = Namespaces(N)
    sw = ina_switch(K, job=JOB, n=N, pool_size=8)
    for w in range(N):
        sw.table_add("ipv4_lpm", [LpmKey(ip_int(worker_ip(w)), 32)], "ipv4_forward",
                     action_params(sw, "ipv4_forward", dstAddr=mac_int(worker_mac(w)),
                                   port=w + 1))
    try:
        with nets.serving(sw):
            yield nets, sw
    finally:
        nets.close()


def run_agents(nets: Namespaces, tmp_path: Path, base: dict) -> list[dict]:
    processes = []
    for w in range(N):
        config = tmp_path / f"w{w}.json"
        config.write_text(json.dumps({**base, "worker": w,
                                      "output": str(tmp_path / f"w{w}.out.json")}))
        processes.append(subprocess.Popen(
            ["ip", "netns", "exec", nets.names[w], sys.executable, "-m", "hosts.agent",
             "--config", str(config)], cwd=ROOT, stderr=subprocess.PIPE, text=True))
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    return [json.loads((tmp_path / f"w{w}.out.json").read_text()) for w in range(N)]


def test_ina_and_ring_agents_over_real_sockets(network, tmp_path: Path) -> None:
    nets, sw = network
    common = dict(job=JOB, n=N, seed=5, length=2000, calls=2, timeout=60)
    ina = run_agents(nets, tmp_path, {**common, "algo": "ina", "aggregator": AGGREGATOR_IP,
                                      "k": K, "pool_size": 8, "rto": 0.05})
    for record in ina:
        assert record["ok"] and record["correct"], record
        assert record["packets_sent"] - record["retransmissions"] == 2 * (1 + 250)
    first, _ = sw.counter_read("ina_contributions", JOB)
    assert first == 2 * N * (1 + 250)          # every contribution went through the switch
    ring = run_agents(nets, tmp_path, {**common, "algo": "ring",
                                       "peers": [f"{worker_ip(w)}:5555" for w in range(N)]})
    for record in ring:
        assert record["ok"] and record["correct"], record
        assert record["packets_sent"] == 2 * 2 * (N - 1)
