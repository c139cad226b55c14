"""One emulated fabric over several servers, on Mininet's cluster edition (docs/cluster.md).

    with ClusterNetwork(fat_tree(4), servers=["localhost", "10.1.0.2"]) as net:
        with Fabric(net.topology) as fabric: ...          # P4Runtime as on one machine

Built from `mininet.examples.cluster`: `MininetCluster` (placement, per-server IPs), its
`RemoteMixin` (a node's shell and processes run over SSH on its server, in its namespace there)
and `RemoteLink` (a link between servers is a tunnel). What inaemu adds:
- `ClusterP4Switch`: `inaemu switch` started on the switch's server through SSH, its output
  streamed back into the local run dir (so readiness and logs work as on one machine), its
  P4Runtime server bound to that server's address; stopped by its remote pid.
- P4Runtime across servers: one `ssh -N -L` per remote server forwards 127.0.0.1:<grpc_port>
  here to <server>:<grpc_port> there, so the controller connects to 127.0.0.1 as always. With
  TLS (`tls`, a `SwitchTLS`) there is no forward: the switch's certificate, key and CA are
  copied to the same paths on its server (the key readable by root only) and the controller
  connects to <server>:<grpc_port> over TLS (`p4runtime_addresses`).
- `TunnelLink`: Mininet's SSH Ethernet tunnel (`ssh -o Tunnel=ethernet -w A:B`) between tap
  devices, with tap numbers unique on every server (Mininet's own always uses tap9, which two
  "servers" on one kernel cannot share) and our SSH options; `TunnelTCLink` shapes it like TCLink.
  GRE (`RemoteGRELink`) is the faster tunnel where the kernel has gretap (`tunnel="gre"`).
- placement by pod (topologies/placement.py), so tunnels carry only uplinks.
Servers: `localhost` is this machine; any other name or address is reached as root over SSH
(options from `ssh_config`, e.g. a file with Port/IdentityFile per server). Every server needs
inaemu installed at the same path (the same venv), Mininet's `mnexec`, sudo and an sshd that
permits root keys and tunnels (`PermitTunnel ethernet`).
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from functools import partial
from pathlib import Path

from mininet.examples.cluster import (MininetCluster, Placer, RemoteGRELink, RemoteHost,
                                      RemoteLink, RemoteMixin)
from mininet.link import TCIntf
from mininet.log import lg as mininet_log
from mininet.node import Node

from topologies.mininet_net import (OFFLOADS, HtbQuantumNoise, MininetNetwork, NetworkError,
                                    delete_switch_interfaces)
from topologies.mininet_switch import P4Switch, SwitchStartFailed
from topologies.model import Topology
from topologies.placement import place

LOCAL = "localhost"
PID_MARK = "inaemu-remote-pid"
SHELL_EXIT_GRACE = 10.0   # seconds a remote node's shell gets to exit after its SIGHUP
TUNNELS = ("ssh", "gre")
_tap_numbers = itertools.count(600)


def is_local(server: str) -> bool:
    return server in (LOCAL, "", None)


def ssh_base(ssh_config: str | None) -> list[str]:
    """`ssh` with our options: quiet, never a password prompt, an optional config file."""
    return ["ssh", "-q", "-o", "BatchMode=yes", *(["-F", ssh_config] if ssh_config else [])]


def server_address(server: str) -> str:
    """The IPv4 address a server is reached at (Mininet's own lookup)."""
    if is_local(server):
        return "127.0.0.1"
    address = RemoteMixin.findServerIP(server)
    if not address:
        raise NetworkError(f"server {server!r}: no IPv4 address (getent ahostsv4 found none)")
    return address


def server_cmd(node, command: str) -> str:
    """Run a shell command in the root namespace of `node`'s server; its output (text).
    (Mininet's RemoteMixin.rcmd mixes bytes and str under Python 3.)"""
    argv = [*node.ssh_plain(), command] if node.isRemote else ["sh", "-c", command]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)
    return done.stdout + done.stderr


def push_file(node, path: Path, private: bool = False) -> None:
    """Copy a local file to the same path on `node`'s server (written aside, then renamed, so
    a server that shares this file system is safe); `private`: readable by its owner only
    (a private key)."""
    if path.stat().st_mode & 0o111:
        raise NetworkError(f"{path}: refusing to copy an executable over itself remotely")
    target = shlex.quote(str(path))
    umask = "umask 077 && " if private else ""
    with open(path, "rb") as source:
        subprocess.run([*node.ssh_plain(), f"{umask}mkdir -p {shlex.quote(str(path.parent))} && "
                        f"cat > {target}.inaemu-tmp && mv {target}.inaemu-tmp {target}"],
                       stdin=source, check=True, capture_output=True, timeout=120)


