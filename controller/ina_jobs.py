"""Aggregation jobs as table entries: what `p4src/ina.p4` needs to run one all-reduce job.

Sans-I/O: `plan_job(topology, program, job, base, mgid)` turns a job (its id, its worker hosts,
the aggregating switch and its aggregator address, k, the pool size) into the exact entries
docs/protocol.md §2 asks for — the aggregator address, the job entry, one worker-port and one
result-address entry per worker, the job's multicast group (rid = worker id) and, on every other
switch, a /32 route towards the aggregator — or refuses it with a `JobRefused` that says why.
`controller.ina_control.InaJobs` writes the plan over P4Runtime; nothing here opens a channel.

What the program can hold is read from its P4Info, never assumed (`InaProgram`): k is the number
of `ina_value_<i>` lane registers, the cell pool is their size, the worker limit is the width of
the `ina_seen` bitmap, and the per-job counters have one cell per job id below `INA_JOBS`.
Cells are handed out first-fit by `CellPool`, one contiguous range of 2·pool_size + 2 per job
(static slices), or, for a job with hashed sharing (docs/protocol.md §3.3), its MAX pair alone
plus one shared pool per switch that every hashed job draws from (`SHARED_POOL`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from controller.errors import ControllerError, P4InfoError
from controller.p4info import P4InfoIndex
from controller.routing import Route, host_routes
from topologies.model import Topology

LANE_REGISTER = re.compile(r"(?:^|\.)ina_value_(\d+)$")
SEEN_REGISTER = "ina_seen"
PENDING_REGISTER = "ina_pending"
OWNER_REGISTER = "ina_owner"       # hashed sharing: the tag of the chunk owning a cell
SHARING_MODES = ("static", "hashed")
SHARED_POOL = -1                   # CellPool's key for the hashed jobs' shared pool
CONTRIBUTIONS_COUNTER = "ina_contributions"
# the per-job counters of docs/protocol.md §7, in the order reports list them
JOB_COUNTERS = ("ina_contributions", "ina_duplicates", "ina_results_multicast",
                "ina_results_unicast", "ina_partials_up", "ina_queries", "ina_nacks",
                "ina_drop_unknown_job",
                "ina_drop_bad_worker", "ina_drop_bad_slot", "ina_drop_bad_length",
                "ina_drop_bad_kind", "ina_fallbacks")
PENDING_LIMIT = 254      # `pending` is 8 bits and 255 means "waiting for the parent"
FIRST_JOB_GROUP = 1024   # multicast groups below this are left to ARP flooding (group = port)
MAX_GROUP = 0xFFFF       # `mgid` is bit<16> in the program


class JobRefused(ControllerError):
    """A job that cannot be installed as asked; the message names the job and the reason."""

    def __init__(self, job_id: int, reason: str):
        super().__init__(f"job {job_id}: refused: {reason}")
        self.job_id = job_id
        self.reason = reason


@dataclass(frozen=True)
class InaProgram:
    """The geometry of a compiled ina.p4, as its P4Info reveals it."""

    k: int              # values per packet (INA_K)
    cells: int          # cells in the shared pool (INA_CELLS)
    max_workers: int    # bits of the worker bitmap
    counter_jobs: int   # job ids below this have their own counter cell (INA_JOBS)

    @classmethod
    def from_p4info(cls, index: P4InfoIndex) -> "InaProgram":
        lanes = sorted((int(m.group(1)), r) for r in index.registers()
                       if (m := LANE_REGISTER.search(r.name)))
        if not lanes:
            raise P4InfoError("the program has no ina_value_<i> registers: it is not ina.p4")
        if [i for i, _ in lanes] != list(range(len(lanes))):
            raise P4InfoError("the ina_value_<i> registers are not numbered 0..k-1")
        seen = index.register(SEEN_REGISTER)
        contributions = index.counter(CONTRIBUTIONS_COUNTER)
        return cls(k=len(lanes), cells=seen.size,
                   max_workers=min(seen.bitwidth, PENDING_LIMIT),
                   counter_jobs=contributions.size - 1)

    def lane_registers(self, index: P4InfoIndex) -> list[str]:
        return [index.register(f"ina_value_{i}").name for i in range(self.k)]


def shared_pool_pairs(pairs: int) -> int:
    """The pairs a shared pool gets for `pairs` asked: the largest prime not above it (at
    least 1). The pool hashes (job, slot) with a CRC-32 modulo its pairs, and a CRC modulo a
    power of two keeps only its low bits, which consecutive slots of one job share: 32 slots
    hashed into 64 pairs used 16 of them, into 61 pairs 26 (about what a random hash gives)."""
    def prime(m: int) -> bool:
        return m >= 2 and all(m % d for d in range(2, int(m ** 0.5) + 1))
    best = max(1, pairs)
    while best > 2 and not prime(best):
        best -= 1
    return best


def pool_cells(pool_size: int) -> int:
    """Cells a pool of `pool_size` slots occupies on a switch: two versions per slot, plus the
    MAX round's pair."""
    return 2 * pool_size + 2


