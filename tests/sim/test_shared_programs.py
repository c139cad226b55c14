"""A simulated fabric translates each program once (p4switch/runtime/share/codeshare.py):
every switch that runs ina.p4 runs the same generated code over its own registers and tables,
and a tree all-reduce over them is still correct with each switch's cells its own."""

from __future__ import annotations

from inaemu.sim import SimJob, prepare_setup, simulate
from topologies.builders import fat_tree

SIZE, K = 4096, 8


def test_tree_switches_share_code_not_cells():
    topology = fat_tree(4)
    workers = tuple(h.name for h in topology.hosts)
    jobs = [SimJob(2, workers, "c0", hierarchical=True)]
    setup = prepare_setup(topology, jobs, elems_k=K, pool_size=8)
    ina = sorted(setup.aggregating)
    assert len(ina) > 2
    programs = [setup.switches[name].program for name in ina]
    code = {id(p.untraced.source) for p in programs}
    assert len(code) == 1                                   # translated once
    routers = [s.program for n, s in setup.switches.items() if n not in setup.aggregating]
    assert routers and len({id(p.untraced.source) for p in routers}) == 1
    assert len({id(p.untraced.namespace) for p in programs}) == len(programs)
    register = next(iter(programs[0].registers))
    assert len({id(p.registers[register].cells) for p in programs}) == len(programs)
    tables = [p.tables[name] for p in programs for name in p.tables if "ina_jobs" in name]
    assert len({id(t.exact) for t in tables}) == len(tables)
    # each switch got its own job entries (its own members, its own parent)
    assert len({tuple(sorted(t.exact.items(), key=repr)) for t in tables}) > 1

    result = simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, setup=setup)
    assert result.correct
    # every tree switch aggregated in cells of its own (zero before the run: fresh state)
    touched = [any(any(p.registers[r].cells) for r in p.registers) for p in programs]
    assert all(touched)
