"""The test network and the STF writer shared by the generated STF tests of p4src/ina.p4
(tests/ina/stfgen.py, stf_tree.py): endpoints, the controller's table entries as STF commands,
and `StfBuilder`, which collects lines and tallies the counters each test must check.

The switch's MAC is 00:00:00:00:01:00 and its aggregator address 10.0.0.254; worker w of a job
sits on port w+1 at 10.0.(w+1).(w+1) with MAC 08:00:00:00:0w:ww (as in l3_forward.stf);
10.0.4.4 on port 4 is a host that takes part in no job.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from .packets import CONTRIB, NACK, QUERY, RESULT, Endpoint, ina_packet, ip, stf_hex

SWITCH_MAC = 0x000000000100
AGGREGATOR = Endpoint(SWITCH_MAC, ip("10.0.0.254"))
OTHER_JOBS = 1024           # the counter index of job ids >= INA_JOBS (default 1024)


@dataclass(frozen=True)
class Worker:
    id: int
    port: int
    mac: int
    addr: int

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.mac, self.addr)


def worker_on_port(worker_id: int, port: int) -> Worker:
    n = port
    return Worker(worker_id, port, 0x080000000000 | (n << 8) | (n << 4) | n, ip(f"10.0.{n}.{n}"))


W0, W1, W2 = (worker_on_port(w, w + 1) for w in range(3))
HOST4 = worker_on_port(0, 4)


class StfBuilder:
    """Collects STF lines, hands out IPv4 identifications, and tallies the counters to check."""

    def __init__(self, k: int, header: list[str]):
        self.k = k
        self.lines = [f"# {line}" if line else "#" for line in header]
        self.counters: collections.Counter = collections.Counter()
        self.zero_checks: list[tuple[str, int]] = []
        self.ident = 0

    def comment(self, *text: str) -> None:
        self.lines.append("")
        self.lines += [f"# {t}" for t in text]

    def cmd(self, text: str) -> None:
        self.lines.append(text)

    def send(self, port: int, packet: bytes) -> None:
        self.lines.append(f"packet {port} {stf_hex(packet)}")

    def expect(self, port: int, packet: bytes) -> None:
        self.lines.append(f"expect {port} {stf_hex(packet)} $")

    def count(self, counter: str, index: int, n: int = 1) -> None:
        self.counters[(counter, index)] += n

    def next_ident(self) -> int:
        self.ident += 1
        return self.ident

    # --- aggregation packets -----------------------------------------------------------------
    def contribute(self, w: Worker, job: int, slot: int, ver: int, values: list[int], *,
                   retx: bool = False, kind: int = CONTRIB, chunk: int | None = None) -> int:
        """Sends w's CONTRIB (or MAX_CONTRIB) to the aggregator; returns its identification."""
        assert len(values) == self.k
        ident = self.next_ident()
        chunk = slot if chunk is None else chunk
        self.send(w.port, ina_packet(w.endpoint, AGGREGATOR, ident=ident, kind=kind, job=job,
                                     worker=w.id, slot=slot, ver=ver, retx=retx, chunk=chunk,
                                     values=values))
        return ident

    def query(self, w: Worker, job: int, slot: int, ver: int, *,
              chunk: int | None = None) -> int:
        """Sends w's header-only QUERY for (slot, ver); returns its identification."""
        ident = self.next_ident()
        chunk = slot if chunk is None else chunk
        self.send(w.port, ina_packet(w.endpoint, AGGREGATOR, ident=ident, kind=QUERY, job=job,
                                     worker=w.id, slot=slot, ver=ver, retx=True, chunk=chunk,
                                     values=[]))
        return ident

    def expect_nack(self, w: Worker, job: int, slot: int, ver: int, *, ident: int,
                    chunk: int | None = None) -> None:
        """A header-only NACK to w: the cell lacks its contribution (count 0, retx cleared)."""
        self.expect_result(w, job, slot, ver, [], count=0, ident=ident, kind=NACK, chunk=chunk)

    def expect_result(self, w: Worker, job: int, slot: int, ver: int, values: list[int], *,
                      count: int, ident: int, kind: int = RESULT, chunk: int | None = None,
                      source: Endpoint = AGGREGATOR, retx: bool = False) -> None:
        """A RESULT addressed to w: from the aggregator, TTL 64, w's own id in `worker`.
        `retx`: it waited for a recovery (its cell took a retransmitted piece, or it answers
        a duplicate or a QUERY: docs/protocol.md §3)."""
        chunk = slot if chunk is None else chunk
        self.expect(w.port, ina_packet(source, w.endpoint, ident=ident, kind=kind, job=job,
                                       worker=w.id, slot=slot, ver=ver, chunk=chunk, count=count,
                                       values=values, retx=retx))

    def expect_multicast(self, job: int, slot: int, ver: int, values: list[int], *, ident: int,
                         workers: tuple = (), **fields) -> None:
        """The completing contribution's RESULT to every worker of the group (one replica each,
        count = n), and the counters a completed cell moves: n contributions, one multicast."""
        workers = workers or (W0, W1, W2)
        for w in workers:
            self.expect_result(w, job, slot, ver, values, count=len(workers), ident=ident,
                               **fields)
        self.count("ina_contributions", job, len(workers))
        self.count("ina_results_multicast", job)

    def finish(self) -> str:
        self.lines.append("")
        self.lines.append("wait")
        self.lines.append("# every counter this test moved, and some it must not have moved")
        for (name, index), n in sorted(self.counters.items()):
            self.lines.append(f"check_counter {name}({index}) packets == {n}")
        for name, index in self.zero_checks:
            if (name, index) not in self.counters:
                self.lines.append(f"check_counter {name}({index}) packets == 0")
        return "\n".join(self.lines) + "\n"


def routes(b: StfBuilder) -> None:
    for host in (W0, W1, W2, HOST4):
        net = host.addr & 0xFFFFFF00
        b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{net:08X}/24 "
              f"ipv4_forward(dstAddr:0x{host.mac:012X}, port:{host.port})")


def aggregator_address(b: StfBuilder) -> None:
    b.cmd(f"add ina_aggregator_addresses hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} "
          "ina_aggregate_here()")


def root_job(b: StfBuilder, job: int, *, base: int, pool: int, workers: list[Worker],
             n: int | None = None, first_node: int, in_table: list[Worker] | None = None) -> int:
    """The job's table entries and multicast group (one node per worker, rid = worker id).

    Returns the next free multicast node handle."""
    n = len(workers) if n is None else n
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{job} "
          f"ina_root_job(base:{base}, pool_size:{pool}, n:{n}, mgid:{job}, result_count:{n})")
    node = worker_entries(b, job, workers if in_table is None else in_table, first_node)
    return node


def worker_entries(b: StfBuilder, job: int, workers: list[Worker], first_node: int) -> int:
    node = first_node
    b.cmd(f"mc_mgrp_create {job}")
    for w in workers:
        b.cmd(f"add ina_workers hdr.ina.job:{job} hdr.ina.worker:{w.id} "
              f"ina_worker_port(port:{w.port})")
        b.cmd(f"add ina_result_addresses hdr.ina.job:{job} meta.ina.receiver:{w.id} "
              f"ina_address_result(dstMac:0x{w.mac:012X}, dstAddr:0x{w.addr:08X})")
        b.cmd(f"mc_node_create {w.id} {w.port}")
        b.cmd(f"mc_node_associate {job} {node}")
        node += 1
    return node


def lanes(k: int, first: list[int], rest) -> list[int]:
    """A k-value vector: the given first lanes, then rest(i) for the remaining lanes i."""
    return first + [rest(i) for i in range(len(first), k)]

