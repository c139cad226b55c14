"""The simulator's controller reaches its switches in-process by default (no gRPC transport:
p4switch/server/inprocess.py) or over gRPC servers; both must leave every switch in the same
state and give the same run."""

from __future__ import annotations

import numpy as np
import pytest

from inaemu.sim import SimError, SimJob, prepare_setup, simulate
from inaemu.sim.setup import TRANSPORT_VARIABLE
from topologies.builders import fat_tree

SIZE, K = 2048, 8


def control_state(setup) -> dict:
    """Per switch: every table's entries (handles included: the order they were written in),
    defaults, and multicast groups with their replicas."""
    state = {}
    for name, switch in setup.switches.items():
        tables = {t: (switch.table_entries(t), switch.table_get_default(t))
                  for t in switch.tables()}
        groups = {mgid: switch.pre.replicas(mgid) for mgid in sorted(switch.pre.groups)}
        state[name] = (switch.program.doc.get("program"), tables, groups)
    return state


def test_in_process_and_grpc_set_up_the_same_fabric_and_run():
    topology = fat_tree(4)
    workers = tuple(h.name for h in topology.hosts)
    jobs = [SimJob(3, workers, "c0", hierarchical=True)]
    local = prepare_setup(topology, jobs, elems_k=K, pool_size=8)
    remote = prepare_setup(topology, jobs, elems_k=K, pool_size=8, transport="grpc")
    assert local.placements == remote.placements and local.trees == remote.trees
    assert local.routes == remote.routes and local.aggregating == remote.aggregating
    assert control_state(local) == control_state(remote)
    assert sum(len(entries) for _, tables, _ in control_state(local).values()
               for entries, _ in tables.values()) > 100
    runs = [simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, setup=s)
            for s in (local, remote)]
    assert runs[0].correct and runs[0].virtual_s == runs[1].virtual_s
    for a, b in zip(runs[0].records, runs[1].records):
        assert np.array_equal(a.result, b.result) and a.time_s == b.time_s


def test_the_transport_is_chosen_by_argument_or_environment(monkeypatch):
    topology = fat_tree(4)
    jobs = [SimJob(1, ("h1", "h2"))]
    lines: list[str] = []
    monkeypatch.setenv(TRANSPORT_VARIABLE, "grpc")
    prepare_setup(topology, jobs, elems_k=K, ina=False, progress=lines.append)
    prepare_setup(topology, jobs, elems_k=K, ina=False, progress=lines.append,
                  transport="local")
    assert "over P4Runtime (gRPC) in" in lines[0] and "(gRPC)" not in lines[1]
    monkeypatch.setenv(TRANSPORT_VARIABLE, "carrier-pigeon")
    with pytest.raises(SimError, match=r"transport \(\$INAEMU_SIM_P4RUNTIME\) must be one of "
                                       r"local, grpc, not 'carrier-pigeon'"):
        prepare_setup(topology, jobs, elems_k=K, ina=False)
    with pytest.raises(SimError, match="must be one of local, grpc, not 'udp'"):
        prepare_setup(topology, jobs, elems_k=K, ina=False, transport="udp")
