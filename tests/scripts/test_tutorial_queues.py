"""scripts/tutorial_queues.py: what it reads from h2's receive.py output (scapy's `show2()` of
each packet) and its argument checks. The Mininet runs themselves need root and the machine's
Mininet lock; their numbers are in docs/tutorials.md."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("tutorial_queues",
                                              PROJECT_ROOT / "scripts" / "tutorial_queues.py")
tutorial_queues = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tutorial_queues)


def mri_packet(traces: list[tuple[int, int]]) -> str:
    """One packet as mri's receive.py prints it (newest switch first)."""
    lines = ["got a packet", "###[ Ethernet ]###", "###[ IP ]###", "     tos       = 0x0",
             "      |###[ MRI ]###", f"      |  count     = {len(traces)}",
             "      |  \\swtraces  \\"]
    for swid, qdepth in traces:
        lines += ["      |   |###[ SwitchTrace ]###", f"      |   |  swid      = {swid}",
                  f"      |   |  qdepth    = {qdepth}"]
    return "\n".join(lines + ["###[ UDP ]###", ""])


def test_the_largest_depth_of_switch_1_is_read_across_packets():
    log = "sniffing on eth0\n" + mri_packet([(2, 40), (1, 17)]) + mri_packet([(2, 0), (1, 58)]) \
        + mri_packet([(2, 3), (1, 0)])
    assert tutorial_queues.mri_max_qdepth(log) == (58, 3)
    assert tutorial_queues.mri_max_qdepth(log, switch_id=2) == (40, 3)
    assert tutorial_queues.mri_max_qdepth("sniffing on eth0\n") == (0, 0)


def test_the_marked_share_counts_ecn_3_among_received_packets():
    log = "".join(f"got a packet\n###[ IP ]###\n     tos       = 0x{tos:x}\n"
                  for tos in (1, 1, 3, 3, 3, 1, 0x23))
    share, packets = tutorial_queues.ecn_marked_share(log)
    assert packets == 7 and share == pytest.approx(4 / 7)     # 0x23: DSCP 8 and CE


@pytest.mark.parametrize("argv, message", [
    (["--exercises", "basic"], "unknown exercise 'basic'"),
    (["--targets", "tofino"], "unknown target 'tofino'"),
    (["--runs", "0"], "--runs must be at least 1"),
])
def test_bad_arguments_say_what_is_wrong(argv, message, capsys):
    with pytest.raises(SystemExit):
        tutorial_queues.parse_args(argv)
    assert message in capsys.readouterr().err
