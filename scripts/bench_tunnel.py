"""What a link between servers costs: two hosts joined by a plain veth, then by the cluster's
SSH Ethernet tunnel (topologies/cluster.py), measured in one run. Root; run under the Mininet lock.

    flock /work/coord/mininet.lock .venv/bin/python scripts/bench_tunnel.py \
        --server 127.0.0.2 --ssh-config FILE [--seconds 3]

Prints, per link kind: ping RTT (mean of 20), iperf3 TCP throughput, and the tunnel/veth ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mininet.examples.cluster import MininetCluster  # noqa: E402

from topologies.cluster import ClusterHost, TunnelLink, server_address  # noqa: E402


def measure(net, seconds: float) -> dict:
    h1, h2 = net.get("bh1"), net.get("bh2")
    ping = h1.cmd(f"ping -c 20 -i 0.05 -q {h2.IP()}")
    rtt = float(re.search(r"= [\d.]+/([\d.]+)/", ping).group(1))
    server = h2.popen(["iperf3", "-s", "-1", "-J"])
    time.sleep(1.0)
    client = h1.cmd(f"iperf3 -c {h2.IP()} -t {seconds:g} -J")
    server.wait(timeout=60)
    bits = json.loads(client)["end"]["sum_received"]["bits_per_second"]
    return {"rtt_ms": rtt, "tcp_mbps": bits / 1e6}


def run(servers: list[str], ssh_config: str | None, seconds: float) -> dict:
    net = MininetCluster(servers=servers, serverIP={s: server_address(s) for s in servers},
                         user="root", precheck=False, controller=None, build=False,
                         autoSetMacs=False, autoStaticArp=True, waitConnected=False)
    net.addHost("bh1", cls=ClusterHost, server=servers[0], serverIP=server_address(servers[0]),
                user="root", ssh_config=ssh_config, ip="10.77.0.1/24")
    net.addHost("bh2", cls=ClusterHost, server=servers[-1], serverIP=server_address(servers[-1]),
                user="root", ssh_config=ssh_config, ip="10.77.0.2/24")
    net.addLink("bh1", "bh2", cls=TunnelLink, ssh_config=ssh_config)
    try:
        net.build()
        for host in net.hosts:
            host.cmd("ethtool -K %s tso off gso off gro off >/dev/null 2>&1" % host.defaultIntf())
        return measure(net, seconds)
    finally:
        net.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True, help="the second server (e.g. 127.0.0.2)")
    p.add_argument("--ssh-config", default=None)
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench_tunnel: needs root (Mininet)", file=sys.stderr)
        return 2
    os.environ.setdefault("HOME", "/root")
    load = os.getloadavg()[0]
    veth = run(["localhost"], args.ssh_config, args.seconds)
    tunnel = run(["localhost", args.server], args.ssh_config, args.seconds)
    for name, r in (("veth", veth), ("ssh tunnel", tunnel)):
        print(f"{name:11s} RTT {r['rtt_ms']:.3f} ms, TCP {r['tcp_mbps']:.0f} Mbit/s")
    print(f"tunnel / veth: RTT x{tunnel['rtt_ms'] / veth['rtt_ms']:.1f}, throughput "
          f"x{tunnel['tcp_mbps'] / veth['tcp_mbps']:.3f} (load average {load:.2f} -> "
          f"{os.getloadavg()[0]:.2f}, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
