"""The runner's semantics and its report, on a stand-in switch (see fake_switch.py)."""

from __future__ import annotations

import pytest

from p4switch.stf import StfCommandError, parse_stf
from p4switch.stf.report import format_report
from p4switch.stf.runner import StfRunner

from .fake_switch import PROGRAM, FakeSwitch, Key

SETUP = """
add fwd hdr.first:0x01 forward(port:2)
add fwd first.byte:0x02 Ingress.flood(first:4, count:2) = F
"""


def run(text: str, switch: FakeSwitch | None = None):
    switch = switch or FakeSwitch()
    runner = StfRunner(switch, PROGRAM, make_key=Key)
    return runner.run(parse_stf(text, "t.stf")), switch


def test_passing_test_and_control_plane_calls() -> None:
    result, switch = run(SETUP + """
packet 0 01 00 10
expect 2 01 00 11 $
packet 1 02 AA
expect 4 02 AB
expect 5 02 A*
check_counter hits(0) packets == 1
check_counter hits(1) bytes == 2
check_counter fwd_counter($F) packets == 1
check_counter hits(2)
mc_mgrp_create 7
mc_node_create 10 1 2
mc_node_associate 7 0
mirroring_add 5 4
""")
    assert result.passed, format_report(result)
    assert format_report(result) == "PASS: 2 packets, 3 expects, 4 counter checks"
    assert switch.calls[0] == ("table_add", "Ingress.fwd", (("exact", 1),), "Ingress.forward",
                               (2,), None)
    # STF node handles count from 0; the runner maps them to the switch's own handles
    assert ("mc_node_associate", 7, 1010) in switch.calls
    assert switch.calls[-1] == ("mirroring_add", 5, 4, None)
    assert switch.clock() == 0.0          # the STF runner freezes time


def test_differing_packet_shows_expected_actual_and_markers() -> None:
    result, _ = run(SETUP + "packet 0 01 00 10\nexpect 2 01 ** 12\n")
    assert not result.passed
    report = format_report(result).splitlines()
    assert report[0].startswith("packet on port 2 differs: contents differ (packet #1 on the "
                                "port; expect at t.stf:5")
    assert report[1].endswith("expected: 01**12")
    assert report[2].endswith("actual:   010011")
    assert report[3].endswith("     ^") and report[3].count("^") == 1
    assert report[3].index("^") == report[2].index("010011") + 5
    assert report[-1] == "FAIL: 1 packets, 1 expects: 1 differing"


def test_length_rules() -> None:
    longer, _ = run(SETUP + "packet 0 01 00 10\nexpect 2 01\n")
    assert longer.passed                       # p4c: trailing bytes are fine without `$`
    exact, _ = run(SETUP + "packet 0 01 00 10\nexpect 2 01 $\n")
    assert "packet too long: 3 bytes, expected exactly 1" in format_report(exact)
    short, _ = run(SETUP + "packet 0 01 00 10\nexpect 2 01 00 11 22\n")
    report = format_report(short)
    assert "packet too short: 3 bytes, expected 4" in report and "^^" in report


def test_missing_and_unexpected_packets() -> None:
    result, _ = run(SETUP + "packet 0 01 00\nexpect 3 01 01\npacket 1 02 00\nexpect 4 02 01\n")
    report = format_report(result)
    assert "missing packet on port 3 (expect at t.stf:5)" in report
    assert "unexpected packet on port 2 (out of the packet at t.stf:4)" in report
    assert "unexpected packet on port 5 (out of the packet at t.stf:6)" in report
    assert report.splitlines()[-1] == "FAIL: 2 packets, 2 expects: 1 missing, 2 unexpected"


def test_expect_without_data_accepts_any_number() -> None:
    result, _ = run(SETUP + "packet 1 02 00\npacket 1 02 00\nexpect 4\nexpect 5\n")
    assert result.passed, format_report(result)


def test_dropped_packet_with_an_expect_is_missing() -> None:
    result, _ = run(SETUP + "packet 0 09 00\nexpect 2 09 01\n")
    assert [m.kind for m in result.mismatches] == ["missing"]


def test_counter_failure_is_reported() -> None:
    result, _ = run(SETUP + "packet 0 01 00\nexpect 2 01 01\ncheck_counter hits(0) packets > 1\n")
    assert not result.passed
    assert ("counter check failed at t.stf:6: hits(0) packets > 1; actual packets=1 bytes=2"
            in format_report(result))


