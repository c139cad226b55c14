"""Turn a topology description into a running Mininet network of P4 switches, and tear it down.

    with MininetNetwork(star(3)) as net:        # hosts, veths, one switch process per switch
        ... configure the switches over P4Runtime (controller.Fabric(net.topology)) ...
        net.host("h1").cmd("ping -c1 10.0.0.2")

What it sets up, and why:
- hosts with the topology's IPv4/MAC on `<host>-eth<port>`, IPv6 off and static ARP for every
  other host (the switches need no broadcast handling); IPv6 also off on the switches' veths,
  which live in the root namespace (else the kernel's own router solicitations and MLD reports
  enter the data plane); checksum/segmentation offloads off on every veth, because a software switch reading raw sockets must see complete, checksummed frames
  (as BMv2's Mininet integration does);
- one `P4Switch` per switch, started with no program: the controller pushes it over P4Runtime;
- `TCLink` (htb) where a link has a bandwidth. Loss and delay go to the switch ports' options
  (`inaemu switch --loss/--delay-ms`) because this kernel has no netem:
  * loss: the switch drops with probability p in each direction of a port. A host link gets
    p = loss; a switch-to-switch link has two ports on the way, so each gets p = 1 - sqrt(1 - loss)
    and the direction still loses `loss` overall. Both directions of a link must have equal loss.
  * delay: a switch delays what leaves a port. A switch-to-switch link is exact in both
    directions; on a host link the host-to-switch delay cannot be applied, so it is added to the
    switch-to-host direction (one-way delays shift, round-trip times are right).
Every switch gets its own loss seed, `seed * 100003 + device_id`, so losses are independent
across switches and reproducible for one `seed`.
`stop()` (also on an exception inside `with`) stops switch processes first, then Mininet's hosts
and links, and finally removes any `<switch>-eth*` interface still present. If the Python process
itself was killed, `cleanup(topology)` removes exactly that topology's leftovers.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from mininet.link import Link as VethLink
from mininet.link import TCLink
from mininet.log import lg as mininet_log
from mininet.net import Mininet
from mininet.topo import Topo

from topologies.mininet_switch import P4Switch, PortImpairment, SwitchTLS
from topologies.model import Topology

OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro")


class HtbQuantumNoise(logging.Filter):
    """Mininet prints tc's harmless "quantum of class ... is big" warning for fast htb classes as
    an error; hide exactly that line while the network is built."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "quantum of class" not in record.getMessage()


class NetworkError(RuntimeError):
    """The topology cannot be emulated as asked (e.g. asymmetric loss on a link)."""


def port_impairments(topology: Topology) -> dict[str, dict[int, PortImpairment]]:
    """switch -> port -> what `inaemu switch` must do there to emulate each link's loss and delay."""
    result: dict[str, dict[int, PortImpairment]] = {s.name: {} for s in topology.switches}
    for i, link in enumerate(topology.links):
        if link.a_to_b.loss_percent != link.b_to_a.loss_percent:
            raise NetworkError(f"links[{i}] ({link.a.node}-{link.b.node}): loss differs per "
                               "direction; inaemu switch applies one loss per port")
        loss = link.a_to_b.loss_percent / 100.0
        ends = [e for e in (link.a, link.b) if topology.is_switch(e.node)]
        for end in ends:
            other = link.other(end.node)
            if len(ends) == 2:
                port_loss = 1.0 - math.sqrt(1.0 - loss)
                delay = link.leaving(end.node).delay_ms
            else:
                port_loss = loss
                delay = link.leaving(end.node).delay_ms + link.leaving(other.node).delay_ms
            if port_loss or delay:
                result[end.node][end.port] = PortImpairment(loss=round(port_loss, 9),
                                                            delay_ms=delay)
    return result


def switch_seed(seed: int, device_id: int) -> int:
    """Each switch its own loss streams (`inaemu switch` keys them by seed, port, direction)."""
    return seed * 100_003 + device_id


def mininet_topo(topology: Topology, *, target: str = "inaemu", run_dir: Path | None = None,
                 trace: bool = False, pcap: bool = False, seed: int = 0,
                 ready_timeout: float = 30.0, tls: SwitchTLS | None = None) -> Topo:
    """The Mininet `Topo` (data only, no root needed) for a topology description."""
    impairments = port_impairments(topology)
    topo = Topo()
    for host in topology.hosts:
        topo.addHost(host.name, ip=host.ip_with_prefix, mac=host.mac)
    for switch in topology.switches:
        topo.addSwitch(switch.name, cls=P4Switch, device_id=switch.device_id,
                       grpc_port=switch.grpc_port, target=target,
                       run_dir=str(run_dir) if run_dir else None, trace=trace, pcap=pcap,
                       seed=switch_seed(seed, switch.device_id),
                       impairments=impairments[switch.name],
                       ready_timeout=ready_timeout, tls=tls)
    for link in topology.links:
        options = {"port1": link.a.port, "port2": link.b.port}
        if link.bw_mbps is not None:
            options.update(cls=TCLink, bw=link.bw_mbps)
        else:
            options.update(cls=VethLink)
        topo.addLink(link.a.node, link.b.node, **options)
    return topo


