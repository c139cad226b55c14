"""A lossy in-process network of ina.p4 switches and protocol-following test workers.

Test-only. `ProtocolWorker` follows docs/protocol.md §4–5 in the simplest way that is still faithful
(window of pool_size positions continuing across calls, a MAX round before each call with
alternating versions, retransmit-on-timeout with the retx flag, ignore results not in flight);
it is a reference for the protocol, not the product's host agent (`hosts/`). `LossyNet` moves
packets between workers and `p4switch.runtime.Switch` objects, dropping each with a seeded
probability; when nothing is in flight, every worker's timers fire (the only timing model needed
to exercise retransmission). The switches do all the aggregation.
"""

from __future__ import annotations

import random
import struct
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, LpmKey, Switch

from .packets import (CONTRIB, MAX_CONTRIB, MAX_RESULT, RESULT, Endpoint, float32_bits,
                      ina_packet)
from .stfgen import P4SRC

HEADER = struct.Struct("!BBHBBHIHxx")
HEADER_OFFSET = 14 + 20 + 8


@lru_cache(maxsize=None)
def ina_config(k: int) -> dict:
    return compile_file(str(P4SRC / "ina.p4"), defines={"INA_K": str(k), "INA_CELLS": "256"}).bmv2


def new_switch(k: int, aggregator: Endpoint) -> Switch:
    sw = Switch(ina_config(k))
    sw.table_add("ina_aggregator_addresses", [ExactKey(aggregator.addr)], "ina_aggregate_here")
    return sw


def add_job(sw: Switch, aggregator: Endpoint, job: int, *, base: int, pool: int,
            members: list[tuple[int, Endpoint]], result_count: int,
            parent: Endpoint | None = None, child_index: int = 0) -> None:
    """A job whose member i (worker id i) is reached through (port, endpoint) = members[i]."""
    n = len(members)
    if parent is None:
        sw.table_add("ina_jobs", [ExactKey(aggregator.addr), ExactKey(job)], "ina_root_job",
                     (base, pool, n, job, result_count))
    else:
        sw.table_add("ina_jobs", [ExactKey(aggregator.addr), ExactKey(job)], "ina_child_job",
                     (base, pool, n, job, result_count, parent.addr, child_index))
    for w, (port, ep) in enumerate(members):
        sw.table_add("ina_workers", [ExactKey(job), ExactKey(w)], "ina_worker_port", (port,))
        sw.table_add("ina_result_addresses", [ExactKey(job), ExactKey(w)], "ina_address_result",
                     (ep.mac, ep.addr))
    sw.mc_group_set(job, [(port, w) for w, (port, _) in enumerate(members)])


def add_route(sw: Switch, addr: int, prefix: int, next_hop_mac: int, port: int) -> None:
    sw.table_add("ipv4_lpm", [LpmKey(addr, prefix)], "ipv4_forward", (next_hop_mac, port))