@dataclass(frozen=True)
class AggregationJob:
    """What every job has, flat (`InaJob`) or a tree (`controller.trees.TreeJob`): worker w is
    `workers[w]` (host names), hosts send k values per packet, each aggregating switch keeps a
    pool of `pool_size` slots."""

    job_id: int
    workers: tuple[str, ...]
    k: int
    pool_size: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "workers", tuple(self.workers))

    @property
    def cells(self) -> int:
        """Cells the job occupies per switch (`pool_cells`)."""
        return pool_cells(self.pool_size)


@dataclass(frozen=True)
class FallbackServer:
    """A job's host aggregator (docs/fallback.md): the switch sends contributions and queries
    for the slots it does not hold to this address and UDP port."""

    address: str
    port: int = 48880


@dataclass(frozen=True)
class InaJob(AggregationJob):
    """A flat job, aggregated on `switch` at `aggregator_ip` (pass every field by name).

    `pool_size` is what the switch holds; the workers may cycle through more slots
    (`worker_pool`, default the same) when slots pool_size.. go to a `fallback` host
    aggregator (docs/fallback.md)."""

    switch: str
    aggregator_ip: str
    worker_pool: int | None = None
    fallback: FallbackServer | None = None
    sharing: str = "static"       # "hashed": data chunks hash into the switch's shared pool

    @property
    def worker_slots(self) -> int:
        """The pool the workers use (their window's limit): slots the switch holds and more."""
        return self.pool_size if self.worker_pool is None else self.worker_pool

    @property
    def cells(self) -> int:
        """Cells of the job's own: its slice, or with hashed sharing its MAX pair alone."""
        return 2 if self.sharing == "hashed" else pool_cells(self.pool_size)


@dataclass(frozen=True)
class Entry:
    """One table entry of a plan, by names (what `SwitchClient.add_entry` takes)."""

    table: str
    match: dict
    action: str
    params: dict = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class JobPlan:
    """Everything one job writes: entries per switch, and the multicast group on its switch."""

    job: InaJob
    base: int
    mgid: int
    entries: dict[str, list[Entry]]           # switch -> entries, in write order
    replicas: tuple[tuple[int, int], ...]     # (port, rid = worker id) on `job.switch`

    def cell(self, slot: int, version: int) -> int:
        """Where slot `slot`, version `version` lives (docs/protocol.md §2)."""
        return self.base + 2 * slot + version

    def max_cell(self, version: int) -> int:
        return self.base + 2 * self.job.pool_size + version


def aggregator_address(topology: Topology, switch: str) -> str:
    """An IPv4 address for `switch`'s aggregator: in the hosts' subnet, counted down from its top
    by device id (10.0.0.254 for device 1 in 10.0.0.0/24), so hosts reach it without a gateway."""
    device = topology.switch(switch).device_id
    first = topology.hosts[0]
    network = ipaddress.IPv4Network(f"{first.ip}/{first.prefix_len}", strict=False)
    candidate = network.broadcast_address - device
    if candidate <= network.network_address or _is_host_address(topology, str(candidate)):
        raise ControllerError(f"no free aggregator address for {switch} in {network} "
                              f"({candidate} is taken or outside)")
    return str(candidate)


