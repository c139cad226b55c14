"""One fabric over two "servers" (topologies/cluster.py): the second server is this machine
reached over SSH at 127.0.0.2 (tests/cluster/sshd_server.py), so the remote paths really run:
node shells and agents over SSH, `inaemu switch` started remotely and stopped by its remote pid,
an SSH Ethernet tunnel between the servers, P4Runtime forwarded over SSH. Root; about 40 s."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from topologies.builders import linear
from topologies.model import Topology
from tests.cluster.sshd_server import SERVER, start_sshd
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.root
GRPC_BASE = 22240


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sshd = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield sshd
    sshd.stop()


def _moved(topology: Topology, base: int) -> Topology:
    switches = [dataclasses.replace(s, grpc_port=base + s.device_id) for s in topology.switches]
    return dataclasses.replace(topology, switches=switches)


def _interfaces() -> set[str]:
    return set(os.listdir("/sys/class/net"))


def test_two_servers_tunnel_remote_switch_and_p4runtime(server, tmp_path) -> None:
    from controller.fabric import Fabric
    from topologies.cluster import ClusterNetwork
    topology = _moved(linear(2, 1), GRPC_BASE)
    before = _interfaces()
    build = tmp_path / "build"
    build.mkdir()
    subprocess.run([sys.executable, "-m", "inaemu", "compile",
                    str(PROJECT_ROOT / "p4src" / "l3_forward.p4"), "-o", str(build / "l3.json"),
                    "--p4runtime-files", str(build / "l3.p4info.txtpb")], check=True,
                   capture_output=True)
    net = ClusterNetwork(topology, servers=["localhost", SERVER],
                         ssh_config=str(server.ssh_config), run_dir=str(tmp_path / "net"))
    assert net.placement == {"s1": "localhost", "h1": "localhost", "s2": SERVER, "h2": SERVER}
    with net:
        s2, h2 = net.switch("s2"), net.host("h2")
        assert s2.isRemote and h2.isRemote and not net.switch("s1").isRemote
        assert "ssh" in s2.process.args and s2.remote_pid() is not None
        assert f"grpc {SERVER}:{GRPC_BASE + 2}" in s2.output()      # bound on its server
        tunnel = [link for link in net.net.links if getattr(link, "tunnel", None)]
        assert len(tunnel) == 1 and {tunnel[0].intf1.name, tunnel[0].intf2.name} == \
            {f"s1-eth{topology.port_towards('s1', 's2')}",
             f"s2-eth{topology.port_towards('s2', 's1')}"}
        with Fabric(topology) as fabric:          # 127.0.0.1:port, forwarded to 127.0.0.2
            fabric.push_pipeline(build / "l3.p4info.txtpb", build / "l3.json")
            assert fabric.install_routes() == 4
        out = net.host("h1").cmd(f"ping -c 3 -i 0.2 -W 2 {topology.host('h2').ip}")
        assert " 0% packet loss" in out, out
        remote_pid = s2.remote_pid()
    with pytest.raises(ProcessLookupError):
        os.kill(remote_pid, 0)                    # the remote switch is gone
    left = {n for n in _interfaces() - before     # others' tests may add their own
            if n.startswith(("s1-", "s2-", "h1-", "h2-", "tap"))}
    assert not left                                # no tunnel, tap or veth left
    assert "rx 3" in (tmp_path / "net" / "s2.out").read_text()   # its output came back


def test_inaemu_run_over_two_servers(server, tmp_path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "inaemu", "run", "--servers", f"localhost,{SERVER}",
         "--ssh-config", str(server.ssh_config), "--topo", "leaf-spine", "--leaves", "2",
         "--spines", "1", "--hosts-per-leaf", "2", "--size-mib", "0.02", "--bw", "0",
         "--timeout", "60", "--grpc-base", str(GRPC_BASE + 10), "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summaries = {s["algo"]: s for s in json.loads((out / "summary.json").read_text())}
    assert set(summaries) == {"ina", "ring"}
    assert all(s["correct"] and s["workers"] == 4 for s in summaries.values())
    # the remote workers' records were collected: every worker has a time
    workers = json.loads((out / "workers.json").read_text())
    assert len(workers) == 8 and all(w["time_s"] for w in workers)
    leftovers = subprocess.run(["pgrep", "-f", f"--grpc-server-addr {SERVER}:"],
                               capture_output=True, text=True).stdout
    assert leftovers == ""