@dataclass
class ProtocolWorker:
    """One worker of one job: all-reduces `calls` (a list of int vectors) in order."""

    wid: int
    me: Endpoint
    aggregator: Endpoint      # the aggregator address this worker sends to (next hop: its MAC)
    job: int
    pool: int
    k: int
    calls: list[list[int]]
    maxima: list[int]         # per call: the float32 bit pattern this worker offers in MAX
    results: list[list[int]] = field(default_factory=list)   # per call: the summed vector
    max_results: list[int] = field(default_factory=list)
    call: int = 0
    phase: str = "max"
    position_base: int = 0    # position of chunk 0 of the current call
    sent: int = 0             # chunks of the current call sent so far
    in_flight: dict = field(default_factory=dict)            # chunk -> packet
    got: dict = field(default_factory=dict)                  # chunk -> values
    ident: int = 0

    @property
    def done(self) -> bool:
        return self.call == len(self.calls)

    def chunks(self) -> int:
        return (len(self.calls[self.call]) + self.k - 1) // self.k

    def _packet(self, kind: int, slot: int, ver: int, chunk: int, values: list[int]) -> bytes:
        self.ident = (self.ident + 1) & 0xFFFF
        return ina_packet(self.me, self.aggregator, ident=self.ident, kind=kind, job=self.job,
                          worker=self.wid, slot=slot, ver=ver, chunk=chunk, values=values)

    def start(self) -> list[bytes]:
        return self._start_call() if not self.done else []

    def _start_call(self) -> list[bytes]:
        self.phase, self.sent, self.got, self.in_flight = "max", 0, {}, {}
        values = [self.maxima[self.call]] * self.k
        packet = self._packet(MAX_CONTRIB, 0, self.call % 2, 0, values)
        self.in_flight = {"max": packet}
        return [packet]

    def _fill_window(self) -> list[bytes]:
        out = []
        vector = self.calls[self.call]
        while self.sent < self.chunks() and (self.sent < self.pool or
                                             (self.sent - self.pool) in self.got):
            c = self.sent
            p = self.position_base + c
            chunk = vector[c * self.k:(c + 1) * self.k]
            chunk = chunk + [0] * (self.k - len(chunk))
            packet = self._packet(CONTRIB, p % self.pool, (p // self.pool) % 2, c, chunk)
            self.in_flight[c] = packet
            out.append(packet)
            self.sent += 1
        return out

    def on_packet(self, packet: bytes) -> list[bytes]:
        kind, flags, job, worker, _, slot, chunk, _ = HEADER.unpack_from(packet, HEADER_OFFSET)
        values = list(struct.unpack_from(f"!{self.k}I", packet, HEADER_OFFSET + HEADER.size))
        if self.done or job != self.job or worker != self.wid:
            return []
        ver = flags & 1
        if kind == MAX_RESULT and self.phase == "max" and ver == self.call % 2:
            self.max_results.append(values[0])
            self.phase, self.in_flight = "data", {}
            return self._fill_window()
        if kind != RESULT or self.phase != "data" or chunk not in self.in_flight:
            return []               # a duplicate or stale result
        p = self.position_base + chunk
        if (slot, ver) != (p % self.pool, (p // self.pool) % 2):
            return []
        del self.in_flight[chunk]
        self.got[chunk] = values
        if len(self.got) == self.chunks():
            total = [v for c in range(self.chunks()) for v in self.got[c]]
            self.results.append(total[:len(self.calls[self.call])])
            self.position_base += self.chunks()
            self.call += 1
            return self.start()
        return self._fill_window()

    def on_timeout(self) -> list[bytes]:
        """Every in-flight packet again, with the retx flag."""
        out = []
        for packet in self.in_flight.values():
            flags_at = HEADER_OFFSET + 1
            out.append(packet[:flags_at] + bytes([packet[flags_at] | 0x02]) + packet[flags_at + 1:])
        return out


class LossyNet:
    """Workers and switches joined by links that drop each packet with probability `loss`."""

    def __init__(self, seed: int, loss: float):
        self.rng = random.Random(seed)
        self.loss = loss
        self.peer: dict[tuple[str, int], tuple[str, int]] = {}
        self.switches: dict[str, Switch] = {}
        self.workers: dict[str, ProtocolWorker] = {}
        self.queue: deque = deque()
        self.delivered = self.dropped = self.timeouts = 0

    def link(self, a: tuple[str, int], b: tuple[str, int]) -> None:
        self.peer[a] = b
        self.peer[b] = a

    def _send(self, src: tuple[str, int], packet: bytes) -> None:
        if src in self.peer:
            self.queue.append((self.peer[src], packet))

    def run(self, max_steps: int = 200_000) -> None:
        for name, w in self.workers.items():
            for packet in w.start():
                self._send((name, 0), packet)
        for _ in range(max_steps):
            if not self.queue:
                pending = [n for n, w in self.workers.items() if not w.done]
                if not pending:
                    return
                self.timeouts += 1
                for name in pending:
                    for packet in self.workers[name].on_timeout():
                        self._send((name, 0), packet)
                continue
            (node, port), packet = self.queue.popleft()
            if self.rng.random() < self.loss:
                self.dropped += 1
                continue
            self.delivered += 1
            if node in self.switches:
                for out_port, out in self.switches[node].receive(port, packet):
                    self._send((node, out_port), out)
            else:
                for out in self.workers[node].on_packet(packet):
                    self._send((node, 0), out)
        raise AssertionError(f"no progress after {max_steps} steps")


def maxima_for(vectors: list[list[int]]) -> list[int]:
    """What a worker offers in the MAX round: its largest |x| as a float32 pattern."""
    return [float32_bits(float(max(abs(v) for v in vector))) for vector in vectors]
