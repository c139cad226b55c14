"""Lifecycle reconstruction on hand-made events: what each ina.p4 outcome becomes, rounds,
losses, capture-only switches, selection and counts."""

from __future__ import annotations

from inaemu.trace.events import LinkLoss, Output, PipelineRun, WireFrame
from inaemu.trace.lifecycle import (ARRIVED, COMPLETED, CONTRIBUTION, DROPPED, DUPLICATE,
                                    FORWARDED, LOSS, PARENT_RESULT, REJECTED, Lifecycles,
                                    Selection, SlotKey, counts, select)
from tests.ina.packets import (CONTRIB, MAX_CONTRIB, RESULT, Endpoint, ina_packet, ip)

AGG = Endpoint(0x0200000001FE, ip("10.0.0.254"))
HOSTS = [Endpoint(0x020000000001 + w, ip(f"10.0.0.{w + 1}")) for w in range(3)]


def contrib(w: int, *, slot: int = 1, ver: int = 0, chunk: int = 1, retx: bool = False,
            kind: int = CONTRIB) -> bytes:
    return ina_packet(HOSTS[w], AGG, kind=kind, job=7, worker=w, slot=slot, ver=ver, chunk=chunk,
                      retx=retx, values=[1, 2, 3, 4])


def result(w: int, *, slot: int = 1, ver: int = 0, chunk: int = 1) -> bytes:
    return ina_packet(AGG, HOSTS[w], kind=RESULT, job=7, worker=w, slot=slot, ver=ver,
                      chunk=chunk, count=3, values=[3, 6, 9, 12])


def run(time: float, frame: bytes, actions: list[str], outputs=(), *, switch: str = "s1",
        port: int = 1, drops=()) -> PipelineRun:
    return PipelineRun(time=time, switch=switch, packet_id=int(time * 10), port=port,
                       length=len(frame), head=frame[:64],
                       actions=tuple(f"MyIngress.{a}" for a in actions), drops=tuple(drops),
                       multicast=None,
                       outputs=tuple(Output(p, len(f), f[:64]) for p, f in outputs))


def one(events) -> list:
    lives = Lifecycles({"s1", "s2"}).feed_all(events).lifecycles()
    assert len(lives) == 1
    return lives[0].steps


def test_a_round_with_a_duplicate_before_and_after_completion():
    events = [
        run(1.0, contrib(0), ["ina_load_cell", "ina_mark_seen", "ina_overwrite", "drop"]),
        run(1.1, contrib(0, retx=True), ["ina_load_cell", "drop"]),
        run(1.2, contrib(1), ["ina_load_cell", "ina_mark_seen", "ina_add", "drop"], port=2),
        run(1.3, contrib(2), ["ina_load_cell", "ina_mark_seen", "ina_add", "ina_multicast_result"],
            [(1, result(0)), (2, result(1)), (3, result(2))], port=3),
        LinkLoss(time=1.3, switch="s1", port=2, direction="out", length=74, crc32=0,
                 head=result(1)[:64]),
        run(1.5, contrib(1, retx=True), ["ina_load_cell", "ina_read", "ina_unicast_result"],
            [(2, result(1))], port=2),
    ]
    steps = one(events)
    assert [s.what for s in steps] == [CONTRIBUTION, DUPLICATE, CONTRIBUTION, COMPLETED, LOSS,
                                       DUPLICATE]
    assert steps[0].detail.startswith("first") and steps[2].detail.startswith("combined")
    assert steps[1].detail == "still aggregating: dropped" and steps[1].retx
    assert steps[3].outputs == ((1, 0), (2, 1), (3, 2))
    assert (steps[4].port, steps[4].direction, steps[4].kind, steps[4].worker) == \
        (2, "out", "RESULT", 1)
    assert steps[5].outputs == ((2, 1),) and "unicast" in steps[5].detail
    total = counts(Lifecycles({"s1"}).feed_all(events).lifecycles())
    assert total["contributions accepted"] == 3 and total["duplicates"] == 2
    assert total["retransmissions"] == 2 and total["results unicast"] == 1
    assert total["results multicast"] == 1 and total["result copies multicast"] == 3
    assert total["losses injected (out)"] == 1


