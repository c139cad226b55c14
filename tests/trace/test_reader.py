"""The reader on hand-made logs and pcaps: blocks, losses, time, layout, errors."""

from __future__ import annotations

import json

import pytest

from inaemu.trace.events import LinkLoss, PipelineRun, TraceError, WireFrame, decode_ina
from inaemu.trace.layout import find_switches
from inaemu.trace.reader import parse_log, read_run
from p4switch.ports.pcap import PcapWriter
from tests.ina.packets import CONTRIB, RESULT, Endpoint, ina_packet, ip

W0 = Endpoint(0x020000000001, ip("10.0.0.1"))
AGG = Endpoint(0x0200000001FE, ip("10.0.0.254"))
CONTRIB_W0 = ina_packet(W0, AGG, kind=CONTRIB, job=7, worker=0, slot=2, chunk=5, ver=1,
                        retx=True, values=[1, 2, 3, 4])
RESULT_W0 = ina_packet(AGG, W0, kind=RESULT, job=7, worker=0, slot=2, chunk=5, ver=1, count=2,
                       values=[3, 4, 5, 6])


def _hex(frame: bytes) -> str:
    return frame[:64].hex() + ("..." if len(frame) > 64 else "")


LOG = f"""\
10.000000 [1] packet in: port 1, {len(CONTRIB_W0)} bytes: {_hex(CONTRIB_W0)}
10.000000 [1] ingress pipeline, instance type 0
10.000000 [1]   table 'tbl_ina_mark_seen': no key, runs -> action 'MyIngress.ina_mark_seen'()
10.000000 [1]     running action 'MyIngress.ina_mark_seen'
10.000000 [1]     running action 'MyIngress.ina_multicast_result'
10.000000 [1]   multicast group 7: port 1 rid 0, port 2 rid 1
10.000000 [1] packet out: port 1, {len(RESULT_W0)} bytes: {_hex(RESULT_W0)}
10.000000 [1] done: 1 packet(s) out
10.500000 [-] link loss: port 2 out, 74 bytes, crc32 0badcafe: {_hex(RESULT_W0)}
11.000000 [2] packet in: port 3, 60 bytes: ffffffffffff
11.000000 [2]   dropped: egress_spec is the drop port at the end of ingress
11.000000 [2] done: 0 packet(s) out
"""


def test_a_log_becomes_pipeline_runs_and_losses():
    events = parse_log(LOG.splitlines(), "s1")
    assert [type(e) for e in events] == [PipelineRun, LinkLoss, PipelineRun]
    run, loss, other = events
    assert (run.time, run.switch, run.packet_id, run.port, run.length) == (10.0, "s1", 1, 1, 74)
    assert run.actions == ("MyIngress.ina_mark_seen", "MyIngress.ina_multicast_result")
    assert run.multicast == ((1, 0), (2, 1))
    assert [(o.port, o.length, o.ina.kind) for o in run.outputs] == [(1, 74, RESULT)]
    header = run.ina
    assert (header.job, header.worker, header.slot, header.chunk, header.ver, header.retx) == \
        (7, 0, 2, 5, 1, True)
    assert (loss.time, loss.port, loss.direction, loss.crc32) == (10.5, 2, "out", 0x0BADCAFE)
    assert loss.ina.kind == RESULT
    assert other.ina is None and other.drops == ("egress_spec is the drop port at the end of ingress",)


def test_lines_without_time_take_the_previous_time_and_a_cut_block_still_counts():
    lines = ["5.250000 [1] packet in: port 1, 4 bytes: 00010203",
             "[1]   running action 'x'",
             "[2] packet in: port 2, 4 bytes: 00010203",
             "[2]     running action 'y'"]
    first, second = parse_log(lines, "s9")
    assert first.actions == ("x",) and second.actions == ("y",)
    assert first.time == second.time == 5.25


@pytest.mark.parametrize("line, problem", [
    ("hello", "not a switch log line"),
    ("1.0 [1] packet in: port x, 4 bytes: 00", "malformed line"),
    ("1.0 [-] link loss: port 1 sideways, 4 bytes, crc32 00000000: 00", "malformed line"),
])
def test_malformed_lines_name_the_file_and_line(line, problem):
    with pytest.raises(TraceError, match=rf"^sw\.log:2: {problem}"):
        parse_log(["1.0 [1] packet in: port 1, 1 bytes: 00", line], "s1", source="sw.log")


def test_decode_ina_refuses_what_is_not_aggregation_traffic():
    assert decode_ina(CONTRIB_W0[:58]).job == 7            # the header alone is enough
    assert decode_ina(CONTRIB_W0[:57]) is None
    not_udp = CONTRIB_W0[:23] + b"\x06" + CONTRIB_W0[24:]
    assert decode_ina(not_udp) is None
    other_port = CONTRIB_W0[:34] + b"\x12\x34\x12\x34" + CONTRIB_W0[38:]
    assert decode_ina(other_port) is None


def _write_run(run_dir):
    (run_dir / "s1.log").write_text(LOG)
    captures = run_dir / "s1-pcap"
    captures.mkdir()
    with PcapWriter(captures / "s1-eth1_in.pcap") as pcap:
        pcap.write(CONTRIB_W0, 9.999)
    with PcapWriter(captures / "s1-eth1_out.pcap") as pcap:
        pcap.write(RESULT_W0, 10.001)
    other = run_dir / "s2-pcap"                   # a switch with captures only, odd iface names
    other.mkdir()
    with PcapWriter(other / "uplink_in.pcap") as pcap:
        pcap.write(CONTRIB_W0, 10.2)
    (run_dir / "s2.ports.json").write_text(json.dumps({"4": "uplink"}))
    (run_dir / "w0.log").write_text("an agent's log, not a switch log\n")


def test_read_run_merges_switches_by_time(tmp_path):
    run_dir = tmp_path / "net"
    run_dir.mkdir()
    _write_run(run_dir)
    found = find_switches(tmp_path)                  # OUT/net is looked into
    assert [(f.name, f.log is not None, len(f.pcaps)) for f in found] == \
        [("s1", True, 2), ("s2", False, 1)]
    trace = read_run(tmp_path)
    summary = [(type(e).__name__, e.switch, e.time) for e in trace.events]
    assert summary == [("WireFrame", "s1", 9.999), ("PipelineRun", "s1", 10.0),
                       ("WireFrame", "s1", 10.001), ("WireFrame", "s2", 10.2),
                       ("LinkLoss", "s1", 10.5), ("PipelineRun", "s1", 11.0)]
    s2_frame = next(e for e in trace.events if isinstance(e, WireFrame) and e.switch == "s2")
    assert (s2_frame.port, s2_frame.iface, s2_frame.direction) == (4, "uplink", "in")
    assert trace.iface("s1", 1) == "s1-eth1" and trace.iface("s1", 2) is None


def test_a_broken_capture_is_a_trace_error(tmp_path):
    (tmp_path / "s1-pcap").mkdir()
    (tmp_path / "s1-pcap" / "s1-eth1_in.pcap").write_bytes(b"nonsense" * 4)
    with pytest.raises(TraceError, match="not a pcap file"):
        read_run(tmp_path)


def test_a_bad_ports_manifest_is_a_trace_error(tmp_path):
    (tmp_path / "s1-pcap").mkdir()
    (tmp_path / "s1.ports.json").write_text("[1, 2]")
    with pytest.raises(TraceError, match=r"s1\.ports\.json"):
        read_run(tmp_path)