class MininetNetwork:
    """A Mininet network of P4 switches built from a `Topology`, on this machine. Needs root.
    Context manager. (Over several servers: its subclass `topologies.cluster.ClusterNetwork`;
    `topologies.networks.mininet_network` picks one of the two.)"""

    def __init__(self, topology: Topology, *, target: str = "inaemu", run_dir: str | None = None,
                 trace: bool = False, pcap: bool = False, seed: int = 0,
                 ready_timeout: float = 30.0, tls: SwitchTLS | None = None):
        self.topology = topology
        self.tls = tls
        self._own_run_dir = run_dir is None
        self.run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="inaemu-net-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._topo = mininet_topo(topology, target=target, run_dir=self.run_dir, trace=trace,
                                  pcap=pcap, seed=seed, ready_timeout=ready_timeout, tls=tls)
        self.net: Mininet | None = None

    def start(self) -> "MininetNetwork":
        """Build hosts and links, configure hosts, start every switch (each waits until ready)."""
        self.net = Mininet(topo=self._topo, controller=None, build=False, autoSetMacs=False,
                           autoStaticArp=False, waitConnected=False)
        noise = HtbQuantumNoise()
        mininet_log.addFilter(noise)
        try:
            self.net.build()
            for host in self.topology.hosts:
                self._configure_host(host.name)
            for node in self.net.switches:
                for intf in node.intfList():
                    if intf.name != "lo":
                        _quiet_root_interface(intf.name)
            # what Mininet.start() does without controllers, but all switches boot at once
            switches = [node for node in self.net.switches if isinstance(node, P4Switch)]
            for node in switches:
                node.launch()
            for node in switches:
                node.wait_ready()
        except BaseException:
            self.stop()
            raise
        finally:
            mininet_log.removeFilter(noise)
        return self

    def _configure_host(self, name: str) -> None:
        node = self.net.get(name)
        intf = node.defaultIntf().name
        node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        _offloads_off(intf, runner=node.cmd)
        for ip, mac in self.topology.static_arp(name):
            node.cmd(f"ip neigh replace {ip} lladdr {mac} dev {intf} nud permanent")

    def p4runtime_addresses(self) -> dict[str, str]:
        """switch -> where a controller here reaches its P4Runtime server (`controller.Fabric`'s
        `addresses`): on one machine, 127.0.0.1:<grpc_port>."""
        return {s.name: f"127.0.0.1:{s.grpc_port}" for s in self.topology.switches}

    def host(self, name: str):
        self.topology.host(name)
        return self.net.get(name)

    def switch(self, name: str) -> P4Switch:
        self.topology.switch(name)
        return self.net.get(name)

    def stop(self) -> None:
        """Switch processes first (while their interfaces exist), then Mininet, then leftovers."""
        net, self.net = self.net, None
        if net is not None:
            switches = [node for node in net.switches if isinstance(node, P4Switch)]
            for node in switches:
                node.request_stop()
            for node in switches:
                node.wait_stopped()
            net.stop()
        delete_switch_interfaces(self.topology)
        if self._own_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> "MininetNetwork":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def delete_switch_interfaces(topology: Topology) -> list[str]:
    """Delete every `<switch>-eth<port>` interface of the topology still present; their names."""
    deleted = []
    for name in switch_interfaces_present(topology):
        subprocess.run(["ip", "link", "del", name], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deleted.append(name)
    return deleted


def switch_interfaces_present(topology: Topology) -> list[str]:
    """The topology's `<switch>-eth<port>` interfaces that exist now."""
    return [f"{switch.name}-eth{link.port}" for switch in topology.switches
            for link in topology.neighbours(switch.name)
            if Path("/sys/class/net", f"{switch.name}-eth{link.port}").exists()]


def _process_table() -> dict[int, list[str]]:
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            table[int(entry.name)] = raw.decode(errors="replace").split("\0")[:-1]
    return table


def leftovers(topology: Topology) -> tuple[dict[int, list[str]], list[str]]:
    """What a network of this topology has running or present now, found by exact identity:
    switch processes whose command line is `... switch ... --grpc-server-addr
    127.0.0.1:<its grpc_port>` (or `simple_switch_grpc ...` with that address), Mininet host
    shells whose last argument is `mininet:<its host name>` (pid -> argv), and
    `<its switch>-eth<port>` interfaces. After a network's teardown both are empty."""
    addresses = {f"127.0.0.1:{s.grpc_port}" for s in topology.switches}
    shells = {f"mininet:{h.name}" for h in topology.hosts}
    processes = {}
    for pid, argv in _process_table().items():
        is_switch = ("switch" in argv or Path(argv[0] if argv else "").name
                     == "simple_switch_grpc") and any(a in addresses for a in argv)
        is_shell = bool(argv) and argv[-1] in shells
        if is_switch or is_shell:
            processes[pid] = argv
    return processes, switch_interfaces_present(topology)


def cleanup(topology: Topology) -> list[str]:
    """Remove what a network of this topology left behind when its Python process was killed
    (`leftovers`). Do not call it while that network is running. Returns what it removed, for
    the caller to report.
    """
    removed = []
    processes, _ = leftovers(topology)
    for pid, argv in processes.items():
        try:
            os.kill(pid, signal.SIGKILL)
            removed.append(f"process {pid} ({' '.join(argv)[:80]})")
        except ProcessLookupError:
            pass
    removed += [f"interface {name}" for name in delete_switch_interfaces(topology)]
    return removed


def _quiet_root_interface(interface: str) -> None:
    """A switch port lives in the root namespace: keep the kernel from sending its own IPv6
    (router solicitations, MLD) into the data plane, and turn offloads off."""
    try:
        Path("/proc/sys/net/ipv6/conf", interface, "disable_ipv6").write_text("1\n")
    except OSError:
        pass  # IPv6 compiled out: nothing to silence
    _offloads_off(interface, runner=None)


def _offloads_off(interface: str, runner) -> None:
    """Disable checksum and segmentation offloads (the switch must see finished frames)."""
    args = ["ethtool", "-K", interface]
    for feature in OFFLOADS:
        args += [feature, "off"]
    if runner is None:
        subprocess.run(args, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        runner(" ".join(args) + " >/dev/null 2>&1")
