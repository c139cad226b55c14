"""Pieces of topologies/cluster.py that need neither root nor SSH: the file copies to a server
(run here through `sh -c` in place of `ssh server`) and how node processes are started."""

from __future__ import annotations

import os
import stat

import pytest

from mininet.node import Node
from topologies import cluster
from topologies.mininet_net import NetworkError


class LocalShell:
    """A node whose 'server' is this machine, reached by `sh -c` instead of ssh."""

    def ssh_plain(self) -> list[str]:
        return ["sh", "-c"]


def test_push_onto_the_same_file_keeps_it_and_pull_copies_back(tmp_path) -> None:
    data = tmp_path / "agents" / "w0.json"
    data.parent.mkdir()
    data.write_text('{"output": "x"}')
    cluster.push_file(LocalShell(), data)        # a server sharing this file system
    assert data.read_text() == '{"output": "x"}'
    assert not list(tmp_path.glob("agents/*.inaemu-tmp"))
    assert cluster.pull_file(LocalShell(), data) and data.read_text() == '{"output": "x"}'
    assert not cluster.pull_file(LocalShell(), tmp_path / "missing.json")


def test_push_refuses_an_executable(tmp_path) -> None:
    # regression: pushing every file argument of an agent's command copied the venv's python
    # over itself without its execute bit
    program = tmp_path / "python3"
    program.write_bytes(b"\x7fELF...")
    program.chmod(0o755)
    with pytest.raises(NetworkError, match="executable"):
        cluster.push_file(LocalShell(), program)
    assert stat.S_IMODE(program.stat().st_mode) == 0o755


def test_node_processes_start_without_a_python_preexec_fn(monkeypatch) -> None:
    # regression: Mininet's RemoteMixin starts processes with preexec_fn=os.setpgrp, which can
    # abort the child (SIGABRT) while gRPC threads run in the parent
    seen = {}
    monkeypatch.setattr(Node, "_popen", lambda self, cmd, **params: seen.update(
        cmd=cmd, params=params))
    for remote in (False, True):
        node = object.__new__(cluster.ClusterHost)
        node.isRemote = remote
        node.sshcmd = ["sudo", "-E", "-u", "root", "ssh", "-q", "-tt", "root@10.9.9.9"]
        node._popen(["echo", "hi"], tt=False)
        assert "preexec_fn" not in seen["params"] and seen["params"]["process_group"] == 0
        expected = ["sudo", "-E", "-u", "root", "ssh", "-q", "root@10.9.9.9", "sudo", "-E",
                    "echo", "hi"] if remote else ["echo", "hi"]
        assert seen["cmd"] == expected


def test_ssh_options_and_local_names() -> None:
    assert cluster.ssh_base("/x/cfg")[-2:] == ["-F", "/x/cfg"]
    assert cluster.is_local("localhost") and not cluster.is_local("127.0.0.2")
    assert cluster.server_address("localhost") == "127.0.0.1"
    assert os.path.basename(cluster.ssh_base(None)[0]) == "ssh"


def test_mininet_network_with_servers_is_the_cluster_form(tmp_path) -> None:
    from topologies.builders import linear
    from topologies.mininet_net import MininetNetwork
    from topologies.networks import mininet_network
    net = mininet_network(linear(2, 1), servers=["localhost", "127.0.0.2"], ssh_config="/cfg",
                          run_dir=str(tmp_path))
    assert type(net) is cluster.ClusterNetwork and net.ssh_config == "/cfg"
    assert net.placement["s2"] == "127.0.0.2" and net.placement["h1"] == "localhost"
    assert type(mininet_network(linear(2, 1), run_dir=str(tmp_path))) is MininetNetwork
    assert type(mininet_network(linear(2, 1), servers=[], run_dir=str(tmp_path))) \
        is MininetNetwork


def test_killing_a_remote_process_kills_it_on_its_server_not_only_ssh(tmp_path) -> None:
    import subprocess
    import sys
    config = tmp_path / "agents" / "ina-w3.json"
    # stands for `ssh server sudo mnexec ... python -m hosts.agent --config PATH` over there
    remote = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                               "--config", str(config)])
    ssh_client = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    process = cluster._CollectingProcess(ssh_client, LocalShell(), [], f"--config {config}")
    process.kill()
    assert remote.wait(timeout=10) == -9
    assert ssh_client.wait(timeout=10) == -9


def test_a_remote_shell_that_outlives_its_sighup_is_killed_not_waited_for(monkeypatch) -> None:
    # regression: a full test run once hung 300 s in Node.cleanup's unbounded wait for a remote
    # node's shell (`sudo` with use_pty, relaying Mininet's SIGHUP to its ssh client)
    import os
    import pty
    import signal
    import subprocess
    import time

    monkeypatch.setattr(cluster, "SHELL_EXIT_GRACE", 0.5)
    for remote in (True, False):
        master, slave = pty.openpty()
        shell = subprocess.Popen(["sh", "-c", "trap '' HUP; sleep 60"], process_group=0)
        node = object.__new__(cluster.ClusterHost)
        node.isRemote, node.shell, node.waitExited, node.pid = remote, shell, True, shell.pid
        node.stdin, node.slave = os.fdopen(master, "wb"), slave
        time.sleep(0.2)                         # the trap is set
        os.killpg(shell.pid, signal.SIGHUP)     # what Node.terminate sends
        if not remote:                          # a local shell keeps Mininet's own wait
            assert shell.poll() is None
            os.killpg(shell.pid, signal.SIGKILL)
        started = time.monotonic()
        node.cleanup()
        assert shell.returncode is not None and node.shell is None
        assert time.monotonic() - started < 5
        if remote:
            assert shell.returncode == -signal.SIGKILL
