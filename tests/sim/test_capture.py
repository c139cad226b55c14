"""A simulated run with capture on writes what `inaemu trace` reads (docs/trace.md): every loss
the simulated links inflict on a switch's ports is in the trace, and each slot round follows
docs/protocol.md §3 (one contribution per worker, one completion multicast to every worker).
Without capture, no file is written and the switches carry no trace."""

from __future__ import annotations

import pytest

from inaemu.sim import SimJob, simulate
from inaemu.sim.network import SimNetwork
from inaemu.trace.lifecycle import COMPLETED, CONTRIBUTION, LOSS, build
from inaemu.trace.reader import read_run
from topologies.builders import star

WORKERS = 3
SIZE = 512          # bytes per worker: 128 float32 = 16 chunks of k = 8


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("simtrace")
    topology = star(WORKERS)
    result = simulate(topology, [SimJob(1, tuple(h.name for h in topology.hosts))], algo="ina",
                      size_bytes=SIZE, elems_k=8, seed=3, loss=10, capture_dir=out)
    assert result.correct
    return out, result


def test_capture_files_are_written_per_switch_port(traced):
    out, _ = traced
    assert (out / "s1.log").is_file()
    pcaps = sorted(p.name for p in out.rglob("*.pcap"))
    for port in range(1, WORKERS + 1):
        assert f"s1-eth{port}_in.pcap" in pcaps and f"s1-eth{port}_out.pcap" in pcaps


def test_every_link_loss_at_the_switch_is_in_the_trace(traced):
    out, result = traced
    lost_in = sum(link["lost_packets"] + link["dropped_queue"]
                  for link in result.links if link["dst"].startswith("s1:"))
    lost_out = sum(link["lost_packets"] + link["dropped_queue"]
                   for link in result.links if link["src"].startswith("s1:"))
    assert lost_in > 0 and lost_out > 0       # seed 3 at 10% loses packets both ways
    steps = [s for life in build(read_run(out).events, {"s1"}) for s in life.steps]
    losses = [s for s in steps if s.what == LOSS]
    assert sum(s.direction == "in" for s in losses) == lost_in
    assert sum(s.direction == "out" for s in losses) == lost_out


def test_each_round_completes_once_with_every_worker(traced):
    out, _ = traced
    lifecycles = build(read_run(out).events, {"s1"})
    assert len(lifecycles) == SIZE // 4 // 8 + 1          # the chunks and the MAX round
    for life in lifecycles:
        accepted = [s for s in life.steps if s.what in (CONTRIBUTION, COMPLETED)]
        assert sorted(s.worker for s in accepted) == list(range(WORKERS)), life
        completed = [s for s in life.steps if s.what == COMPLETED]
        assert len(completed) == 1
        assert sorted(w for _, w in completed[0].outputs) == list(range(WORKERS))


def test_no_capture_means_no_trace_and_no_files(tmp_path):
    network = SimNetwork(star(2), seed=0)
    assert all(node.recorder is None and node.switch.trace is None
               for node in network.switches.values())
    assert all(link.on_lost is None and link.on_departed is None
               for link in network.links.values())
    assert list(tmp_path.iterdir()) == []
