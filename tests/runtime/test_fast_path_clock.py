"""The fast path reads the clock only when some code can see a timestamp
(runtime/pygen/fastpath.py): a program that copies ingress/egress timestamps into a header
still gets them, in unicast and in every multicast replica; one that never reads them does not
call the clock at all."""

from __future__ import annotations

from p4switch.runtime import Switch

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, prim, std


def _program(read_time: bool, multicast: bool) -> dict:
    prog = ethernet_program()
    prog.header_type("t_t", [("ingress", 48), ("egress", 48)])
    prog.header("t", "t_t")
    prog.state("start", [prog.extract("eth"), prog.extract("t")])
    target = std("mcast_grp") if multicast else std("egress_spec")
    prog.run("route", prog.action("route", [assign(target, const(1))]))
    stamps = [assign(fld("t", "ingress"), std("ingress_global_timestamp")),
              assign(fld("t", "egress"), std("egress_global_timestamp"))] if read_time \
        else [assign(fld("t", "ingress"), const(7))]
    prog.run("stamp", prog.action("stamp", stamps), pipeline="egress")
    return prog.build()


def _stamps(out: bytes) -> tuple[int, int]:
    return int.from_bytes(out[14:20], "big"), int.from_bytes(out[20:26], "big")


def test_timestamps_reach_code_that_reads_them():
    for multicast in (False, True):
        sw = Switch(_program(True, multicast))
        if multicast:
            sw.mc_group_set(1, [(2, 0), (3, 1)])
        now = [100.0]
        sw.clock = lambda: now[0]
        now[0] += 0.25                        # 250,000 us after the clock was set
        outs = sw.receive(1, eth_frame(payload=bytes(12)))
        assert len(outs) == (2 if multicast else 1)
        for _, out in outs:
            assert _stamps(out) == (250000, 250000)
        assert "now_us" in sw._engine.fast.__code__.co_names


def test_no_clock_without_a_reader():
    for multicast in (False, True):
        sw = Switch(_program(False, multicast))
        if multicast:
            sw.mc_group_set(1, [(2, 0), (3, 1)])
        calls = [0]

        def clock():
            calls[0] += 1
            return 5.0
        sw.clock = clock
        before = calls[0]
        outs = sw.receive(1, eth_frame(payload=bytes(12)))
        assert outs and all(_stamps(out) == (7, 0) for _, out in outs)
        assert calls[0] == before
        assert "now_us" not in sw._engine.fast.__code__.co_names
