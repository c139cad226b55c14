"""The in-process ina.p4 switch of the tests and benchmarks holds the job it is given: a pool
beyond its cells was silently installed and its MAX round never answered (bench_agent --veth
--pool 128 ended in PeerUnreachable after 13 probes)."""

from __future__ import annotations

import pytest

from tests.hosts.inproc import AGGREGATOR_IP, CELLS, Member, add_job, ina_switch, new_ina_switch


def test_a_job_beyond_the_programs_cells_is_refused_by_name() -> None:
    sw = new_ina_switch(8, AGGREGATOR_IP)
    pool = (CELLS - 2) // 2 + 1
    with pytest.raises(ValueError, match=f"pool of {pool} slots.*has {CELLS}"):
        add_job(sw, AGGREGATOR_IP, 1, [Member(1, "02:00:00:00:00:01", "10.0.0.1")],
                pool_size=pool, result_count=1)


def test_ina_switch_compiles_the_cells_its_job_needs() -> None:
    sw = ina_switch(8, job=1, n=2, pool_size=128)
    sizes = {r["name"]: r["size"] for r in sw.program.doc["register_arrays"]}
    assert sizes["MyIngress.ina_seen"] >= 2 * 128 + 2 > CELLS
