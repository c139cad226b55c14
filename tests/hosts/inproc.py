"""n InaSessions talking to the real p4src/ina.p4 in-process, over lossy links, in virtual time.

Test-only harness. Worker w sits on switch port w + 1 (IPv4 10.0.0.(w+1)); the aggregator address
is 10.0.0.254. The job is set up with the runtime API alone (what the controller will later do
over P4Runtime), with action parameters bound by name from the program's JSON. Packets are framed
with hosts.framing; each transmission is dropped with a seeded probability; retransmission timers
run on a virtual clock (an event heap), so loss costs no wall-clock time.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hosts.framing import FrameError, UdpFrame, build_udp_frame, parse_udp_frame
from hosts.ina_session import InaSession, Step
from hosts.ina_wire import INA_UDP_PORT
from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, Switch

INA_P4 = Path(__file__).resolve().parents[2] / "p4src" / "ina.p4"
AGGREGATOR_IP = "10.0.0.254"
SWITCH_MAC = "02:00:00:00:01:00"
LATENCY = 10e-6


def worker_ip(w: int) -> str:
    return f"10.0.0.{w + 1}"


def worker_mac(w: int) -> str:
    return f"02:00:00:00:00:{w + 1:02x}"


@lru_cache(maxsize=None)
def ina_program(k: int) -> dict:
    return compile_file(str(INA_P4), defines={"INA_K": str(k), "INA_CELLS": "256"}).bmv2


def action_params(sw: Switch, action: str, **named: int) -> tuple[int, ...]:
    """The action's parameters in the program's order, from names (the JSON's runtime_data)."""
    for entry in sw.program.doc["actions"]:
        if entry["name"] == action or entry["name"].endswith("." + action):
            order = [p["name"] for p in entry["runtime_data"]]
            assert sorted(order) == sorted(named), f"{action} takes {order}, given {named}"
            return tuple(named[name] for name in order)
    raise AssertionError(f"the program has no action {action}")


def ip_int(text: str) -> int:
    return int.from_bytes(bytes(int(part) for part in text.split(".")), "big")


def mac_int(text: str) -> int:
    return int(text.replace(":", ""), 16)


def ina_switch(k: int, *, job: int, n: int, pool_size: int, base: int = 0) -> Switch:
    """A switch running ina.p4 with one flat job of n workers set up."""
    sw = Switch(ina_program(k))
    agg = ip_int(AGGREGATOR_IP)
    sw.table_add("ina_aggregator_addresses", [ExactKey(agg)], "ina_aggregate_here")
    sw.table_add("ina_jobs", [ExactKey(agg), ExactKey(job)], "ina_root_job",
                 action_params(sw, "ina_root_job", base=base, pool_size=pool_size, n=n,
                               mgid=job + 1, result_count=n))
    for w in range(n):
        sw.table_add("ina_workers", [ExactKey(job), ExactKey(w)], "ina_worker_port",
                     action_params(sw, "ina_worker_port", port=w + 1))
        sw.table_add("ina_result_addresses", [ExactKey(job), ExactKey(w)], "ina_address_result",
                     action_params(sw, "ina_address_result", dstMac=mac_int(worker_mac(w)),
                                   dstAddr=ip_int(worker_ip(w))))
    sw.mc_group_set(job + 1, [(w + 1, w) for w in range(n)])
    return sw


@dataclass
class LinkStats:
    sent: int = 0
    dropped: int = 0
    not_for_worker: int = 0


class LossyFabric:
    """Runs sessions against one switch until every session is done (or one raises)."""

    def __init__(self, sw: Switch, sessions: list[InaSession], *, loss: float, seed: int):
        self.sw, self.sessions, self.loss = sw, sessions, loss
        self.rng = random.Random(seed)
        self.now = 0.0
        self.stats = LinkStats()
        self._events: list = []
        self._seq = 0
        self._ident = 0

    def _push(self, when: float, kind: str, *data) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, kind, data))

    def _apply(self, w: int, step: Step) -> None:
        for payload in step.send:
            self._ident = (self._ident + 1) & 0xFFFF
            frame = build_udp_frame(UdpFrame(
                src_mac=worker_mac(w), dst_mac=SWITCH_MAC, src_ip=worker_ip(w),
                dst_ip=AGGREGATOR_IP, src_port=INA_UDP_PORT, dst_port=INA_UDP_PORT,
                payload=payload, ident=self._ident))
            self._transmit(self.now + LATENCY, "switch", w + 1, frame)
        if step.deadline is not None:
            self._push(step.deadline, "timer", w)

    def _transmit(self, when: float, kind: str, port: int, frame: bytes) -> None:
        self.stats.sent += 1
        if self.rng.random() < self.loss:
            self.stats.dropped += 1
        else:
            self._push(when, kind, port, frame)

    def run(self, starts: list[Step]) -> None:
        for w, step in enumerate(starts):
            self._apply(w, step)
        while self._events and not all(s.done for s in self.sessions):
            self.now, _, kind, data = heapq.heappop(self._events)
            if kind == "timer":
                w = data[0]
                self._apply(w, self.sessions[w].timeout(self.now))
            elif kind == "switch":
                for port, out in self.sw.receive(*data):
                    self._transmit(self.now + LATENCY, "worker", port, out)
            else:
                port, raw = data
                w = port - 1
                try:
                    frame = parse_udp_frame(raw)
                except FrameError:
                    self.stats.not_for_worker += 1
                    continue
                if frame.dst_ip != worker_ip(w) or frame.dst_port != INA_UDP_PORT:
                    self.stats.not_for_worker += 1
                    continue
                self._apply(w, self.sessions[w].receive(frame.payload, self.now))
