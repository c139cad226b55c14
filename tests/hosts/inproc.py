"""InaSessions talking to the real p4src/ina.p4 in-process, over lossy links, in virtual time.

Test-only harness. Switches are `p4switch.runtime.Switch` objects running ina.p4; workers are
InaSessions. Jobs are set up with the runtime API alone (what the controller will later do over
P4Runtime), with action parameters bound by name from the program's JSON. Packets are framed with
hosts.framing; each transmission is dropped with a seeded probability; retransmission timers run
on a virtual clock (an event heap), so loss costs no wall-clock time.

`ina_switch` builds the flat case (worker w on port w + 1 of one switch, aggregator 10.0.0.254);
`TreeJob` builds a two-level tree (a root and leaf switches, their workers below them).
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from controller.ina_jobs import pool_cells
from hosts.framing import FrameError, UdpFrame, build_udp_frame, parse_udp_frame
from hosts.ina_session import InaSession, Step
from hosts.ina_wire import INA_UDP_PORT
from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, LpmKey, Switch

INA_P4 = Path(__file__).resolve().parents[2] / "p4src" / "ina.p4"
AGGREGATOR_IP = "10.0.0.254"
SWITCH_MAC = "02:00:00:00:01:00"
LATENCY = 10e-6


def worker_ip(w: int) -> str:
    return f"10.0.0.{w + 1}"


def worker_mac(w: int) -> str:
    return f"02:00:00:00:00:{w + 1:02x}"


def ip_int(text: str) -> int:
    return int.from_bytes(bytes(int(part) for part in text.split(".")), "big")


def mac_int(text: str) -> int:
    return int(text.replace(":", ""), 16)


CELLS = 256      # INA_CELLS of the in-process programs: a job of pool P takes 2P + 2 of them


@lru_cache(maxsize=None)
def ina_program(k: int, cells: int = CELLS) -> dict:
    return compile_file(str(INA_P4), defines={"INA_K": str(k), "INA_CELLS": str(cells)}).bmv2


def action_params(sw: Switch, action: str, **named: int) -> tuple[int, ...]:
    """The action's parameters in the program's order, from names (the JSON's runtime_data)."""
    for entry in sw.program.doc["actions"]:
        if entry["name"] == action or entry["name"].endswith("." + action):
            order = [p["name"] for p in entry["runtime_data"]]
            assert sorted(order) == sorted(named), f"{action} takes {order}, given {named}"
            return tuple(named[name] for name in order)
    raise AssertionError(f"the program has no action {action}")


@dataclass(frozen=True)
class Member:
    """One child of a switch's job: a worker or a child switch, as the switch reaches it."""

    port: int
    mac: str
    ip: str


def new_ina_switch(k: int, aggregator_ip: str, cells: int = CELLS) -> Switch:
    sw = Switch(ina_program(k, cells))
    sw.table_add("ina_aggregator_addresses", [ExactKey(ip_int(aggregator_ip))],
                 "ina_aggregate_here")
    return sw


def add_job(sw: Switch, aggregator_ip: str, job: int, members: list[Member], *, pool_size: int,
            result_count: int, base: int = 0, parent_ip: str | None = None,
            child_index: int = 0, cells: int = CELLS) -> None:
    """Job entries on one switch: member i is worker id i; root job unless a parent is given.
    ValueError when the job's cells do not fit the program's (its MAX round would go
    unanswered)."""
    end = base + pool_cells(pool_size)
    if end > cells:
        raise ValueError(f"a pool of {pool_size} slots at cell {base} needs cells up to "
                         f"{end - 1}; the in-process ina.p4 has {cells} (INA_CELLS)")
    keys = [ExactKey(ip_int(aggregator_ip)), ExactKey(job)]
    common = dict(base=base, pool_size=pool_size, n=len(members), mgid=job + 1,
                  result_count=result_count)
    if parent_ip is None:
        sw.table_add("ina_jobs", keys, "ina_root_job",
                     action_params(sw, "ina_root_job", **common))
    else:
        sw.table_add("ina_jobs", keys, "ina_child_job",
                     action_params(sw, "ina_child_job", **common, parent=ip_int(parent_ip),
                                   child_index=child_index))
    for w, member in enumerate(members):
        sw.table_add("ina_workers", [ExactKey(job), ExactKey(w)], "ina_worker_port",
                     action_params(sw, "ina_worker_port", port=member.port))
        sw.table_add("ina_result_addresses", [ExactKey(job), ExactKey(w)], "ina_address_result",
                     action_params(sw, "ina_address_result", dstMac=mac_int(member.mac),
                                   dstAddr=ip_int(member.ip)))
    sw.mc_group_set(job + 1, [(member.port, w) for w, member in enumerate(members)])


def ina_switch(k: int, *, job: int, n: int, pool_size: int, base: int = 0) -> Switch:
    """One switch running ina.p4 with one flat job of n workers (worker w on port w + 1), with
    CELLS cells or as many as the job needs."""
    cells = max(CELLS, base + pool_cells(pool_size))
    sw = new_ina_switch(k, AGGREGATOR_IP, cells)
    add_job(sw, AGGREGATOR_IP, job, [Member(w + 1, worker_mac(w), worker_ip(w)) for w in range(n)],
            pool_size=pool_size, result_count=n, base=base, cells=cells)
    return sw


@dataclass
class LinkStats:
    sent: int = 0
    dropped: int = 0
    not_for_worker: int = 0


@dataclass
class Attachment:
    """Where a worker sits: its addresses, its switch port, the aggregator it sends to."""

    ip: str
    mac: str
    switch: str
    port: int
    aggregator_ip: str
    switch_mac: str


class LossyNetwork:
    """Switches and worker sessions joined by lossy links; runs until every session is done."""

    def __init__(self, *, loss: float, seed: int):
        self.loss = loss
        self.rng = random.Random(seed)
        self.now = 0.0
        self.stats = LinkStats()
        self.switches: dict[str, Switch] = {}
        self.sessions: list[InaSession] = []
        self.attachments: list[Attachment] = []
        self._peer: dict[tuple[str, int], tuple[str, int]] = {}
        self._events: list = []
        self._seq = 0
        self._ident = 0

    def add_switch(self, name: str, sw: Switch) -> None:
        self.switches[name] = sw

    def link(self, a: str, a_port: int, b: str, b_port: int) -> None:
        self._peer[(a, a_port)] = (b, b_port)
        self._peer[(b, b_port)] = (a, a_port)

    def add_worker(self, session: InaSession, where: Attachment) -> None:
        index = len(self.sessions)
        self.sessions.append(session)
        self.attachments.append(where)
        self.link(f"worker{index}", 0, where.switch, where.port)

    def _push(self, when: float, node: str, port: int, frame: bytes | None) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, node, port, frame))

    def _transmit(self, node: str, port: int, frame: bytes) -> None:
        """Put a frame on the link behind (node, port); it may be lost."""
        self.stats.sent += 1
        if self.rng.random() < self.loss:
            self.stats.dropped += 1
        elif (node, port) in self._peer:
            self._push(self.now + LATENCY, *self._peer[(node, port)], frame)

    def _apply(self, w: int, step: Step) -> None:
        at = self.attachments[w]
        for payload in step.send:
            self._ident = (self._ident + 1) & 0xFFFF
            frame = build_udp_frame(UdpFrame(
                src_mac=at.mac, dst_mac=at.switch_mac, src_ip=at.ip, dst_ip=at.aggregator_ip,
                src_port=INA_UDP_PORT, dst_port=INA_UDP_PORT, payload=payload,
                ident=self._ident))
            self._transmit(f"worker{w}", 0, frame)
        if step.deadline is not None:
            self._push(step.deadline, f"worker{w}", -1, None)      # a timer

    def run(self, starts: list[Step]) -> None:
        for w, step in enumerate(starts):
            self._apply(w, step)
        while self._events and not all(s.done for s in self.sessions):
            self.now, _, node, port, frame = heapq.heappop(self._events)
            if node in self.switches:
                for out_port, out in self.switches[node].receive(port, frame):
                    self._transmit(node, out_port, out)
                continue
            w = int(node.removeprefix("worker"))
            if frame is None:
                self._apply(w, self.sessions[w].timeout(self.now))
                continue
            try:
                parsed = parse_udp_frame(frame)
            except FrameError:
                self.stats.not_for_worker += 1
                continue
            if parsed.dst_ip != self.attachments[w].ip or parsed.dst_port != INA_UDP_PORT:
                self.stats.not_for_worker += 1
                continue
            self._apply(w, self.sessions[w].receive(parsed.payload, self.now))


