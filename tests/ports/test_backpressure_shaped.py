"""Back-pressure behind a shaped link against the oracle: real simple_switch and `inaemu switch`
in a network namespace, port 2 shaped to 512 kbit/s by htb (as Mininet's TCLink shapes it), a
UDP flood of 1400-byte frames at 200 pps beside a 20 pps ECN-capable probe flow.

What the switch's P4 program sees (tests/ports/backpressure.p4) must show the queue: it fills
(deq_qdepth near the 64-packet capacity), probes are marked once it passes 10, the flood's
excess is dropped at the queue's tail and not at the socket, and what gets through is what the
link carries. With real BMv2 installed, inaemu's maximum depth and share of marked probes must
be within 25 % of BMv2's. The bounds are wide on purpose: the flood is paced by the sender's
clock, so a loaded machine shifts when the queue fills, not whether it does.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from tests.ports.shapednet import PROGRAM, RATE_KBIT, REF, ShapedNet, summary

pytestmark = pytest.mark.root

FLOOD_PPS, PROBE_PPS, SECONDS = 200, 20, 5.0


def through(target: str, program_json: Path, workdir: Path) -> tuple[dict, str]:
    """summary() of a run through `target`, and (inaemu) its exit summary."""
    net = ShapedNet()
    try:
        switch = net.start_switch(target, program_json, workdir)
        try:
            result = net.traffic(FLOOD_PPS, PROBE_PPS, SECONDS)
        finally:
            switch.terminate()
            out, _ = switch.communicate(timeout=30)
        return summary(result), out or ""
    finally:
        net.close()


@pytest.fixture(scope="module")
def inaemu_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("bp-inaemu")
    program = workdir / "backpressure.json"
    program.write_text(json.dumps(compile_file(str(PROGRAM)).bmv2))
    return through("inaemu", program, workdir)


def test_inaemu_fills_its_queue_behind_a_shaped_link_and_marks(inaemu_run):
    got, exit_summary = inaemu_run
    assert got["max_qdepth"] >= 55, got                    # the 64-packet queue filled
    assert 0.2 <= got["probes_marked_share"] <= 0.9, got
    # the qdisc held what the kernel's default send buffer pays for, not the whole flood
    assert 50 <= got["max_backlog"] <= 200, got
    # the link carried ~45 frames/s while the flood ran and the queues drained; the rest was
    # dropped at the egress queue's tail, none lost at the socket
    link_pps = RATE_KBIT * 1000 / (1442 * 8)
    assert got["flood_out"] <= got["sent"]["flood"] * 0.7, got
    assert got["flood_out"] >= link_pps * SECONDS, got
    assert "egress queue full, dropped: port 2" in exit_summary, exit_summary
    assert "tx-errors" not in exit_summary, exit_summary


@pytest.mark.skipif(not (REF / "simple_switch").exists(),
                    reason="real BMv2 (/opt/p4ref) not installed")
def test_inaemu_and_simple_switch_agree_within_a_quarter(inaemu_run, tmp_path):
    program = tmp_path / "backpressure_p4c.json"
    subprocess.run([str(REF / "p4c-bm2-ss"), "-o", str(program), str(PROGRAM)], check=True,
                   timeout=120)
    bmv2, _ = through("bmv2", program, tmp_path)
    got, _ = inaemu_run
    assert bmv2["max_qdepth"] >= 55, bmv2                   # the oracle shows the effect too
    assert abs(got["max_qdepth"] - bmv2["max_qdepth"]) <= 0.25 * bmv2["max_qdepth"], \
        (got, bmv2)
    assert abs(got["probes_marked_share"] - bmv2["probes_marked_share"]) <= \
        0.25 * bmv2["probes_marked_share"], (got, bmv2)
    assert abs(got["max_backlog"] - bmv2["max_backlog"]) <= 0.25 * bmv2["max_backlog"], \
        (got, bmv2)
