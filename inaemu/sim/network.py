"""The simulated network built from a topology description: nodes, link directions, servers.

One `SimNetwork` per run. Every link of the topology becomes two `LinkDirection`s (each with its
own seeded `random.Random`, seeded from the run's seed and the direction's name, so adding a link
does not change the fates of the packets on the others); every switch becomes a `SwitchNode`
whose P4Runtime is served in this process (`start_local`: the channels `controller.fabric.Fabric`
takes) or by a gRPC server on 127.0.0.1 (`start_servers`: a free port each); every host a
`HostNode` whose first hop is its switch. `control_topology()` is the same topology with each
switch's `grpc_port` replaced by the port its server really got, so `Fabric` connects to the
simulated switches unchanged. `switches` (name -> configured runtime `Switch`, from `inaemu.sim.setup`) reuses
switches configured before instead of new empty ones.
"""

from __future__ import annotations

import dataclasses
import gc
import random
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from hosts.timer_heap import TimerHeap
from topologies.model import Host, Topology

from inaemu.sim.cores import core_classes
from inaemu.sim.frames import Addressing, ip_bytes, mac_bytes
from inaemu.sim.host_node import HostNode
from inaemu.sim.link import DEFAULT_QUEUE_BYTES, LinkDirection
from inaemu.sim.switch_node import SwitchCost, SwitchNode


SERVER_START_THREADS = 4


def switch_mac(index: int) -> str:
    """The MAC the simulator gives the switch at `index` in the topology (hosts' gateway MAC)."""
    return f"02:53:00:00:{(index >> 8) & 0xFF:02x}:{index & 0xFF:02x}"