def test_rejections_and_routing_are_named():
    events = [
        run(1.0, contrib(0), ["ina_classify", "ina_reject_bad_worker"]),
        run(2.0, contrib(1), ["ina_reject_bad_slot"]),
        run(3.0, contrib(2), ["ina_reject_unknown_job"]),
        run(4.0, contrib(0), ["ipv4_forward"], [(4, contrib(0))]),
        run(5.0, contrib(0), ["drop"], drops=["egress_spec is the drop port"]),
    ]
    steps = one(events)
    assert [(s.what, s.detail) for s in steps] == [
        (REJECTED, "bad worker"), (REJECTED, "bad slot"), (REJECTED, "unknown job"),
        (FORWARDED, "not aggregated here: routed"), (DROPPED, "egress_spec is the drop port")]


def test_a_child_switch_sends_up_and_multicasts_the_parents_result():
    events = [
        run(1.0, contrib(0), ["ina_mark_seen", "ina_overwrite", "ina_send_up"], [(9, contrib(0))],
            switch="s2"),
        run(1.1, contrib(0, retx=True), ["ina_load_cell", "ina_read", "ina_send_up"],
            [(9, contrib(0))], switch="s2"),
        run(1.2, result(0), ["ina_load_cell", "ina_overwrite", "ina_multicast_result"],
            [(1, result(0))], switch="s2", port=9),
        run(1.3, result(0), ["ina_load_cell", "ina_drop_duplicate"], switch="s2", port=9),
    ]
    steps = one(events)
    assert [s.what for s in steps] == [COMPLETED, DUPLICATE, PARENT_RESULT, DUPLICATE]
    assert "parent" in steps[0].detail and "sent up again" in steps[1].detail


def test_a_second_first_contribution_starts_a_new_round():
    first = ["ina_mark_seen", "ina_overwrite", "ina_multicast_result"]
    events = [run(1.0, contrib(0), first, [(1, result(0))]),
              LinkLoss(time=1.5, switch="s1", port=1, direction="in", length=74, crc32=0,
                       head=contrib(0)[:64]),
              run(2.0, contrib(0), first, [(1, result(0))])]
    lives = Lifecycles({"s1"}).feed_all(events).lifecycles()
    assert [(life.round, [s.what for s in life.steps]) for life in lives] == \
        [(0, [COMPLETED, LOSS]), (1, [COMPLETED])]


def test_max_round_and_data_keys_differ_and_non_ina_frames_are_ignored():
    events = [run(1.0, contrib(0, kind=MAX_CONTRIB, slot=0, chunk=0), ["ina_mark_seen"]),
              run(1.1, contrib(0, slot=0, chunk=0), ["ina_mark_seen"]),
              run(1.2, b"\xff" * 60, ["drop"])]
    keys = [life.key for life in Lifecycles({"s1"}).feed_all(events).lifecycles()]
    assert keys == [SlotKey(7, False, 0, 0, 0), SlotKey(7, True, 0, 0, 0)]
    assert str(keys[1]) == "job 7 MAX round v0 chunk 0"


def test_capture_only_switches_give_arrivals_and_logged_ones_ignore_their_pcaps():
    frame = WireFrame(time=1.0, switch="s3", port=2, iface="s3-eth2", direction="in",
                      data=contrib(1, retx=True))
    logged = WireFrame(time=1.0, switch="s1", port=2, iface="s1-eth2", direction="in",
                       data=contrib(1))
    steps = one([frame, logged])
    assert [(s.what, s.switch, s.worker, s.retx) for s in steps] == [(ARRIVED, "s3", 1, True)]


def test_selection_filters_keys_and_steps():
    events = [run(1.0, contrib(0, slot=1, chunk=1), ["ina_mark_seen"]),
              run(1.1, contrib(1, slot=1, chunk=1), ["ina_mark_seen"], switch="s2"),
              run(1.2, contrib(0, slot=2, chunk=2), ["ina_mark_seen", "ina_multicast_result"],
                  [(1, result(0, slot=2, chunk=2)), (2, result(1, slot=2, chunk=2))])]
    lives = Lifecycles({"s1", "s2"}).feed_all(events).lifecycles()
    assert [life.key.slot for life in select(lives, Selection(slot=2))] == [2]
    assert select(lives, Selection(chunk=3)) == []
    assert select(lives, Selection(job=8)) == []
    only_s2 = select(lives, Selection(switch="s2"))
    assert [(life.key.slot, len(life.steps)) for life in only_s2] == [(1, 1)]
    worker1 = select(lives, Selection(worker=1))   # its own packet, and the multicast to it
    assert [(life.key.slot, [s.worker for s in life.steps]) for life in worker1] == \
        [(1, [1]), (2, [0])]
