"""QUERY and NACK in the trace (docs/protocol.md §3.1): decoded and named, each outcome of ina.p4
for a QUERY (and for a parent's NACK at a child switch) a step of the slot's lifecycle, and the
`--summary` counts of the loss recovery: queries by outcome, NACKs sent, per-kind packets and
losses. Hand-made events here; `test_traced_lossy_sim_run_counts_queries_and_nacks` runs the
simulator with loss and reads its trace with the CLI."""

from __future__ import annotations

import argparse

from hosts.ina_header import Kind
from inaemu.trace import cli
from inaemu.trace.events import KIND_NAMES, LinkLoss, Output, PipelineRun, decode_ina
from inaemu.trace.lifecycle import (CONTRIBUTION, DUPLICATE, FORWARDED, LOSS, NACK, QUERY,
                                    Lifecycles, counts)
from inaemu.trace.report import format_counts, format_lifecycle
from tests.ina.packets import CONTRIB, Endpoint, ina_packet, ip

AGG = Endpoint(0x0200000001FE, ip("10.0.0.254"))
PARENT = Endpoint(0x0200000002FE, ip("10.0.1.254"))
HOSTS = [Endpoint(0x020000000001 + w, ip(f"10.0.0.{w + 1}")) for w in range(3)]


def query(w: int, *, slot: int = 2, chunk: int = 2) -> bytes:
    return ina_packet(HOSTS[w], AGG, kind=Kind.QUERY, job=7, worker=w, slot=slot, chunk=chunk,
                      retx=True, values=[])


def nack(w: int, *, src: Endpoint = AGG, dst: Endpoint | None = None) -> bytes:
    return ina_packet(src, dst or HOSTS[w], kind=Kind.NACK, job=7, worker=w, slot=2, chunk=2,
                      values=[])


def contrib(w: int, *, retx: bool = False) -> bytes:
    return ina_packet(HOSTS[w], AGG, kind=CONTRIB, job=7, worker=w, slot=2, chunk=2, retx=retx,
                      values=[1, 2, 3, 4])


def run(time: float, frame: bytes, actions: list[str], outputs=(), *, switch: str = "s1",
        port: int = 1) -> PipelineRun:
    return PipelineRun(time=time, switch=switch, packet_id=int(time * 10), port=port,
                       length=len(frame), head=frame[:64],
                       actions=tuple(f"MyIngress.{a}" for a in actions), drops=(), multicast=None,
                       outputs=tuple(Output(p, len(f), f[:64]) for p, f in outputs))


def test_query_and_nack_decode_with_their_names():
    assert KIND_NAMES[4] == "QUERY" and KIND_NAMES[5] == "NACK"
    header = decode_ina(query(1))
    assert (header.kind_name, header.worker, header.retx, header.is_query) == ("QUERY", 1, True,
                                                                               True)
    assert header.is_upward and not header.is_contribution
    header = decode_ina(nack(1))
    assert (header.kind_name, header.is_nack, header.is_upward) == ("NACK", True, False)


def test_each_answer_to_a_query_is_a_query_step():
    events = [
        run(1.0, contrib(0), ["ina_load_cell", "ina_mark_seen", "ina_overwrite", "drop"]),
        LinkLoss(time=1.01, switch="s1", port=2, direction="in", length=74, crc32=0,
                 head=contrib(1)[:64]),
        run(1.5, query(0), ["ina_load_cell", "drop"]),
        run(1.6, query(1), ["ina_load_cell", "ina_nack"], [(2, nack(1))], port=2),
        LinkLoss(time=1.6, switch="s1", port=2, direction="out", length=58, crc32=0,
                 head=nack(1)[:64]),
        run(1.9, query(1), ["ina_load_cell", "ina_nack"], [(2, nack(1))], port=2),
        run(2.0, contrib(1, retx=True), ["ina_load_cell", "ina_mark_seen", "ina_add", "drop"],
            port=2),
        run(2.5, query(2), ["ina_load_cell", "ina_nack"], [(3, nack(2))], port=3),
    ]
    lives = Lifecycles({"s1"}).feed_all(events).lifecycles()
    assert len(lives) == 1
    steps = lives[0].steps
    assert [s.what for s in steps] == [CONTRIBUTION, LOSS, QUERY, QUERY, LOSS, QUERY,
                                       CONTRIBUTION, QUERY]
    assert steps[2].detail == "another member's piece is missing: dropped"
    assert steps[3].detail == "contribution missing: NACK sent back"
    assert steps[3].outputs == ((2, 1),) and steps[3].kind == "QUERY" and steps[3].retx
    assert steps[4].detail == "lost on the link out of port 2: the NACK for w1 never arrived"
    assert "the QUERY" not in steps[1].detail

    text = "\n".join(format_lifecycle(lives[0], 1.0, lambda switch, port: None))
    assert "QUERY w1 retx" in text and "query" in text and "NACK sent back -> port 2 (w1)" in text

    total = counts(lives)
    assert total["queries"] == 4 and total["NACKs sent"] == 3
    assert total["queries: NACK sent"] == 3 and total["queries: dropped"] == 1
    assert total["packets in: QUERY"] == 4 and total["packets in: CONTRIB"] == 2
    assert total["losses injected: NACK"] == 1 and total["losses injected: CONTRIB"] == 1
    assert total["contributions accepted"] == 2 and total["retransmissions"] == 1
    assert "forwarded" not in total and "dropped" not in total
    lines = format_counts(total)
    assert any(line.startswith("NACKs sent") and line.endswith(" 3") for line in lines)
    assert [line.split("  ")[0].strip().lower() for line in lines] == sorted(
        line.split("  ")[0].strip().lower() for line in lines)