def pull_file(node, path: Path) -> bool:
    """Copy a file from `node`'s server to the same path here; False when it is not there."""
    done = subprocess.run([*node.ssh_plain(), f"cat {shlex.quote(str(path))}"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    if done.returncode != 0:
        return False
    aside = path.with_name(path.name + ".inaemu-tmp")
    aside.write_bytes(done.stdout)
    aside.replace(path)
    return True


class _CollectingProcess:
    """A remote process (its local ssh client) that copies its result files back once it has
    exited, and whose kill()/terminate() reach the remote process (found by `marker`, a string
    unique to its command line, e.g. `--config PATH`): killing ssh alone would leave it running.
    Otherwise the Popen it wraps."""

    def __init__(self, process: subprocess.Popen, node, results: list[Path],
                 marker: str | None = None):
        self._process, self._node, self._results = process, node, results
        self._marker = marker

    def _signal(self, name: str) -> None:
        if self._marker and self._process.poll() is None:
            pattern = "[" + self._marker[0] + "]" + self._marker[1:]   # never matches its shell
            subprocess.run([*self._node.ssh_plain(),
                            f"pkill -{name} -f -- {shlex.quote(pattern)}; true"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)

    def kill(self):
        self._signal("KILL")
        if self._process.poll() is None:
            self._process.kill()

    def terminate(self):
        self._signal("TERM")
        if self._process.poll() is None:
            self._process.terminate()

    def _collect(self, status):
        if status is not None and self._results:
            results, self._results = self._results, []
            for path in results:
                pull_file(self._node, path)
        return status

    def poll(self):
        return self._collect(self._process.poll())

    def wait(self, timeout=None):
        return self._collect(self._process.wait(timeout))

    def __getattr__(self, name):
        return getattr(self._process, name)


class _SshOptions:
    """Mixed in before RemoteMixin: our SSH command for this node's server."""

    def _set_ssh(self, ssh_config: str | None) -> None:
        self.ssh_config = ssh_config
        self.sshbase = [*ssh_base(ssh_config), "-tt"]

    def ssh_plain(self) -> list[str]:
        """SSH to this node's server without a terminal (for our own processes)."""
        return [*ssh_base(self.ssh_config), self.dest]

    def cleanup(self):
        """Node.cleanup with a bounded wait for a remote node's shell. Its local process is
        `sudo` (here with `use_pty`, so the ssh client runs in a session of its own and only
        sudo gets Mininet's SIGHUP, to relay); a test's teardown once waited 300 s for it.
        After SHELL_EXIT_GRACE sudo is killed: the ssh client then loses its terminal and
        exits, and the remote shell with it."""
        shell = self.shell
        if not (self.isRemote and shell is not None and shell.poll() is None):
            return super().cleanup()
        self.waitExited = False          # Node.cleanup closes the ptys; we wait below
        try:
            super().cleanup()
        finally:
            self.waitExited = True
            try:
                shell.wait(timeout=SHELL_EXIT_GRACE)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(shell.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                shell.wait()

    def _popen(self, cmd, sudo=True, tt=True, **params):
        """RemoteMixin._popen without its Python `preexec_fn` (os.setpgrp): a Python function
        run between fork and exec can abort the child (SIGABRT, no output) while gRPC's threads
        run in this process, as they do once the controller is connected; `process_group=0`
        does the same in C."""
        if isinstance(cmd, str):
            cmd = cmd.split()
        if self.isRemote:
            ssh = list(self.sshcmd)
            if not tt:
                ssh.remove("-tt")
            cmd = ssh + (["sudo", "-E"] if sudo else []) + list(cmd)
        params.setdefault("process_group", 0)
        return Node._popen(self, cmd, **params)


class ClusterHost(_SshOptions, RemoteHost):
    """A Mininet host on its server (RemoteHost with our SSH options)."""

    def __init__(self, name: str, ssh_config: str | None = None, **params):
        self._set_ssh(ssh_config)
        super().__init__(name, **params)

    def popen(self, *args, **kwargs):
        """On a remote server: an agent's `--config FILE` is copied there first, and its record
        (the config's "output") copied back when it exits."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)   # never let ssh read our terminal
        if not self.isRemote:
            return super().popen(*args, **kwargs)
        argv = [str(a) for a in (args[0] if len(args) == 1 and isinstance(args[0], list)
                                 else args)]
        results, marker = [], None
        if "--config" in argv[:-1]:     # only the agent's config: never a program file
            config = Path(argv[argv.index("--config") + 1])
            marker = f"--config {config}"
            push_file(self, config)
            try:
                results.append(Path(json.loads(config.read_text())["output"]))
            except (OSError, ValueError, KeyError, TypeError):
                pass
        return _CollectingProcess(super().popen(*args, **kwargs), self, results, marker)


class ClusterP4Switch(_SshOptions, RemoteMixin, P4Switch):
    """A P4Switch whose process runs on its server (see the module docstring)."""

    def __init__(self, name: str, ssh_config: str | None = None, **params):
        self._set_ssh(ssh_config)
        super().__init__(name, **params)
        if self.isRemote and self.target != "inaemu":
            raise NetworkError(f"{name}: only inaemu switches run on remote servers")

    def command(self) -> list[str]:
        command = super().command()
        if self.isRemote:
            local = f"127.0.0.1:{self.grpc_port}"
            command = [f"{self.serverIP}:{self.grpc_port}" if a == local else a for a in command]
        return command

    def launch(self) -> None:
        if not self.isRemote:
            return super().launch()
        if self.process is not None:
            return
        run_dir = self._run_dir()
        run_dir.mkdir(parents=True, exist_ok=True)
        self.output_path = run_dir / f"{self.name}.out"
        for name in self.switch_ports().values():
            self.cmd(f"ip link set dev {name} up")
        if self.tls is not None:          # the same paths there (a shared file system: no harm)
            for path in self.tls.files():
                push_file(self, path, private=path == self.tls.key)
        remote = (f"mkdir -p {shlex.quote(str(run_dir))} && echo {PID_MARK} $$ && exec "
                  + " ".join(shlex.quote(a) for a in self.command()))
        if self.pcap:
            remote = f"mkdir -p {shlex.quote(str(run_dir / (self.name + '-pcap')))} && {remote}"
        with open(self.output_path, "wb") as output:
            self.process = subprocess.Popen([*self.ssh_plain(), remote], stdout=output,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)

    def remote_pid(self) -> int | None:
        for line in self.output().splitlines()[:3]:
            if line.startswith(PID_MARK):
                return int(line.split()[1])
        return None

    def _signal_remote(self, name: str) -> None:
        pid = self.remote_pid()
        if pid is not None:
            subprocess.run([*self.ssh_plain(), f"kill -{name} {pid}"], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)

    def request_stop(self) -> None:
        if not self.isRemote:
            return super().request_stop()
        if self.process is not None and self.process.poll() is None:
            self._signal_remote("TERM")

    def wait_stopped(self, grace: float = 5.0) -> None:
        if not self.isRemote:
            return super().wait_stopped(grace)
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            process.wait(timeout=grace)       # ssh ends when the remote switch exits
        except subprocess.TimeoutExpired:
            self._signal_remote("KILL")
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class TunnelLink(RemoteLink):
    """A link; between two servers an SSH Ethernet tunnel (see the module docstring)."""

    def __init__(self, node1, node2, ssh_config: str | None = None, **kwargs):
        self.ssh_config = ssh_config
        super().__init__(node1, node2, **kwargs)

    def makeTunnel(self, node1, node2, intfname1, intfname2, addr1=None, addr2=None):
        if not node1.isRemote and node2.isRemote:
            pass                                      # we ssh from here to node2's server
        elif node1.isRemote and not node2.isRemote:
            return self.makeTunnel(node2, node1, intfname2, intfname1, addr2, addr1)
        taps = []
        for node in (node1, node2):
            while True:      # a number free on this server (two "servers" may share a kernel)
                number = next(_tap_numbers)
                if not server_cmd(node, f"ip tuntap add dev tap{number} mode tap").strip():
                    taps.append(number)
                    break
        try:
            return self._connect(node1, node2, intfname1, intfname2, addr1, addr2, taps)
        except BaseException:
            for node, tap in zip((node1, node2), taps):
                server_cmd(node, f"ip link del tap{tap} 2>/dev/null; true")
            raise

    @staticmethod
    def moveIntf(intf, node) -> bool:
        return not server_cmd(node, f"ip link set {intf} netns {node.pid}").strip()

    def _connect(self, node1, node2, intfname1, intfname2, addr1, addr2, taps):
        options = ssh_base(self.ssh_config) if not node1.isRemote else ssh_base(None)
        self.cmd = [*options, "-n", "-o", "Tunnel=ethernet", "-w", f"{taps[0]}:{taps[1]}",
                    f"{node2.user}@{node2.serverIP}", "echo @"]
        tunnel = node1.rpopen(self.cmd, sudo=False)
        if tunnel.stdout.read(1) not in (b"@", "@"):
            tunnel.kill()
            raise NetworkError(f"tunnel {node1}:{intfname1} - {node2}:{intfname2} failed: "
                               f"{' '.join(self.cmd)}")
        for node, tap, intf, addr in ((node1, taps[0], intfname1, addr1),
                                      (node2, taps[1], intfname2, addr2)):
            if not self.moveIntf(f"tap{tap}", node):
                raise NetworkError(f"cannot move tap{tap} into {node}")
            result = node.cmd(f"ip link set tap{tap} name {intf}"
                              + (f" address {addr}" if addr else ""))
            if result.strip():
                raise NetworkError(f"cannot rename tap{tap} to {intf} on {node}: {result}")
        return tunnel


class TunnelTCLink(TunnelLink):
    """TunnelLink with htb shaping on both ends, like TCLink."""

    def __init__(self, node1, node2, **kwargs):
        kwargs.setdefault("cls1", TCIntf)
        kwargs.setdefault("cls2", TCIntf)
        super().__init__(node1, node2, **kwargs)


class GreLink(RemoteGRELink):
    def __init__(self, node1, node2, ssh_config: str | None = None, **kwargs):
        super().__init__(node1, node2, **kwargs)


class GreTCLink(GreLink):
    def __init__(self, node1, node2, **kwargs):
        kwargs.setdefault("cls1", TCIntf)
        kwargs.setdefault("cls2", TCIntf)
        super().__init__(node1, node2, **kwargs)


class PodPlacer(Placer):
    """MininetCluster's placement hook answering from `topologies.placement.place`."""

    def __init__(self, placement: dict[str, str], **kwargs):
        super().__init__(**kwargs)
        self.placement = placement

    def place(self, node: str) -> str:
        return self.placement[node]


class ClusterNetwork(MininetNetwork):
    """`MininetNetwork` over several servers; `servers[0]` is usually `localhost`."""

    def __init__(self, topology: Topology, *, servers: list[str] | tuple[str, ...],
                 ssh_config: str | None = None, tunnel: str = "ssh",
                 placement: dict[str, str] | None = None, **options):
        if tunnel not in TUNNELS:
            raise NetworkError(f"tunnel: expected {' or '.join(TUNNELS)}, got {tunnel!r}")
        super().__init__(topology, **options)
        self.servers = [LOCAL if is_local(s) else s for s in servers]
        self.ssh_config = ssh_config
        self.placement = placement or place(topology, self.servers)
        self.addresses = {s: server_address(s) for s in self.servers}
        self._forwards: list[subprocess.Popen] = []
        self._adapt_topo(tunnel)

    def _adapt_topo(self, tunnel: str) -> None:
        """Our node and link classes, and each node's server, on the Mininet Topo."""
        plain, shaped = (TunnelLink, TunnelTCLink) if tunnel == "ssh" else (GreLink, GreTCLink)
        for name in self._topo.nodes():
            info = self._topo.nodeInfo(name)
            info.update(cls=ClusterP4Switch if info.get("cls") is P4Switch else ClusterHost,
                        user="root", ssh_config=self.ssh_config)
        for src, dst, key, info in self._topo.links(withKeys=True, withInfo=True):
            info.update(cls=shaped if "bw" in info else plain, ssh_config=self.ssh_config)

    def servers_of_switches(self) -> dict[str, list]:
        by_server: dict[str, list] = {}
        for switch in self.topology.switches:
            by_server.setdefault(self.placement[switch.name], []).append(switch)
        return by_server

    def check_servers(self) -> None:
        """Each remote server answers over SSH as root, with mnexec: say which does not."""
        for server in self.servers:
            if is_local(server):
                continue
            done = subprocess.run([*ssh_base(self.ssh_config), "-n", f"root@{server}",
                                   "command -v mnexec >/dev/null && id -u"],
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0 or done.stdout.strip() != "0":
                raise NetworkError(f"server {server}: ssh root@{server} failed or has no mnexec "
                                   f"(exit {done.returncode}): {done.stderr.strip()[-200:]}")

    def start(self) -> "ClusterNetwork":
        self.check_servers()
        os.environ.setdefault("HOME", "/root")      # MininetCluster keeps ~/.ssh/mn
        self.net = MininetCluster(
            topo=self._topo, servers=self.servers, serverIP=self.addresses, user="root",
            placement=partial(PodPlacer, self.placement), precheck=False, controller=None,
            build=False, autoSetMacs=False, autoStaticArp=False, waitConnected=False)
        noise = HtbQuantumNoise()
        mininet_log.addFilter(noise)
        try:
            self.net.build()
            for host in self.topology.hosts:
                self._configure_host(host.name)
            switches = [n for n in self.net.switches if isinstance(n, P4Switch)]
            for node in switches:
                for intf in node.intfList():
                    if intf.name != "lo":
                        node.cmd(f"sysctl -qw net.ipv6.conf.{intf.name}.disable_ipv6=1; "
                                 f"ethtool -K {intf.name} "
                                 + " ".join(f"{f} off" for f in OFFLOADS) + " >/dev/null 2>&1")
            for node in switches:
                node.launch()
            for node in switches:
                node.wait_ready()
            if self.tls is None:
                self._forward_p4runtime()
        except BaseException:
            self.stop()
            raise
        finally:
            mininet_log.removeFilter(noise)
        return self

    def p4runtime_addresses(self) -> dict[str, str]:
        """switch -> where the controller reaches it: 127.0.0.1:<grpc_port> (the switch here, or
        the SSH forward to it); with TLS, its server's address (the certificate must name it)."""
        addresses = super().p4runtime_addresses()
        if self.tls is not None:
            for switch in self.topology.switches:
                server = self.placement[switch.name]
                if not is_local(server):
                    addresses[switch.name] = f"{self.addresses[server]}:{switch.grpc_port}"
        return addresses

    def _forward_p4runtime(self) -> None:
        """127.0.0.1:<grpc_port> here -> <server>:<grpc_port> there, per remote switch."""
        for server, switches in self.servers_of_switches().items():
            if is_local(server):
                continue
            address = self.addresses[server]
            forwards = [arg for s in switches for arg in
                        ("-L", f"127.0.0.1:{s.grpc_port}:{address}:{s.grpc_port}")]
            self._forwards.append(subprocess.Popen(
                [*ssh_base(self.ssh_config), "-N", "-o", "ExitOnForwardFailure=yes",
                 *forwards, f"root@{server}"], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True))
        for server, switches in self.servers_of_switches().items():
            if not is_local(server):
                for switch in switches:
                    self._wait_port(switch.grpc_port, server)

    def _wait_port(self, port: int, server: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for forward in self._forwards:
                if forward.poll() is not None:
                    raise SwitchStartFailed(f"P4Runtime forward to {server} exited: "
                                            f"{forward.stderr.read().decode()[-300:]}")
            with socket.socket() as probe:
                probe.settimeout(0.5)
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.1)
        raise SwitchStartFailed(f"P4Runtime forward 127.0.0.1:{port} to {server}: not up")

    def stop(self) -> None:
        """Forwards, then switches and Mininet (tunnels with their links), then leftovers on
        every server."""
        for forward in self._forwards:
            forward.terminate()
        for forward in self._forwards:
            try:
                forward.wait(timeout=5)
            except subprocess.TimeoutExpired:
                forward.kill()
                forward.wait()
        self._forwards.clear()
        super().stop()
        for server in self.servers:
            if is_local(server):
                continue
            names = [f"{s.name}-eth{n.port}" for s in self.topology.switches
                     if self.placement[s.name] == server
                     for n in self.topology.neighbours(s.name)]
            script = "; ".join(f"[ -e /sys/class/net/{n} ] && ip link del {n}" for n in names)
            if script:
                subprocess.run([*ssh_base(self.ssh_config), "-n", f"root@{server}",
                                script + "; true"], check=False, timeout=120,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        delete_switch_interfaces(self.topology)
