"""What the aggregation-job installers share: the sessions with switches running ina.p4, what each
switch already holds, reading cells and counters, and undoing writes.

`InaSwitches` is the base of `controller.ina_control.InaJobs` (flat jobs, one aggregating switch)
and `controller.trees.TreeJobs` (trees). Both place jobs on the same switches and must agree on
which cells, multicast groups and aggregator addresses are taken, so that knowledge lives here
once: it is read from the switch itself (the `ina_jobs` and `ina_aggregator_addresses` tables)
the first time a switch is used, so a restarted controller, or the other installer, never hands
out the same cells or group twice. What differs (one switch vs. a tree, planning, write order)
stays in the two installers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Mapping, TypeVar

from p4.v1 import p4runtime_pb2

from controller import entities
from controller.client import DELETE, MAX_BATCH, MODIFY, SwitchClient
from controller.errors import ControllerError, P4RuntimeError
from controller.ina_jobs import (FIRST_JOB_GROUP, JOB_COUNTERS, MAX_GROUP, OWNER_REGISTER,
                                 PENDING_REGISTER, SEEN_REGISTER, SHARED_POOL, CellPool, Entry,
                                 InaProgram, JobRefused, shared_pool_pairs)
from topologies.model import Topology

Progress = Callable[[str], None]
Plan = TypeVar("Plan")


def quiet(_: str) -> None:
    """The default progress sink: says nothing."""


@dataclass(frozen=True)
class CellState:
    """One register cell of the pool as read: the worker bitmap, the missing count, the sums."""

    cell: int
    seen: int
    pending: int
    values: tuple[int, ...]   # signed int32 per lane

    @property
    def complete(self) -> bool:
        return self.pending == 0 and self.seen != 0


@dataclass
class SwitchState:
    """What one switch holds, as far as job placement cares."""

    program: InaProgram
    pool: CellPool
    groups: dict[int, int]        # job id -> mgid
    addresses: set[str]           # aggregator addresses present
    shared: tuple[int, int] | None = None    # the hashed jobs' pool: (first cell, pairs)

    def free_group(self, job_id: int, where: str = "") -> int:
        """The lowest job multicast group id not in use; `where` ends the refusal's reason."""
        used = set(self.groups.values())
        for mgid in range(FIRST_JOB_GROUP, MAX_GROUP + 1):
            if mgid not in used:
                return mgid
        raise JobRefused(job_id, f"no free multicast group id{where}")