def star_network(sw: Switch, sessions: list[InaSession], *, loss: float,
                 seed: int) -> LossyNetwork:
    """The flat job of `ina_switch`: session w is worker w on port w + 1."""
    net = LossyNetwork(loss=loss, seed=seed)
    net.add_switch("s0", sw)
    for w, session in enumerate(sessions):
        net.add_worker(session, Attachment(worker_ip(w), worker_mac(w), "s0", w + 1,
                                           AGGREGATOR_IP, SWITCH_MAC))
    return net


def tree_network(k: int, *, job: int, leaves: int, per_leaf: int, pool_size: int,
                 sessions: list[InaSession], loss: float, seed: int) -> LossyNetwork:
    """A root switch over `leaves` leaf switches, each with `per_leaf` workers.

    Leaf i (aggregator 10.0.(i+1).254) reaches the root (10.0.100.254) on its port per_leaf + 1;
    the root reaches leaf i on port i + 1. Session leaf·per_leaf + j is worker j of leaf i.
    """
    net = LossyNetwork(loss=loss, seed=seed)
    root_ip, root_mac = "10.0.100.254", "02:00:00:00:64:00"
    leaf_ip = [f"10.0.{i + 1}.254" for i in range(leaves)]
    leaf_mac = [f"02:00:00:00:{i + 1:02x}:00" for i in range(leaves)]
    total = leaves * per_leaf
    root = new_ina_switch(k, root_ip)
    add_job(root, root_ip, job, [Member(i + 1, leaf_mac[i], leaf_ip[i]) for i in range(leaves)],
            pool_size=pool_size, result_count=total)
    net.add_switch("root", root)
    for i in range(leaves):
        leaf = new_ina_switch(k, leaf_ip[i])
        uplink = per_leaf + 1
        leaf.table_add("ipv4_lpm", [LpmKey(ip_int(root_ip), 32)], "ipv4_forward",
                       action_params(leaf, "ipv4_forward", dstAddr=mac_int(root_mac),
                                     port=uplink))
        members = [Member(j + 1, f"02:00:00:00:{i + 1:02x}:{j + 1:02x}", f"10.0.{i + 1}.{j + 1}")
                   for j in range(per_leaf)]
        add_job(leaf, leaf_ip[i], job, members, pool_size=pool_size, result_count=total,
                parent_ip=root_ip, child_index=i)
        net.add_switch(f"leaf{i}", leaf)
        net.link(f"leaf{i}", uplink, "root", i + 1)
        for j, member in enumerate(members):
            net.add_worker(sessions[i * per_leaf + j],
                           Attachment(member.ip, member.mac, f"leaf{i}", member.port,
                                      leaf_ip[i], leaf_mac[i]))
    return net