def test_default_action_and_remove_all() -> None:
    result, _ = run(SETUP + "setdefault fwd forward(port:7)\nremove all\npacket 0 01 00\n"
                    "expect 7 01 01\n")
    assert result.passed, format_report(result)


@pytest.mark.parametrize("line, words", [
    ("add nosuch k:1 forward(port:1)", "no table 'nosuch'"),
    ("add fwd hdr.first:1 teleport(port:1)", "no action of table 'Ingress.fwd' 'teleport'"),
    ("add fwd hdr.first:1 forward(prt:1)", "has no parameter 'prt'"),
    ("add fwd hdr.first:1 flood(first:1)", "needs parameter 'count'"),
    ("add fwd hdr.first:1 forward(port:512)", "does not fit in 9 bits"),
    ("add fwd hdr.first:0x1* forward(port:1)", "is exact"),
    ("check_counter nosuch(0)", "no counter 'nosuch'"),
    ("check_counter fwd_counter($X)", "no entry was added with '= X'"),
    ("mc_node_associate 1 3", "no multicast node with handle 3"),
])
def test_commands_the_program_cannot_take_name_their_line(line: str, words: str) -> None:
    with pytest.raises(StfCommandError) as info:
        run(f"packet 0 00\n{line}\n")
    assert str(info.value).startswith("t.stf:2: error: ")
    assert words in str(info.value)


def test_verbose_log_shows_packets_and_outputs() -> None:
    lines: list[str] = []
    StfRunner(FakeSwitch(), PROGRAM, log=lines.append, make_key=Key).run(
        parse_stf(SETUP + "packet 0 01 00\npacket 0 07 00\n", "t.stf"))
    assert "packet 0 0100   (line 4)" in lines
    assert "  -> out on port 2: 0101" in lines
    assert "  -> no packet out (dropped)" in lines


def test_long_packets_wrap_in_rows_with_offsets() -> None:
    payload = "00" * 40
    result, _ = run(SETUP + f"packet 0 01 {payload}\nexpect 2 01 {'11' * 40}\n")
    rows = format_report(result).splitlines()
    assert rows[1].startswith("  [   0] expected: 01") and rows[4].startswith("  [  32] expected:")
    assert len(rows[1].split("expected: ")[1]) == 64


def test_a_failed_data_plane_assert_stops_the_test() -> None:
    from p4switch.runtime.errors import AssertionFailure

    class Asserting(FakeSwitch):
        def receive(self, port, packet):
            raise AssertionFailure("assert(hdr.k.a != 0) failed")

    result, _ = run(SETUP + "packet 0 01 00\nexpect 2 01 01\npacket 0 01 00\n", Asserting())
    assert not result.passed
    report = format_report(result)
    assert report.startswith("t.stf:4: the program aborted: assert(hdr.k.a != 0) failed")
    # the run stops at the abort: later lines are not checked
    assert report.splitlines()[-1] == "FAIL: 2 packets, 1 expects: aborted by assert/assume"


def test_a_switch_bug_keeps_its_traceback_and_names_the_line() -> None:
    class Broken(FakeSwitch):
        def receive(self, port, packet):
            raise ZeroDivisionError("oops")

    with pytest.raises(ZeroDivisionError) as info:
        run(SETUP + "packet 0 01 00\n", Broken())
    assert info.value.__notes__ == ["while running t.stf:4"]


def test_stf_priority_zero_is_accepted_and_order_is_kept() -> None:
    class Ternary(FakeSwitch):
        def table_info(self, name):
            info = super().table_info(name)
            info.keys = (("hdr.first", "ternary", 8),)
            return info

        def table_add(self, table, keys, action, params=(), priority=None):
            self.calls.append(("table_add", table, action, priority))
            return len(self.calls)

    result, switch = run("add fwd 0 hdr.first:0x0* forward(port:1)\n"
                         "add fwd 7 hdr.first:0x01 forward(port:2)\n", Ternary())
    assert [c[3] for c in switch.calls] == [1, 8]
    with pytest.raises(StfCommandError, match="give a priority"):
        run("add fwd hdr.first:0x01 forward(port:2)\n", Ternary())
