"""Helpers shared by the Mininet tests."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import subprocess
import sys
from pathlib import Path

from topologies.model import Endpoint, Topology


def relabel(topology: Topology, tag: str, grpc_base: int) -> Topology:
    """The same topology with host `hN` -> `<tag>hN`, switch `sN` -> `<tag>sN`, gRPC base moved."""
    rename = {n.name: f"{tag}{n.name}" for n in (*topology.hosts, *topology.switches)}
    hosts = [dataclasses.replace(h, name=rename[h.name]) for h in topology.hosts]
    switches = [dataclasses.replace(s, name=rename[s.name], grpc_port=grpc_base + s.device_id)
                for s in topology.switches]
    links = [dataclasses.replace(l, a=Endpoint(node=rename[l.a.node], port=l.a.port),
                                 b=Endpoint(node=rename[l.b.node], port=l.b.port))
             for l in topology.links]
    return Topology(name=topology.name, hosts=hosts, switches=switches, links=links)


TCP_SINK = """
import hashlib, socket, sys
listener = socket.create_server(("0.0.0.0", int(sys.argv[1])))
print("listening", flush=True)
conn, _ = listener.accept()
digest, total = hashlib.sha256(), 0
while chunk := conn.recv(65536):
    digest.update(chunk)
    total += len(chunk)
print(total, digest.hexdigest(), flush=True)
"""

TCP_SOURCE = """
import random, socket, sys, time
data = random.Random(7).randbytes(int(sys.argv[3]))
started = time.monotonic()
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60) as conn:
    conn.sendall(data)
    conn.shutdown(socket.SHUT_WR)
    conn.recv(1)
print(f"{len(data) * 8 / (time.monotonic() - started) / 1e6:.1f} Mbit/s")
"""


def tcp_transfer(net, sender: str, receiver: str, receiver_ip: str, port: int, size: int,
                 tmp_path: Path) -> tuple[list[str], list[str], str]:
    """Send `size` seeded random bytes over TCP from one Mininet host to another.

    Returns (what the receiver counted: [bytes, sha256], what it should have counted, the
    sender's rate line)."""
    source = tmp_path / "tcp_source.py"
    source.write_text(TCP_SOURCE)
    sink = net.host(receiver).popen([sys.executable, "-c", TCP_SINK, str(port)],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert sink.stdout.readline().strip() == "listening"
        rate = net.host(sender).cmd(f"{sys.executable} {source} {receiver_ip} {port} {size}")
        received = sink.stdout.readline().split()
        sink.wait(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
    expected = [str(size), hashlib.sha256(random.Random(7).randbytes(size)).hexdigest()]
    return received, expected, rate
