"""Aggregation jobs over P4Runtime: install, remove and watch them on running switches.

`InaJobs` holds one `SwitchClient` per switch (a `Fabric`'s, or any mapping) and writes the plans
of `controller.ina_jobs`. What each switch already holds is learnt from the switch itself before
a new job is placed (`controller.ina_switches`, shared with `controller.trees.TreeJobs`), so a
controller restarted against running switches never hands out the same cells or group twice.
A job whose writes fail half-way is rolled back, so a refusal changes nothing.
Monitoring reads the per-job counters and the registers of one slot (docs/protocol.md §2, §7).
"""

from __future__ import annotations

from controller.client import SwitchClient
from controller.errors import ControllerError
from controller.ina_jobs import (Entry, FallbackServer, InaJob, JobPlan, JobRefused,
                                 aggregator_address, check_job, plan_job)
from controller.ina_switches import (CellState, InaSwitches, check_slot, clear_for_job,
                                     delete_group, insert_entries, read_cell,
                                     release_owned_cells, remove_entries, undo_quietly)

__all__ = ["CellState", "InaJobs"]


class InaJobs(InaSwitches[JobPlan]):
    """The aggregation jobs of a network, each on one switch. `clients` maps switch name -> a
    session whose pipeline (ina.p4) is already pushed; use `Fabric.clients`."""

    # -- installing -----------------------------------------------------------------------------

    def install(self, job_id: int, workers: list[str] | tuple[str, ...], switch: str, *,
                k: int, pool_size: int, aggregator_ip: str | None = None,
                fallback: FallbackServer | None = None,
                switch_slots: int | None = None, sharing: str = "static",
                shared_pairs: int | None = None) -> JobPlan:
        """Place the job on `switch`, write its entries and group; `JobRefused` if it cannot.

        `pool_size` is the workers' pool. With a `fallback` host aggregator the switch holds
        `switch_slots` of them, or as many as its free cells allow (best effort, at least one
        slot and the MAX pair), and the rest go to the host (docs/fallback.md).
        `sharing="hashed"` (docs/protocol.md §3.3): the job gets its MAX pair and draws its
        data cells from the switch's shared pool, which the first hashed job creates with
        `shared_pairs` pairs (rounded down to a prime); it needs a `fallback`."""
        state = self._state(switch)
        address = aggregator_ip or aggregator_address(self.topology, switch)
        if sharing == "hashed":
            switch_slots = pool_size
        elif switch_slots is None:
            switch_slots = pool_size
            if fallback is not None and isinstance(pool_size, int):
                switch_slots = min(pool_size, (state.pool.largest_free() - 2) // 2)
                if switch_slots < 1:
                    raise JobRefused(job_id, f"cells exhausted: not even one slot and the MAX "
                                             f"pair (4 cells) free in a row on {switch}")
        job = InaJob(job_id=job_id, workers=tuple(workers), switch=switch,
                     aggregator_ip=address, k=k, pool_size=switch_slots,
                     worker_pool=pool_size, fallback=fallback, sharing=sharing)
        check_job(self.topology, state.program, job)
        self._refuse_taken_id(job_id, switch)
        if sharing == "hashed" and state.shared is None:
            self.create_shared_pool(job_id, switch, shared_pairs)
        mgid = state.free_group(job_id)
        base = state.pool.allocate(job_id, job.cells)
        try:
            plan = plan_job(self.topology, state.program, job, base=base, mgid=mgid,
                            new_address=address not in state.addresses,
                            shared=state.shared if sharing == "hashed" else None)
            self._write(plan)
        except BaseException:
            state.pool.release(job_id, used=False)
            raise
        state.groups[job_id] = mgid
        state.addresses.add(address)
        self.plans[job_id] = plan
        self.progress(f"{switch}: job {job_id} installed: {len(workers)} workers, k={k}, "
                      f"pool {job.pool_size} slots in cells {base}..{base + job.cells - 1}, "
                      f"aggregator {address}, multicast group {mgid}" + (
                          f"; slots {job.pool_size}..{pool_size - 1} to the host aggregator "
                          f"{fallback.address}:{fallback.port}" if job.pool_size < pool_size
                          else "") + ("; hashed into the shared pool" if sharing == "hashed"
                                      else ""))
        return plan

    def _write(self, plan: JobPlan) -> None:
        """Group first, then entries per switch in plan order; undo everything on a failure."""
        done: list[tuple[SwitchClient, Entry]] = []
        job_client = self._client(plan.job.switch)
        clear_for_job(job_client, self._state(plan.job.switch).pool, plan.job.job_id,
                      plan.job.switch, range(plan.base, plan.base + plan.job.cells))
        job_client.set_multicast_group(plan.mgid, plan.replicas)
        try:
            for switch, entries in plan.entries.items():      # batched WriteRequests
                insert_entries(self._client(switch), entries, done)
        except BaseException:
            undo_quietly(done, [(job_client, plan.mgid)])
            raise

    def remove(self, job_id: int) -> None:
        """Delete the job's entries and group and free its cells. The aggregator address and
        its routes stay (other jobs may use them)."""
        plan = self._plan(job_id)
        del self.plans[job_id]
        switch = plan.job.switch
        client = self._client(switch)
        remove_entries([(client, entry) for entry in plan.entries[switch]])
        delete_group(client, plan.mgid)
        state = self._state(switch)
        state.pool.release(job_id)
        state.groups.pop(job_id, None)
        freed = 0
        if plan.job.sharing == "hashed" and state.shared is not None:
            freed = release_owned_cells(client, job_id, state.shared)
        self.progress(f"{switch}: job {job_id} removed" +
                      (f"; {freed} cells of the shared pool it still owned freed" if freed
                       else ""))

    # -- monitoring -----------------------------------------------------------------------------

    def counters(self, job_id: int) -> dict[str, int]:
        """Packets per counter of docs/protocol.md §7 for this job (on its switch)."""
        return self._job_counters(self._plan(job_id).job.switch, job_id)

    def cell_state(self, job_id: int, cell: int) -> CellState:
        plan = self._plan(job_id)
        if not plan.base <= cell < plan.base + plan.job.cells:
            raise ControllerError(f"job {job_id}: cell {cell} is not one of its cells "
                                  f"{plan.base}..{plan.base + plan.job.cells - 1}")
        switch = plan.job.switch
        return read_cell(self._client(switch), self._state(switch).program, cell)

    def slot_state(self, job_id: int, slot: int, version: int) -> CellState:
        """The cell of (slot, version) of a job."""
        plan = self._plan(job_id)
        check_slot(job_id, plan.job.pool_size, slot, version)
        return self.cell_state(job_id, plan.cell(slot, version))