def test_a_query_for_a_complete_cell_gets_the_result_and_climbs_a_tree():
    result = ina_packet(AGG, HOSTS[0], kind=Kind.CONTRIB, job=7, worker=0, slot=2, chunk=2,
                        values=[1, 2, 3, 4])
    up = ina_packet(AGG, PARENT, kind=Kind.QUERY, job=7, worker=5, slot=2, chunk=2, retx=True,
                    values=[])
    events = [
        run(1.0, query(0), ["ina_load_cell", "ina_grow", "ina_read", "ina_unicast_result"],
            [(1, result)]),
        run(2.0, query(0), ["ina_load_cell", "ina_query_up"], [(9, up)], switch="s2"),
        run(2.1, query(0), ["ina_to_host_aggregator"], [(4, query(0))], switch="s3"),
    ]
    steps = Lifecycles({"s1", "s2", "s3"}).feed_all(events).lifecycles()[0].steps
    assert [(s.what, s.detail) for s in steps] == [
        (QUERY, "cell complete: result unicast back"),
        (QUERY, "cell waits for the parent: query sent up"),
        (QUERY, "a slot of the host aggregator: passed on to it")]
    total = counts(Lifecycles({"s1", "s2", "s3"}).feed_all(events).lifecycles())
    assert total["queries: result unicast"] == 1 and total["results unicast"] == 1
    assert total["queries: asked the parent"] == 1
    assert total["queries: to the host aggregator"] == 1 and "NACKs sent" not in total


def test_a_parents_nack_at_a_child_switch():
    from_parent = nack(5, src=PARENT, dst=AGG)
    resent = ina_packet(AGG, PARENT, kind=Kind.CONTRIB, job=7, worker=5, slot=2, chunk=2,
                        retx=True, values=[3, 6, 9, 12])
    events = [
        run(1.0, from_parent, ["ina_load_cell", "ina_grow", "ina_read", "ina_send_up"],
            [(9, resent)], switch="s2", port=9),
        run(2.0, from_parent, ["ina_load_cell", "ina_drop_duplicate"], switch="s2", port=9),
        run(3.0, nack(1), ["ipv4_forward"], [(2, nack(1))], switch="s2", port=9),
    ]
    steps = Lifecycles({"s2"}).feed_all(events).lifecycles()[0].steps
    assert [(s.what, s.kind) for s in steps] == [(NACK, "NACK"), (NACK, "NACK"),
                                                 (FORWARDED, "NACK")]
    assert "sent up again" in steps[0].detail and "dropped" in steps[1].detail
    total = counts(Lifecycles({"s2"}).feed_all(events).lifecycles())
    assert total["NACKs from the parent"] == 2 and total["partial sums sent up again"] == 1
    assert total["packets in: NACK"] == 3 and total["forwarded"] == 1
    assert DUPLICATE not in {s.what for s in steps}


def test_traced_lossy_sim_run_counts_queries_and_nacks(tmp_path, capsys):
    """A traced lossy run in the simulator: `inaemu trace --summary` counts its queries and
    NACKs, and the per-slot lifecycles show them."""
    from inaemu.sim import SimJob, simulate
    from topologies.builders import star

    topology = star(3)
    result = simulate(topology, [SimJob(1, tuple(h.name for h in topology.hosts))], algo="ina",
                      size_bytes=4096, elems_k=8, seed=3, loss=10, capture_dir=tmp_path)
    assert result.correct

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args([str(tmp_path), "--summary"])) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    summary = {line.rsplit(None, 1)[0]: int(line.rsplit(None, 1)[1]) for line in lines}
    assert summary["queries"] > 0 and summary["packets in: QUERY"] == summary["queries"]
    assert summary["NACKs sent"] > 0
    assert "kind4" not in str(summary) and "kind5" not in str(summary)

    assert cli.run(parser.parse_args([str(tmp_path)])) == 0
    out = capsys.readouterr().out
    assert "QUERY w" in out and "NACK sent back" in out and "kind4" not in out
