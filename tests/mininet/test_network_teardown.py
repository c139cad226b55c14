"""Stopping a Mininet network of P4 switches leaves no process, interface or namespace behind,
also when the body of the `with` raises, and when a switch fails to start; `cleanup` removes
what a killed owner left."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mn_helpers import relabel
from topologies.builders import star
from topologies.mininet_net import MininetNetwork, cleanup, leftovers
from topologies.mininet_switch import SwitchStartFailed

pytestmark = pytest.mark.root


def _cmdlines() -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                pass
    return found


def _netns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _leftovers(tag: str, grpc_port: int, namespaces: set[str]) -> list[str]:
    problems = []
    for pid, cmd in _cmdlines().items():
        if "switch" in cmd and f"127.0.0.1:{grpc_port}" in cmd:
            problems.append(f"switch process {pid}: {cmd}")
        if f"mininet:{tag}h" in cmd:
            problems.append(f"host shell {pid}: {cmd}")
        if _netns(pid) in namespaces:
            problems.append(f"process {pid} still in a host namespace: {cmd}")
    problems += [f"interface {p.name}" for p in Path("/sys/class/net").iterdir()
                 if p.name.startswith(f"{tag}s1-") or p.name.startswith(f"{tag}h")]
    return problems


def test_exception_in_body_still_tears_everything_down():
    topology = relabel(star(2), "z", grpc_base=20760)
    namespaces: set[str] = set()
    with pytest.raises(RuntimeError, match="boom"):
        with MininetNetwork(topology) as net:
            switch = net.switch("zs1")
            assert switch.process is not None and switch.process.poll() is None
            assert Path("/sys/class/net/zs1-eth1").exists()
            namespaces = {_netns(net.host(h).pid) for h in ("zh1", "zh2")}
            assert len(namespaces) == 2 and _netns(os.getpid()) not in namespaces
            raise RuntimeError("boom")
    assert _leftovers("z", 20761, namespaces) == []


def test_a_switch_that_cannot_start_is_reported_and_cleaned_up():
    topology = relabel(star(1), "y", grpc_base=20770)
    with socket.socket() as squatter:            # the switch's gRPC port is taken
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", 20771))
        squatter.listen()
        with pytest.raises(SwitchStartFailed, match=r"ys1: switch exited with status \d+:\n.*20771"):
            with MininetNetwork(topology, ready_timeout=30):
                pass
    assert _leftovers("y", 20771, set()) == []


RUN_AND_DIE = """
import os, signal, sys
sys.path[:0] = sys.argv[1:]
from mn_helpers import relabel
from topologies.builders import star
from topologies.mininet_net import MininetNetwork, cleanup
net = MininetNetwork(relabel(star(2), "k", grpc_base=20740)).start()
print("running", flush=True)
os.kill(os.getpid(), signal.SIGKILL)      # no stop(), no finally: like a crashed experiment
"""


def test_cleanup_after_the_owner_was_killed():
    here = str(Path(__file__).parent)
    project = str(Path(__file__).resolve().parents[2])
    result = subprocess.run([sys.executable, "-c", RUN_AND_DIE, here, project],
                            capture_output=True, text=True, timeout=120)
    assert "running" in result.stdout, result.stderr
    topology = relabel(star(2), "k", grpc_base=20740)
    assert _leftovers("k", 20741, set()) != []             # the crash did leave things behind
    # The switch process (root namespace) always outlives its owner, but the switch's veths may
    # or may not: when the orphaned host shells exit, the kernel deletes the pairs whose other
    # end was in their namespaces, at a moment of its choosing. So that cleanup's interface
    # removal is tested every time, make sure one switch port is there (a stray veth of the
    # same name is exactly what cleanup must remove).
    # Let that settle first (the orphaned shells exit on their own), then put a port back.
    ports = [Path(f"/sys/class/net/ks1-eth{port}") for port in (1, 2)]
    for _ in range(100):
        shells = [c for c in _cmdlines().values() if "mininet:kh" in c]
        if not shells and not any(p.exists() for p in ports):
            break
        time.sleep(0.05)
    if not ports[0].exists():
        subprocess.run(["ip", "link", "add", "ks1-eth1", "type", "veth", "peer", "name",
                        "kpeer-eth1"], check=True)
    processes, interfaces = leftovers(topology)             # what cleanup is about to remove
    assert processes and "ks1-eth1" in interfaces
    removed = cleanup(topology)
    assert any("process" in r for r in removed), removed
    assert "interface ks1-eth1" in removed, removed
    assert not Path("/sys/class/net/kpeer-eth1").exists()  # deleting one end deletes the pair
    for _ in range(50):                                    # SIGKILLed processes vanish promptly
        if not _leftovers("k", 20741, set()):
            break
        time.sleep(0.1)
    assert _leftovers("k", 20741, set()) == []
    assert leftovers(topology) == ({}, [])
