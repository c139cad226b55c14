"""A flat job's entries go to each switch in one WriteRequest (controller.ina_control.InaJobs),
as a tree's do, instead of one request per entry; the job still aggregates where it should."""

from __future__ import annotations

from inaemu.sim import SimJob, simulate
from inaemu.sim import control
from controller.fabric import Fabric
from controller.ina_control import InaJobs
from inaemu.sim.network import SimNetwork
from topologies.builders import linear

K = 8


def test_a_flat_job_is_one_write_per_switch():
    topology = linear(3, 2)                  # s1 - s2 - s3, two hosts each
    network = SimNetwork(topology, seed=0)
    program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(K)),))
    try:
        with Fabric(network.start_servers(), timeout=10) as fabric:
            control.push_program(fabric, program)
            writes: dict[str, int] = {}
            for name, client in fabric.clients.items():
                original = client.write

                def counted(updates, labels=(), name=name, original=original):
                    writes[name] = writes.get(name, 0) + 1
                    return original(updates, labels)
                client.write = counted
            plan = InaJobs(fabric.topology, fabric.clients).install(
                5, ["h1", "h3", "h5"], "s2", k=K, pool_size=4)
    finally:
        network.stop_servers()
    # s2: its cells need no clearing (this session committed the pipeline: every cell is
    # zero, CellPool.known_clean), its multicast group, then every job entry in one request;
    # s1, s3: the route to the aggregator address in one request each
    assert writes == {"s2": 2, "s1": 1, "s3": 1}
    assert sum(len(entries) for entries in plan.entries.values()) > 4


def test_a_flat_job_still_aggregates():
    topology = linear(3, 2)
    result = simulate(topology, [SimJob(5, ("h1", "h3", "h5"), "s2")], algo="ina",
                      size_bytes=256, elems_k=K)
    assert result.correct


def test_a_job_placed_on_cells_another_job_left_mid_call_starts_clean():
    """Regression: a job removed in the middle of a call (a scenario's re-plan) leaves member
    bits and pending counts in its cells; a job given those cells later must not inherit
    them (its first contributions would be added to the old partial sums, or answered as
    duplicates with a stale result)."""
    topology = linear(3, 2)
    network = SimNetwork(topology, seed=0)
    program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(K)),))
    try:
        with Fabric(network.start_servers(), timeout=10) as fabric:
            control.push_program(fabric, program)
            jobs = InaJobs(fabric.topology, fabric.clients)
            old = jobs.install(5, ["h1", "h3", "h5"], "s2", k=K, pool_size=4)
            client = fabric["s2"]
            cells = range(old.base, old.base + old.job.cells)
            for cell in cells:                 # a call interrupted half-way
                client.write_register("ina_seen", cell, 0b011)
                client.write_register("ina_pending", cell, 1)
            jobs.remove(5)
            new = InaJobs(fabric.topology, fabric.clients).install(
                6, ["h1", "h3", "h5"], "s2", k=K, pool_size=4)
            assert new.base == old.base            # the same cells, handed out again
            seen = client.read_register("ina_seen")
            pending = client.read_register("ina_pending")
    finally:
        network.stop_servers()
    assert all(seen[cell] == 0 and pending[cell] == 0 for cell in cells)


class _NoRegisterWrites:
    """A switch session whose register writes are refused as BMv2's PI refuses them."""

    def __init__(self, index):
        self.index = index
        self.writes = 0

    def write(self, updates, labels=()):
        from controller.errors import P4RuntimeError, UpdateError
        self.writes += 1
        raise P4RuntimeError("s2", "Write", "UNKNOWN", "", (UpdateError(
            0, "UNIMPLEMENTED", "Register writes are not supported yet"),), tuple(labels))


def test_a_switch_without_register_writes_takes_clean_cells_and_refuses_dirty_ones():
    """Real simple_switch_grpc cannot write registers over P4Runtime: clean cells (a fresh
    pipeline's) are used as they are, cells a removed job left are refused, never reused
    with a stale scoreboard."""
    import pytest
    from controller.ina_jobs import CellPool, JobRefused
    from controller.ina_switches import clear_for_job
    program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(K)),))
    client = _NoRegisterWrites(program.p4info)
    pool = CellPool(2048)
    base = pool.allocate(5, 10)
    clear_for_job(client, pool, 5, "s2", range(base, base + 10))       # fresh: fine
    assert client.writes == 1                                          # one probe only
    pool.release(5)
    again = pool.allocate(6, 10)
    assert again == base
    with pytest.raises(JobRefused, match="removed job.*cannot clear"):
        clear_for_job(client, pool, 6, "s2", range(again, again + 10))
    pool.release(6, used=False)
    assert pool.any_dirty(range(base, base + 10))                      # still dirty