class SimNetwork:
    """Nodes and links of one simulated run; `loop` drives them all. `wires=False` builds the
    switches alone (no hosts, no links): all `prepare_setup` configures, and at fat-tree(40)
    the 96,000 link directions and 16,000 hosts it did not use cost ~4 s to build."""

    def __init__(self, topology: Topology, *, seed: int, switch_cost: SwitchCost = SwitchCost(),
                 bw_mbps: float | None = None, loss_percent: float | None = None,
                 switch_queue_packets: int = 1024, link_queue_bytes: int = DEFAULT_QUEUE_BYTES,
                 trace: list[str] | None = None, capture_dir: Path | None = None,
                 switches: dict | None = None, core: str = "python", wires: bool = True):
        self.topology = topology
        classes = core_classes(core)           # inaemu/sim/cores.py
        self._host_class = classes.host
        self.loop = classes.loop(trace)
        self.switches: dict[str, SwitchNode] = {}
        self.switch_macs: dict[str, str] = {}
        self.hosts: dict[str, HostNode] = {}
        self.links: dict[str, LinkDirection] = {}
        # what is built here lives as long as the run: the cyclic collector walking it again at
        # every collection while it is built cost more than the building at fat-tree(40)
        with _collector_paused():
            self._build(classes, seed, switch_cost, bw_mbps, loss_percent, switch_queue_packets,
                        link_queue_bytes, capture_dir, switches or {}, wires)

    def job_lanes(self, n: int):
        """Where a streamed INA job of `n` workers keeps their RESULT lanes (StreamedCheck's
        `lanes`): once for all of them on the native core (its `JobLanes`), else None."""
        lanes_class = getattr(self._host_class, "job_lanes_class", None)
        return None if lanes_class is None else lanes_class(n)

    @property
    def timer_heap(self) -> Callable[[], object]:
        """What an INA session here keeps its timers in (InaSession's `timer_heap`): the native
        core's `TimerHeap` in C, else hosts' own."""
        return getattr(self._host_class, "timer_heap_class", TimerHeap)

    def _build(self, classes, seed: int, switch_cost: SwitchCost, bw_mbps: float | None,
               loss_percent: float | None, switch_queue_packets: int, link_queue_bytes: int,
               capture_dir: Path | None, switches: dict, wires: bool) -> None:
        topology = self.topology
        for index, sw in enumerate(topology.switches):
            self.switches[sw.name] = classes.switch(self.loop, sw.name, sw.device_id,
                                                    cost=switch_cost,
                                                    queue_packets=switch_queue_packets,
                                                    switch=switches.get(sw.name))
            self.switch_macs[sw.name] = switch_mac(index)
        if not wires:
            return
        if capture_dir is not None:
            self._start_capture(Path(capture_dir))
        for host in topology.hosts:
            gateway = topology.host_link(host.name).node
            self.hosts[host.name] = classes.host(self.loop, host.name, _addressing(
                host, self.switch_macs[gateway]))
        for link in topology.links:
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                direction = link.leaving(src.node)
                bw = bw_mbps if bw_mbps is not None else link.bw_mbps
                loss = loss_percent if loss_percent is not None else direction.loss_percent
                name = f"{src.node}:{src.port}->{dst.node}:{dst.port}"
                wire = classes.link(
                    self.loop, f"{src.node}:{src.port}", f"{dst.node}:{dst.port}",
                    bw_bps=bw * 1e6 if bw else None, delay_s=direction.delay_ms / 1000.0,
                    loss=loss / 100.0, rng=random.Random(f"{seed}/{name}"),
                    deliver=self._receiver(dst.node, dst.port), queue_bytes=link_queue_bytes)
                self.links[name] = wire
                if capture_dir is not None:
                    self._capture_hooks(wire, src, dst)
                if src.node in self.switches:
                    self.switches[src.node].attach_egress(src.port, wire)
                else:
                    self.hosts[src.node].uplink = wire

    def _start_capture(self, capture_dir: Path) -> None:
        """One log + pcap recorder per switch, stamped with virtual time (docs/trace.md)."""
        from inaemu.trace.layout import SwitchRecorder

        for name, node in self.switches.items():
            ports = {n.port: f"{name}-eth{n.port}" for n in self.topology.neighbours(name)}
            node.recorder = SwitchRecorder(capture_dir, name, ports, clock=self.loop.clock)
            node.switch.trace = node.recorder.trace

    def _capture_hooks(self, wire: LinkDirection, src, dst) -> None:
        if src.node in self.switches:
            recorder = self.switches[src.node].recorder
            wire.on_departed = lambda frame, r=recorder, p=src.port: r.departed(p, frame)
            wire.on_lost = lambda frame, r=recorder, p=src.port: r.lost(p, "out", frame)
        elif dst.node in self.switches:
            recorder = self.switches[dst.node].recorder
            wire.on_lost = lambda frame, r=recorder, p=dst.port: r.lost(p, "in", frame)

    def close_capture(self) -> None:
        """Flush and close every recorder (the end of a traced run)."""
        for node in self.switches.values():
            if node.recorder is not None:
                node.recorder.close()

    def _receiver(self, node: str, port: int):
        if node in self.switches:
            return self.switches[node].ingress(port)
        return self.hosts[node].receive

    # -- control plane ----------------------------------------------------------------------------

    def start_servers(self) -> Topology:
        """Start every switch's P4Runtime server; the topology the controller should use.
        A few at a time: starting one mostly waits on grpc's own threads (80 servers: 0.19 s
        one after the other, 0.03-0.08 s four at a time)."""
        nodes = list(self.switches.values())
        try:
            with ThreadPoolExecutor(max_workers=max(1, min(SERVER_START_THREADS, len(nodes))),
                                    thread_name_prefix="sim-grpc-start") as pool:
                ports = dict(zip(self.switches, pool.map(SwitchNode.start_server, nodes)))
        except BaseException:
            self.stop_servers()
            raise
        return self.control_topology(ports)

    def start_local(self) -> dict:
        """Serve every switch's P4Runtime in this process (`p4switch.server.LocalP4Runtime`);
        name -> the channel a controller's session uses (`Fabric(..., channels=...)`)."""
        return {name: node.start_local() for name, node in self.switches.items()}

    def control_topology(self, ports: dict[str, int]) -> Topology:
        switches = [dataclasses.replace(s, grpc_port=ports[s.name]) for s in self.topology.switches]
        return dataclasses.replace(self.topology, switches=tuple(switches))

    def stop_servers(self) -> None:
        for node in self.switches.values():
            node.stop_server()

    # -- reports ----------------------------------------------------------------------------------

    def link_report(self) -> list[dict]:
        """Per link direction: its name, ends and counters (in topology order)."""
        return [{"link": name, "src": wire.src, "dst": wire.dst, **wire.counters.as_dict()}
                for name, wire in self.links.items()]

    def delivered_frames(self) -> int:
        """Frames delivered over every link so far: one attribute read per link (the native
        core's `counters` makes an object per call: 0.2 s for fat-tree(40)'s 96,000 links at
        every progress line)."""
        return sum(wire.delivered_packets for wire in self.links.values())

    def switch_report(self) -> dict[str, dict]:
        return {name: node.counters.as_dict() for name, node in self.switches.items()}


@contextmanager
def _collector_paused():
    """The cyclic collector off inside the block (and back on after it if it was on)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _addressing(host: Host, gateway_mac: str) -> Addressing:
    return Addressing(mac=mac_bytes(host.mac), ip=ip_bytes(host.ip),
                      gateway_mac=mac_bytes(gateway_mac))
