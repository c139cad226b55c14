"""Aggregation jobs over P4Runtime: install, remove and watch them on running switches.

`InaJobs` holds one `SwitchClient` per switch (a `Fabric`'s, or any mapping) and writes the plans
of `controller.ina_jobs`. It learns what each switch already holds from the switch itself (the
`ina_jobs` and `ina_aggregator_addresses` tables) before placing a new job, so a controller
restarted against running switches never hands out the same cells or multicast group twice.
A job whose writes fail half-way is rolled back, so a refusal changes nothing.
Monitoring reads the per-job counters and the registers of one slot (docs/protocol.md §2, §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from p4.v1 import p4runtime_pb2

from controller import entities
from controller.client import DELETE, SwitchClient
from controller.errors import ControllerError
from controller.ina_jobs import (FIRST_JOB_GROUP, JOB_COUNTERS, MAX_GROUP, PENDING_REGISTER,
                                 SEEN_REGISTER, CellPool, Entry, InaJob, InaProgram, JobPlan,
                                 JobRefused, aggregator_address, check_job,
                                 plan_job)
from topologies.model import Topology

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


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
class _SwitchState:
    program: InaProgram
    pool: CellPool
    groups: dict[int, int]        # job id -> mgid
    addresses: set[str]           # aggregator addresses present


class InaJobs:
    """The aggregation jobs of a network. `clients` maps switch name -> a session whose pipeline
    (ina.p4) is already pushed; use `Fabric.clients`."""

    def __init__(self, topology: Topology, clients: Mapping[str, SwitchClient], *,
                 progress: Progress = _quiet):
        self.topology = topology
        self.clients = clients
        self.progress = progress
        self.plans: dict[int, JobPlan] = {}
        self._switches: dict[str, _SwitchState] = {}

    def _client(self, switch: str) -> SwitchClient:
        try:
            client = self.clients[switch]
        except KeyError:
            raise ControllerError(f"no session with switch {switch!r}") from None
        if client.index is None:
            raise ControllerError(f"{switch}: push or adopt the ina.p4 pipeline first")
        return client

    def _state(self, switch: str) -> _SwitchState:
        """What the switch holds, read once: job ranges, groups, aggregator addresses."""
        if switch not in self._switches:
            client = self._client(switch)
            program = InaProgram.from_p4info(client.index)
            state = _SwitchState(program, CellPool(program.cells), {}, set())
            for view in client.read_table("ina_jobs"):
                job_id = view.match["hdr.ina.job"][0]
                p = view.params
                state.pool.reserve(job_id, p["base"], 2 * p["pool_size"] + 2)
                state.groups[job_id] = p["mgid"]
            for view in client.read_table("ina_aggregator_addresses"):
                value = view.match["hdr.ipv4.dstAddr"][0]
                state.addresses.add(".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0)))
            self._switches[switch] = state
        return self._switches[switch]

    def program(self, switch: str) -> InaProgram:
        return self._state(switch).program

    # -- installing -----------------------------------------------------------------------------

    def install(self, job_id: int, workers: list[str] | tuple[str, ...], switch: str, *,
                k: int, pool_size: int, aggregator_ip: str | None = None) -> JobPlan:
        """Place the job on `switch`, write its entries and group; `JobRefused` if it cannot."""
        state = self._state(switch)
        address = aggregator_ip or aggregator_address(self.topology, switch)
        job = InaJob(job_id=job_id, workers=tuple(workers), switch=switch,
                     aggregator_ip=address, k=k, pool_size=pool_size)
        check_job(self.topology, state.program, job)
        if job_id in state.groups or job_id in self.plans:
            raise JobRefused(job_id, f"a job with this id already runs on {switch}")
        mgid = self._free_group(job_id, state)
        base = state.pool.allocate(job_id, job.cells)
        try:
            plan = plan_job(self.topology, state.program, job, base=base, mgid=mgid,
                            new_address=address not in state.addresses)
            self._write(plan)
        except BaseException:
            state.pool.release(job_id)
            raise
        state.groups[job_id] = mgid
        state.addresses.add(address)
        self.plans[job_id] = plan
        self.progress(f"{switch}: job {job_id} installed: {len(workers)} workers, k={k}, "
                      f"pool {pool_size} slots in cells {base}..{base + job.cells - 1}, "
                      f"aggregator {address}, multicast group {mgid}")
        return plan

    @staticmethod
    def _free_group(job_id: int, state: _SwitchState) -> int:
        used = set(state.groups.values())
        for mgid in range(FIRST_JOB_GROUP, MAX_GROUP + 1):
            if mgid not in used:
                return mgid
        raise JobRefused(job_id, "no free multicast group id")

    def _write(self, plan: JobPlan) -> None:
        """Group first, then entries per switch in plan order; undo everything on a failure."""
        done: list[tuple[SwitchClient, Entry]] = []
        job_client = self._client(plan.job.switch)
        job_client.set_multicast_group(plan.mgid, plan.replicas)
        try:
            for switch, entries in plan.entries.items():
                client = self._client(switch)
                for entry in entries:
                    client.add_entry(entry.table, entry.match, entry.action, entry.params)
                    done.append((client, entry))
        except BaseException:
            for client, entry in reversed(done):
                _delete_quietly(client, entry)
            _delete_group_quietly(job_client, plan.mgid)
            raise

    def remove(self, job_id: int) -> None:
        """Delete the job's entries and group and free its cells. The aggregator address and
        its routes stay (other jobs may use them)."""
        plan = self.plans.pop(job_id, None)
        if plan is None:
            raise ControllerError(f"job {job_id} was not installed by this controller")
        state = self._state(plan.job.switch)
        client = self._client(plan.job.switch)
        kept = ("ina_aggregator_addresses", "ipv4_lpm")
        for entry in reversed(plan.entries[plan.job.switch]):
            if entry.table not in kept:
                _delete(client, entry)
        client.write([(DELETE, entities.multicast_group(plan.mgid, []))],
                     [f"multicast group {plan.mgid}"])
        state.pool.release(job_id)
        state.groups.pop(job_id, None)
        self.progress(f"{plan.job.switch}: job {job_id} removed")

    # -- monitoring -----------------------------------------------------------------------------

    def counters(self, job_id: int) -> dict[str, int]:
        """Packets per counter of docs/protocol.md §7 for this job (on its switch)."""
        plan = self._plan(job_id)
        client = self._client(plan.job.switch)
        return {name: client.read_counter(name, job_id).get(job_id, (0, 0))[0]
                for name in JOB_COUNTERS}

    def cell_state(self, job_id: int, cell: int) -> CellState:
        plan = self._plan(job_id)
        if not plan.base <= cell < plan.base + plan.job.cells:
            raise ControllerError(f"job {job_id}: cell {cell} is not one of its cells "
                                  f"{plan.base}..{plan.base + plan.job.cells - 1}")
        client = self._client(plan.job.switch)
        program = self._state(plan.job.switch).program
        values = tuple(_signed32(client.read_register(name, cell)[cell])
                       for name in program.lane_registers(client.index))
        return CellState(cell=cell, seen=client.read_register(SEEN_REGISTER, cell)[cell],
                         pending=client.read_register(PENDING_REGISTER, cell)[cell],
                         values=values)

    def slot_state(self, job_id: int, slot: int, version: int) -> CellState:
        """The cell of (slot, version) of a job."""
        plan = self._plan(job_id)
        if not 0 <= slot < plan.job.pool_size or version not in (0, 1):
            raise ControllerError(f"job {job_id}: no slot {slot} version {version} "
                                  f"(pool of {plan.job.pool_size} slots, versions 0 and 1)")
        return self.cell_state(job_id, plan.cell(slot, version))

    def _plan(self, job_id: int) -> JobPlan:
        try:
            return self.plans[job_id]
        except KeyError:
            raise ControllerError(f"job {job_id} was not installed by this controller") from None


def _signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _entry_entity(client: SwitchClient, entry: Entry) -> p4runtime_pb2.Entity:
    table_entry = entities.table_entry(client.index, entry.table, entry.match, entry.action,
                                       entry.params)
    return p4runtime_pb2.Entity(table_entry=table_entry)


def _delete(client: SwitchClient, entry: Entry) -> None:
    client.write([(DELETE, _entry_entity(client, entry))], [entry.label or entry.table])


def _delete_quietly(client: SwitchClient, entry: Entry) -> None:
    try:
        _delete(client, entry)
    except ControllerError:
        pass   # best effort: the original failure is what the caller must see


def _delete_group_quietly(client: SwitchClient, mgid: int) -> None:
    try:
        client.write([(DELETE, entities.multicast_group(mgid, []))], [f"group {mgid}"])
    except ControllerError:
        pass