def _is_host_address(topology: Topology, address: str) -> bool:
    try:
        topology.host_by_ip(address)
    except KeyError:
        return False
    return True


def aggregator_mac(address: str) -> str:
    """The MAC hosts put on frames to an aggregator: 02:00 and the address, like host MACs.
    Switches do not check destination MACs; the RESULTs carry it back as their source."""
    return "02:00:" + ":".join(f"{b:02x}" for b in ipaddress.IPv4Address(address).packed)


class CellPool:
    """First-fit allocation of one switch's cells to jobs (ranges never overlap)."""

    def __init__(self, cells: int):
        self.cells = cells
        self.ranges: dict[int, tuple[int, int]] = {}   # job id -> (base, size)
        # cells a removed job used and nobody cleared since: their scoreboard may be stale
        # (known to this controller only; a fresh pipeline starts with every cell zero)
        self.dirty: set[int] = set()
        # every cell outside `ranges` and `dirty` is known to be zero: the pipeline was committed
        # by this controller's session and no job had cells before (read_switch_state)
        self.fresh = False

    def allocate(self, job_id: int, size: int) -> int:
        if job_id in self.ranges:
            raise JobRefused(job_id, "the job already has cells on this switch")
        start = 0
        for base, length in sorted(self.ranges.values()):
            if base - start >= size:
                break
            start = max(start, base + length)
        if start + size > self.cells:
            free = self.cells - sum(length for _, length in self.ranges.values())
            raise JobRefused(job_id, f"cells exhausted: the job needs {size} contiguous cells, "
                                     f"{free} of {self.cells} are free")
        self.ranges[job_id] = (start, size)
        return start

    def reserve(self, job_id: int, base: int, size: int) -> None:
        """Record a range already in use (a job found on the switch)."""
        self.ranges[job_id] = (base, size)

    def release(self, job_id: int, *, used: bool = True) -> None:
        """Free a job's range; `used`: the job ran, so its cells may hold state."""
        taken = self.ranges.pop(job_id, None)
        if taken is not None and used:
            self.dirty.update(range(taken[0], taken[0] + taken[1]))

    def any_dirty(self, cells: range) -> bool:
        return any(cell in self.dirty for cell in cells)

    def known_clean(self, cells: range) -> bool:
        """Whether `cells` are certainly zero (a fresh pipeline's, never used by a removed job):
        clearing them would write nothing new."""
        return self.fresh and not self.any_dirty(cells)

    def cleaned(self, cells: range) -> None:
        self.dirty.difference_update(cells)

    def largest_free(self) -> int:
        """The longest run of free cells (what the next job could get at most)."""
        best, start = 0, 0
        for base, length in sorted(self.ranges.values()):
            best = max(best, base - start)
            start = max(start, base + length)
        return max(best, self.cells - start)


def check_job_id(program: InaProgram, job_id: int) -> None:
    """Refuse a job id without its own cell in the per-job counters."""
    if not isinstance(job_id, int) or not 0 <= job_id < program.counter_jobs:
        raise JobRefused(job_id, f"job id must be in 0..{program.counter_jobs - 1} (INA_JOBS) "
                                 "so that its counters are its own")


