"""A job's cells are written to zero before it uses them unless the controller knows they are
zero: a pipeline its own session committed, cells no removed job used. Skipping that is what
saves 4 x 258 register writes per tree switch at fat-tree(40) (841 switches); clearing must
still happen wherever the controller cannot know (an adopted pipeline, a second reader of the
switch, cells a removed job left)."""

from __future__ import annotations

from controller.fabric import Fabric
from controller.ina_control import InaJobs
from controller.ina_switches import SEEN_REGISTER
from inaemu.sim import control
from inaemu.sim.network import SimNetwork
from topologies.builders import linear

K = 8


def _count_register_writes(fabric) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, client in fabric.clients.items():
        original = client.write

        def counted(updates, labels=(), name=name, original=original):
            labels = list(labels)       # clear_cells labels each cell "register NAME[CELL] = 0"
            counts[name] = counts.get(name, 0) + sum(
                1 for label in labels if label.startswith("register ") and label.endswith("= 0"))
            return original(updates, labels)
        client.write = counted
    return counts


def _stain(client, cell: int) -> None:
    """A member bit left in `cell`, as a job stopped mid-call leaves it."""
    from controller import entities
    from controller.client import MODIFY
    client.write([(MODIFY, entities.register_write(client.index, SEEN_REGISTER, cell, 1))],
                 ["stain"])


def test_cells_of_a_pipeline_this_session_pushed_are_not_written():
    network = SimNetwork(linear(3, 2), seed=0)
    program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(K)),))
    try:
        with Fabric(network.start_servers(), timeout=10) as fabric:
            control.push_program(fabric, program)
            counts = _count_register_writes(fabric)
            InaJobs(fabric.topology, fabric.clients).install(5, ["h1", "h3", "h5"], "s2", k=K,
                                                             pool_size=4)
            assert counts.get("s2", 0) == 0
    finally:
        network.stop_servers()


def test_a_second_reader_and_an_adopted_pipeline_clear_the_cells():
    """The fresh-pipeline knowledge goes to the first reader only; a later InaJobs (which
    cannot know what ran in between) and a session that adopted the pipeline clear the cells,
    and a stale member bit is gone before the job starts."""
    network = SimNetwork(linear(3, 2), seed=0)
    program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(K)),))
    try:
        topology = network.start_servers()
        with Fabric(topology, timeout=10) as fabric:
            control.push_program(fabric, program)
            first = InaJobs(fabric.topology, fabric.clients)
            plan = first.install(5, ["h1", "h3", "h5"], "s2", k=K, pool_size=4)
            first.remove(5)
            _stain(fabric.clients["s2"], plan.base)
            counts = _count_register_writes(fabric)
            again = InaJobs(fabric.topology, fabric.clients).install(
                6, ["h1", "h3", "h5"], "s2", k=K, pool_size=4)
            assert again.base == plan.base
            assert counts["s2"] == 4 * (2 * 4 + 2)          # 4 registers x the job's cells
            assert fabric.clients["s2"].read_register(SEEN_REGISTER, plan.base)[plan.base] == 0
        with Fabric(topology, timeout=10, election_id=(0, 2)) as adopted:
            adopted.adopt_pipeline()
            counts = _count_register_writes(adopted)
            jobs = InaJobs(adopted.topology, adopted.clients)
            jobs.install(7, ["h1", "h3", "h5"], "s2", k=K, pool_size=4)
            assert counts["s2"] == 4 * (2 * 4 + 2)
    finally:
        network.stop_servers()