def read_switch_state(client: SwitchClient) -> SwitchState:
    """Job ranges, groups and aggregator addresses the switch already holds."""
    program = InaProgram.from_p4info(client.index)
    state = SwitchState(program, CellPool(program.cells), {}, set())
    fresh = client.take_fresh_pipeline()
    hashed = set()
    if _has_table(client.index, "ina_sharing"):      # hashed jobs and their shared pool
        for view in client.read_table("ina_sharing"):
            hashed.add(view.match["hdr.ina.job"][0])
            state.shared = (view.params["pool_base"], view.params["pool_pairs"])
    if state.shared is not None:
        state.pool.reserve(SHARED_POOL, state.shared[0], 2 * state.shared[1])
    for view in client.read_table("ina_jobs"):
        job_id, p = view.match["hdr.ina.job"][0], view.params
        state.pool.reserve(job_id, p["base"],
                           2 if job_id in hashed else 2 * p["pool_size"] + 2)
        state.groups[job_id] = p["mgid"]
    for view in client.read_table("ina_aggregator_addresses"):
        value = view.match["hdr.ipv4.dstAddr"][0]
        state.addresses.add(".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0)))
    # cells are known zero only on a pipeline this session committed, before any job (a job
    # found there may have run and been removed by someone else)
    state.pool.fresh = fresh and not state.pool.ranges
    return state


class InaSwitches(Generic[Plan]):
    """Sessions with the switches of a network, what each holds (read once) and the plans
    installed through this object. `clients` maps switch name -> a session whose pipeline
    (ina.p4) is already pushed; use `Fabric.clients`."""

    def __init__(self, topology: Topology, clients: Mapping[str, SwitchClient], *,
                 progress: Progress = quiet):
        self.topology = topology
        self.clients = clients
        self.progress = progress
        self.plans: dict[int, Plan] = {}
        self._switches: dict[str, SwitchState] = {}

    def _client(self, switch: str) -> SwitchClient:
        client = self.clients.get(switch)
        if client is None:
            raise ControllerError(f"no session with switch {switch!r}")
        if client.index is None:
            raise ControllerError(f"{switch}: push or adopt the ina.p4 pipeline first")
        return client

    def _state(self, switch: str) -> SwitchState:
        if switch not in self._switches:
            self._switches[switch] = read_switch_state(self._client(switch))
        return self._switches[switch]

    def program(self, switch: str) -> InaProgram:
        return self._state(switch).program

    def _plan(self, job_id: int) -> Plan:
        try:
            return self.plans[job_id]
        except KeyError:
            raise ControllerError(f"job {job_id} was not installed by this controller") from None

    def _refuse_taken_id(self, job_id: int, switch: str) -> None:
        if job_id in self._state(switch).groups or job_id in self.plans:
            raise JobRefused(job_id, f"a job with this id already runs on {switch}")

    def create_shared_pool(self, job_id: int, switch: str, pairs: int | None) -> None:
        """The shared pool of the switch's hashed jobs: cells allocated and cleared."""
        state = self._state(switch)
        if not isinstance(pairs, int) or pairs < 1:
            raise JobRefused(job_id, f"the first hashed job on {switch} sizes its shared pool: "
                                     f"give shared_pairs >= 1, got {pairs!r}")
        pairs = shared_pool_pairs(pairs)
        base = state.pool.allocate(SHARED_POOL, 2 * pairs)
        cells = range(base, base + 2 * pairs)
        if not state.pool.known_clean(cells) and \
                not clear_cells(self._client(switch), cells) and state.pool.any_dirty(cells):
            state.pool.release(SHARED_POOL, used=False)
            raise JobRefused(job_id, f"on {switch}: the shared pool's cells were used by a "
                                     "removed job and this switch cannot clear registers")
        state.pool.cleaned(cells)
        state.shared = (base, pairs)
        self.progress(f"{switch}: shared pool of {pairs} pairs in cells "
                      f"{base}..{base + 2 * pairs - 1}")

    def _job_counters(self, switch: str, job_id: int) -> dict[str, int]:
        """Packets per counter of docs/protocol.md §7 for this job on one switch."""
        client = self._client(switch)
        return {name: client.read_counter(name, job_id).get(job_id, (0, 0))[0]
                for name in JOB_COUNTERS}


def check_slot(job_id: int, pool_size: int, slot: int, version: int) -> None:
    if not 0 <= slot < pool_size or version not in (0, 1):
        raise ControllerError(f"job {job_id}: no slot {slot} version {version} "
                              f"(pool of {pool_size} slots, versions 0 and 1)")


def read_cell(client: SwitchClient, program: InaProgram, cell: int) -> CellState:
    """Any cell of the pool on one switch (also cells no job of ours owns: to check isolation)."""
    values = tuple(_signed32(client.read_register(name, cell)[cell])
                   for name in program.lane_registers(client.index))
    return CellState(cell=cell, seen=client.read_register(SEEN_REGISTER, cell)[cell],
                     pending=client.read_register(PENDING_REGISTER, cell)[cell], values=values)


def _signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


CLEARED_REGISTERS = (SEEN_REGISTER, PENDING_REGISTER, "ina_overflow", OWNER_REGISTER)


def clear_cells(client: SwitchClient, cells: range) -> bool:
    """Zero the scoreboard (member bitmap, pending count, overflow flag) of `cells` before a
    job uses them. Cells freed by a job removed mid-call keep its state: a new job's first
    contribution would be added to the old partial sum (pending != 0) or taken for a
    duplicate (its bit set). The sums and block maxima need no clearing: a cell's first
    contribution overwrites them (docs/protocol.md §3). False when the switch cannot write
    registers over P4Runtime (BMv2's PI answers UNIMPLEMENTED): nothing was cleared."""
    index = client.index
    names = [n for n in CLEARED_REGISTERS if _has_register(index, n)]
    if not names or not cells:
        return True
    try:                      # one update first: a switch without register writes says so once
        client.write([(MODIFY, entities.register_write(index, names[0], cells[0], 0))],
                     [f"register {names[0]}[{cells[0]}] = 0"])
    except P4RuntimeError as error:
        if error.code == "UNIMPLEMENTED" or any(u.code == "UNIMPLEMENTED"
                                                for u in error.updates):
            return False
        raise
    updates = [(MODIFY, entities.register_write(index, name, cell, 0))
               for name in names for cell in cells][1:]
    client.write(updates, [f"register {name}[{cell}] = 0" for name in names
                           for cell in cells][1:])
    return True


def clear_for_job(client: SwitchClient, pool, job_id: int, switch: str, cells: range) -> None:
    """Clear a new job's cells; JobRefused if they may hold a removed job's state and the
    switch cannot clear them (never a wrong sum). Cells known zero (`CellPool.known_clean`: a
    pipeline this controller committed, never used by a removed job) are not written: at
    fat-tree(40) that was 4 registers x 258 cells on each of 841 switches."""
    if pool.known_clean(cells):
        return
    if clear_cells(client, cells):
        pool.cleaned(cells)
    elif pool.any_dirty(cells):
        raise JobRefused(job_id, f"on {switch}: cells {cells.start}..{cells.stop - 1} were "
                                 f"used by a removed job and this switch cannot clear "
                                 f"registers over P4Runtime (UNIMPLEMENTED); push the "
                                 f"pipeline again to start from clean cells")


def release_owned_cells(client: SwitchClient, job_id: int, shared: tuple[int, int]) -> int:
    """Free every cell of the shared pool still owned by a chunk of `job_id` (hashed sharing,
    docs/protocol.md §3.3: a job that stopped mid-call, or whose last results never passed the
    switch, leaves owned cells behind). Returns how many; 0 when the switch cannot read or
    write registers over P4Runtime (its cells are then freed by the slots' next results)."""
    first, pairs = shared
    try:
        owners = client.read_register(OWNER_REGISTER)
    except (ControllerError, P4RuntimeError):
        return 0
    cells = [c for c in range(first, first + 2 * pairs) if owners.get(c, 0) >> 48 == job_id
             and owners.get(c, 0) != 0]
    if cells:
        client.write([(MODIFY, entities.register_write(client.index, OWNER_REGISTER, c, 0))
                      for c in cells], [f"register {OWNER_REGISTER}[{c}] = 0" for c in cells])
    return len(cells)


def _has_table(index, name: str) -> bool:
    try:
        index.table(name)
    except (KeyError, ValueError, ControllerError):
        return False
    return True


def _has_register(index, name: str) -> bool:
    try:
        index.register(name)
    except (KeyError, ValueError, ControllerError):
        return False
    return True


def delete_entry(client: SwitchClient, entry: Entry) -> None:
    table_entry = entities.table_entry(client.index, entry.table, entry.match, entry.action,
                                       entry.params)
    client.write([(DELETE, p4runtime_pb2.Entity(table_entry=table_entry))],
                 [entry.label or entry.table])


def delete_group(client: SwitchClient, mgid: int) -> None:
    client.write([(DELETE, entities.multicast_group(mgid, []))], [f"multicast group {mgid}"])


def insert_entries(client: SwitchClient, entries: list[Entry],
                   written: list[tuple[SwitchClient, Entry]]) -> None:
    """Insert `entries` in order, MAX_BATCH updates per WriteRequest, appending each entry the
    switch took to `written` (so a caller can undo them), also those of a failed batch that
    the switch did not report as failed; the failure is re-raised."""
    for start in range(0, len(entries), MAX_BATCH):
        batch = entries[start:start + MAX_BATCH]
        encoded = [entities.table_entry(client.index, e.table, e.match, e.action,
                                        e.params) for e in batch]
        try:
            client.insert_table_entries(encoded, [e.label or e.table for e in batch])
        except P4RuntimeError as error:
            failed = {u.index for u in error.updates}
            if failed:      # without per-update errors, assume nothing was written
                written += [(client, e) for i, e in enumerate(batch) if i not in failed]
            raise
        written += [(client, e) for e in batch]


def remove_entries(written: list[tuple[SwitchClient, Entry]]) -> None:
    """Delete a job's own entries, last written first. Aggregator addresses and their routes stay
    (other jobs may use them)."""
    for client, entry in reversed(written):
        if entry.table not in ("ina_aggregator_addresses", "ipv4_lpm"):
            delete_entry(client, entry)


def undo_quietly(written: list[tuple[SwitchClient, Entry]],
                 groups: list[tuple[SwitchClient, int]]) -> None:
    """Roll back a half-written job: its entries, last first, then its groups. Best effort: the
    original failure is what the caller must see."""
    for client, entry in reversed(written):
        _quietly(lambda: delete_entry(client, entry))
    for client, mgid in groups:
        _quietly(lambda: delete_group(client, mgid))


def _quietly(action: Callable[[], None]) -> None:
    try:
        action()
    except ControllerError:
        pass