def check_job(topology: Topology, program: InaProgram, job: InaJob) -> None:
    """Refuse a job that the topology or the program cannot hold; the reason says which limit."""
    refuse = lambda why: JobRefused(job.job_id, why)  # noqa: E731
    check_job_id(program, job.job_id)
    if job.k != program.k:
        raise refuse(f"k mismatch: the job's hosts send {job.k} values per packet, the program "
                     f"was compiled with INA_K={program.k}")
    n = len(job.workers)
    if not 1 <= n <= program.max_workers:
        raise refuse(f"{n} workers; the program's worker bitmap holds 1..{program.max_workers}")
    if len(set(job.workers)) != n:
        raise refuse("a host is listed twice among the workers")
    if not isinstance(job.pool_size, int) or not 1 <= job.pool_size <= 0xFFFF:
        raise refuse(f"pool size {job.pool_size!r} outside 1..65535")
    if job.cells > program.cells:
        raise refuse(f"a pool of {job.pool_size} slots needs {job.cells} cells, the program has "
                     f"{program.cells} (INA_CELLS)")
    try:
        topology.switch(job.switch)
    except (KeyError, ValueError):
        raise refuse(f"no switch named {job.switch!r} in topology {topology.name}") from None
    for worker in job.workers:
        try:
            topology.host(worker)
        except (KeyError, ValueError):
            raise refuse(f"worker {worker!r} is not a host of topology {topology.name}") from None
    try:
        ipaddress.IPv4Address(job.aggregator_ip)
    except ValueError:
        raise refuse(f"aggregator address {job.aggregator_ip!r} is not IPv4") from None
    if any(h.ip == job.aggregator_ip for h in topology.hosts):
        raise refuse(f"aggregator address {job.aggregator_ip} belongs to a host")
    check_fallback(topology, job)


def check_fallback(topology: Topology, job: InaJob) -> None:
    """Refuse workers' slots the switch would drop, and a host aggregator nobody can reach."""
    refuse = lambda why: JobRefused(job.job_id, why)  # noqa: E731
    slots = job.worker_slots
    if not isinstance(slots, int) or not job.pool_size <= slots <= 0xFFFF:
        raise refuse(f"the workers' pool {slots!r} must be {job.pool_size}..65535 (at least "
                     "the switch's pool)")
    if slots > job.pool_size and job.fallback is None:
        raise refuse(f"the workers use {slots} slots, the switch holds {job.pool_size}: slots "
                     f"{job.pool_size}..{slots - 1} would be dropped as bad slots; give the job "
                     "a host aggregator (fallback) or shrink the workers' pool")
    if job.sharing not in SHARING_MODES:
        raise refuse(f"sharing {job.sharing!r}: must be one of {', '.join(SHARING_MODES)}")
    if job.sharing == "hashed" and (job.fallback is None or slots != job.pool_size):
        raise refuse("hashed sharing needs a host aggregator (fallback) for the chunks that "
                     "find their cell taken, and no slots of the switch's own")
    if job.fallback is None:
        return
    server = job.fallback
    if not any(h.ip == server.address for h in topology.hosts):
        raise refuse(f"host aggregator {server.address} is not a host of topology "
                     f"{topology.name} (the switches route only to hosts)")
    if not isinstance(server.port, int) or not 1 <= server.port <= 0xFFFF:
        raise refuse(f"host aggregator port {server.port!r} outside 1..65535")


def plan_job(topology: Topology, program: InaProgram, job: InaJob, *, base: int,
             mgid: int, new_address: bool = True,
             shared: tuple[int, int] | None = None) -> JobPlan:
    """The entries of a checked job placed at `base` with multicast group `mgid`; a hashed
    job's `shared` pool is (first cell, pairs).

    `new_address` adds the aggregator address entry and the routes to it (the first job using
    that address on that switch); later jobs on the same address only add their own entries.
    """
    check_job(topology, program, job)
    if base < 0 or base + job.cells > program.cells:
        raise JobRefused(job.job_id, f"cells {base}..{base + job.cells - 1} are outside the "
                                     f"pool of {program.cells}")
    if not FIRST_JOB_GROUP <= mgid <= MAX_GROUP:
        raise JobRefused(job.job_id, f"multicast group {mgid} outside "
                                     f"{FIRST_JOB_GROUP}..{MAX_GROUP}")
    ports = {r.host: r.port for r in host_routes(topology)[job.switch]}
    n, jid, agg = len(job.workers), job.job_id, job.aggregator_ip
    # write order: workers and their addresses first, the job entry next, the address last,
    # so the switch never accepts a contribution it cannot answer
    entries: list[Entry] = []
    replicas = []
    for w, name in enumerate(job.workers):
        if name not in ports:
            raise JobRefused(jid, f"worker {name} cannot be reached from {job.switch}")
        host = topology.host(name)
        entries.append(Entry("ina_workers", {"hdr.ina.job": jid, "hdr.ina.worker": w},
                             "ina_worker_port", {"port": ports[name]},
                             f"job {jid} worker {w} ({name}) on port {ports[name]}"))
        entries.append(Entry("ina_result_addresses", {"hdr.ina.job": jid, "meta.ina.receiver": w},
                             "ina_address_result", {"dstMac": host.mac, "dstAddr": host.ip},
                             f"job {jid} results to worker {w} ({host.ip})"))
        replicas.append((ports[name], w))
    if job.fallback is not None:
        server = job.fallback
        entries.append(Entry("ina_fallback", {"hdr.ina.job": jid}, "ina_fall_back",
                             {"server": server.address, "port": server.port},
                             f"job {jid} slots {job.pool_size}..{job.worker_slots - 1} to "
                             f"{server.address}:{server.port}"))
    if job.sharing == "hashed":
        if shared is None or shared[1] < 1 or shared[0] < 0 or \
                shared[0] + 2 * shared[1] > program.cells:
            raise JobRefused(jid, f"shared pool {shared} is not inside the {program.cells} "
                                  f"cells")
        entries.append(Entry("ina_sharing", {"hdr.ina.job": jid}, "ina_share_pool",
                             {"pool_base": shared[0], "pool_pairs": shared[1]},
                             f"job {jid} hashed into the shared pool: {shared[1]} pairs "
                             f"from cell {shared[0]}"))
    entries.append(Entry("ina_jobs", {"hdr.ipv4.dstAddr": agg, "hdr.ina.job": jid},
                         "ina_root_job", {"base": base, "pool_size": job.pool_size, "n": n,
                                          "mgid": mgid, "result_count": n},
                         f"job {jid} at {agg}: cells {base}..{base + job.cells - 1}"))
    if new_address:
        entries.append(Entry("ina_aggregator_addresses", {"hdr.ipv4.dstAddr": agg},
                             "ina_aggregate_here", {}, f"aggregator address {agg}"))
    per_switch = {job.switch: entries}
    if new_address:
        for route in aggregator_routes(topology, job.switch, agg):
            per_switch.setdefault(route.switch, []).append(Entry(
                "ipv4_lpm", {"hdr.ipv4.dstAddr": (agg, 32)}, "ipv4_forward",
                {"dstAddr": route.dst_mac, "port": route.port},
                f"route to aggregator {agg} -> port {route.port}"))
    return JobPlan(job=job, base=base, mgid=mgid, entries=per_switch, replicas=tuple(replicas))


def aggregator_routes(topology: Topology, switch: str, address: str,
                      only: set[str] | None = None) -> list[Route]:
    """On every other switch that can reach `switch` (of `only`, if given), a /32 to its
    aggregator address through the lowest port one hop closer (the same rule as host routes)."""
    table = topology.switch_distances()
    # hops to `switch` from every switch (-1: unreachable), off the distance matrix: a search
    # per tree switch was ~13 ms at fat-tree(40), 841 of them per job
    hops = table.matrix[:, table.index[switch]].tolist()
    mac = aggregator_mac(address)
    routes = []
    for other in topology.switches:
        if other.name == switch or (only is not None and other.name not in only):
            continue
        here = hops[table.index[other.name]]
        if here < 0:
            continue
        # a neighbour host is never closer (it is one hop beyond `other`), so switches only
        closer = [nb for nb in topology.neighbours(other.name)
                  if nb.node in table.index and hops[table.index[nb.node]] == here - 1]
        routes.append(Route(other.name, switch, address, 32, closer[0].port, mac))
    return routes
