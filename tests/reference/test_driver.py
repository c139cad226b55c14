"""The reference driver itself: toolchain lookup, p4c cache, simple_switch runs, comparisons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from p4switch.reference import (Outcome, compare_outcomes, compile_p4, diff_report,
                                find_toolchain, run_stf_bmv2, run_stf_inaemu)
from p4switch.reference.bmv2 import SimpleSwitch

TOOLCHAIN = find_toolchain()
needs_toolchain = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers { ethernet_t eth; }
struct metadata { bit<8> kind; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) seen;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action flood(bit<16> group) { sm.mcast_grp = group; }
    action boom() { assert(false); }
    table t {
        key = { hdr.eth.ether_type : ternary; meta.kind : exact @name("kind"); }
        actions = { fwd; flood; boom; }
        default_action = fwd(9);
    }
    apply { seen.count(0); t.apply(); }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

# Overlapping ternary entries: the higher STF priority wins whatever the order of the adds;
# a table added after a packet only changes later packets; multicast to 3 ports; a counter.
STF = """
add t 1 hdr.eth.ether_type:0x88** fwd(port:1)
add t 5 hdr.eth.ether_type:0x88B5 fwd(port:5)
add t 3 hdr.eth.ether_type:0x8*** kind:0 fwd(port:3)
packet 0 000000000001 000000000002 88B5
expect 5 000000000001 000000000002 88B5 $
packet 0 000000000001 000000000002 88CC
expect 3 000000000001 000000000002 88CC $
packet 0 000000000001 000000000002 0800
expect 9 000000000001 000000000002 0800 $
mc_mgrp_create 7
mc_node_create 0 2 4
mc_node_create 1 6
mc_node_associate 7 0
mc_node_associate 7 1
add t 9 hdr.eth.ether_type:0x0800 flood(group:7)
packet 0 000000000001 000000000002 0800
expect 2 000000000001 000000000002 0800 $
expect 4 000000000001 000000000002 0800 $
expect 6 000000000001 000000000002 0800 $
check_counter seen(0) packets == 4
"""


def own_children() -> set[int]:
    """Processes whose parent is this test process (simple_switch and its CLI would be)."""
    children = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                children.add(int(entry.name))
    return children


@pytest.fixture(scope="module")
def program_json(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("prog") / "prog.p4"
    source.write_text(PROGRAM)
    built = compile_p4(TOOLCHAIN, source, cache_dir=tmp_path_factory.mktemp("p4c"))
    assert built.ok, built.stderr
    return built.json_path


def test_toolchain_lookup_honours_the_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("INAEMU_P4REF", str(tmp_path))
    assert find_toolchain() is None                      # no tools there: None, no error
    (tmp_path / "bin").mkdir()
    for tool in ("p4c-bm2-ss", "simple_switch", "simple_switch_CLI"):
        (tmp_path / "bin" / tool).write_text("#!/bin/sh\n")
        (tmp_path / "bin" / tool).chmod(0o755)
    found = find_toolchain()
    assert found is not None and found.p4c == tmp_path / "bin" / "p4c-bm2-ss"


@needs_toolchain
def test_p4c_results_are_cached_by_content(tmp_path) -> None:
    source = tmp_path / "prog.p4"
    source.write_text(PROGRAM)
    first = compile_p4(TOOLCHAIN, source, cache_dir=tmp_path / "cache")
    again = compile_p4(TOOLCHAIN, source, cache_dir=tmp_path / "cache")
    assert first.ok and not first.cached and again.cached and again.seconds == 0.0
    assert again.json_path == first.json_path and again.p4info_path.is_file()
    source.write_text(PROGRAM.replace("fwd(9)", "fwd(8)"))
    assert not compile_p4(TOOLCHAIN, source, cache_dir=tmp_path / "cache").cached
    source.write_text("control;")
    broken = compile_p4(TOOLCHAIN, source, cache_dir=tmp_path / "cache")
    assert not broken.ok and "error" in broken.stderr and broken.json_path is None


@needs_toolchain
def test_priorities_interleaving_multicast_and_counters_on_bmv2(program_json) -> None:
    before = own_children()
    real = run_stf_bmv2(program_json, STF, toolchain=TOOLCHAIN, registers=True)
    assert real.error is None and real.passed, real.report
    assert {port: len(frames) for port, frames in real.outputs.items()} == \
        {5: 1, 3: 1, 9: 1, 2: 1, 4: 1, 6: 1}
    assert real.counter_reads == [("counter", "I.seen", 0, 4, 56)]
    assert len(real.packet_logs) == 4 and any("Replicating packet on port 6" in line
                                              for line in real.packet_logs[3])
    assert own_children() == before                      # switch and CLI are gone
    mine = run_stf_inaemu(program_json, STF, registers=True)
    assert compare_outcomes(real, mine) == []


@needs_toolchain
def test_a_failed_expectation_is_reported_not_raised(program_json) -> None:
    wrong = STF.replace("expect 5 000000000001", "expect 5 0000000000FF")
    real = run_stf_bmv2(program_json, wrong, toolchain=TOOLCHAIN)
    assert not real.passed and real.error is None
    assert "differs" in real.report and real.report.splitlines()[-1].startswith("FAIL:")


@needs_toolchain
def test_an_assert_stops_the_test_as_aborted(program_json) -> None:
    stf = "add t 1 hdr.eth.ether_type:0x1234 boom()\npacket 0 000000000001 000000000002 1234\n"
    real = run_stf_bmv2(program_json, stf, toolchain=TOOLCHAIN)
    assert real.aborted and "assert" in real.aborted.lower()
    assert compare_outcomes(real, run_stf_inaemu(program_json, stf)) == []


@needs_toolchain
def test_refused_json_and_commands_carry_the_tools_messages(program_json, tmp_path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(program_json.read_text().replace('"ternary"', '"fuzzy"'))
    outcome = run_stf_bmv2(broken, "packet 0 00\n", toolchain=TOOLCHAIN)
    assert outcome.error and "simple_switch refused" in outcome.error and "fuzzy" in outcome.error
    stf = "mc_node_create 0 2\nmc_node_associate 99 0\n"      # group 99 was never created
    outcome = run_stf_bmv2(program_json, stf, toolchain=TOOLCHAIN)
    assert outcome.error.startswith("<stf>:2: error: simple_switch_CLI refused "
                                    "'mc_node_associate 99 0'"), outcome.error


@needs_toolchain
def test_simple_switch_session_stops_cleanly(program_json) -> None:
    with SimpleSwitch(TOOLCHAIN, program_json) as switch:
        assert "Entry has been added" in switch.cli(
            "table_add I.t I.fwd 0x0800&&&0xffff 0 => 4 10")
        outputs, log = switch.send(1, bytes(12) + b"\x08\x00")
        assert outputs == [(4, bytes(12) + b"\x08\x00")]
        assert any("Transmitting packet" in line for line in log)
        work_dir = switch._dir
    assert not switch.alive and not work_dir.exists()


def test_outcome_comparison_names_every_difference() -> None:
    a = Outcome(target="bmv2", outputs={1: [b"\x01"], 2: [b"\x02"]},
                counter_reads=[("counter", "c", 0, 1, 60)], registers={"r": [0, 1]})
    b = Outcome(target="inaemu", outputs={1: [b"\x01", b"\x03"]},
                counter_reads=[("counter", "c", 0, 1, 64)], registers={"r": [0, 2]})
    diffs = compare_outcomes(a, b)
    assert len(diffs) == 4
    assert "port 1 packet #2" in diffs[0] and "port 2 packet #1" in diffs[1]
    assert "counter" in diffs[2] and "indexes [1]" in diffs[3]
    assert diff_report(a, a) == "bmv2 and bmv2 agree"
    refused = Outcome(target="inaemu", error="nope")
    assert compare_outcomes(a, refused) == ["only inaemu could not run the test: nope"]


@needs_toolchain
def test_a_slow_start_is_a_timeout_not_a_refusal(program_json) -> None:
    """A switch still starting when the wait ends was said to have refused the JSON (so a
    loaded machine counted valid programs as ones simple_switch cannot run)."""
    from p4switch.reference.bmv2 import Bmv2Error, SwitchRefused
    with pytest.raises(Bmv2Error) as caught:
        SimpleSwitch(TOOLCHAIN, program_json, start_timeout_s=0.001)
    assert not isinstance(caught.value, SwitchRefused)
    assert "did not start within" in str(caught.value)


@needs_toolchain
def test_a_taken_thrift_port_is_retried_with_another(program_json, monkeypatch) -> None:
    import socket

    from p4switch.reference import bmv2
    with socket.socket(socket.AF_INET6) as busy:      # someone took the port (v4 and v6)
        busy.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        busy.bind(("::", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = iter([taken, bmv2.free_tcp_port()])
        monkeypatch.setattr(bmv2, "free_tcp_port", lambda: next(ports))
        with SimpleSwitch(TOOLCHAIN, program_json) as switch:
            assert switch.thrift_port != taken and switch.alive


@needs_toolchain
def test_module_command_runs_four_ways_and_says_so(capsys) -> None:
    from p4switch.reference.__main__ import main
    root = Path(__file__).resolve().parents[2] / "tests" / "p4"
    assert main([str(root / "varbit_bits.p4"), str(root / "varbit_bits.stf")]) == 0
    out = capsys.readouterr().out
    assert out.count(": PASS (") == 4 and "p4c JSON: simple_switch and inaemu agree" in out


def test_cli_failures_are_told_by_line_starts_not_by_names() -> None:
    from p4switch.reference.bmv2 import _CLI_FAILURE
    assert _CLI_FAILURE.search("Adding entry\nInvalid table operation (DUPLICATE_ENTRY)\n")
    assert _CLI_FAILURE.search("Error: Invalid table name (nosuch)\n")
    assert _CLI_FAILURE.search("*** Unknown syntax: tabel_add x\n")
    assert not _CLI_FAILURE.search("action:              I.drop_if_out_of_range_or_invalid\n"
                                   "Entry has been added with handle 0\n")


@needs_toolchain
def test_a_killed_driver_leaves_no_switch_running(program_json) -> None:
    import subprocess
    import sys
    import time
    script = ("import os, sys\n"
              "from p4switch.reference import find_toolchain\n"
              "from p4switch.reference.bmv2 import SimpleSwitch\n"
              "sw = SimpleSwitch(find_toolchain(), sys.argv[1])\n"
              "print(sw._proc.pid, sw._cli.pid, flush=True)\n"
              "os._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", script, str(program_json)],
                          capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2, done.stderr

    def running(pid: int) -> bool:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        return "State:\tZ" not in status

    deadline = time.monotonic() + 10
    while any(map(running, pids)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(map(running, pids))


@needs_toolchain
def test_a_refusal_is_one_even_while_the_switch_is_still_exiting(tmp_path) -> None:
    """simple_switch closes its output when it refuses a JSON and exits a moment later; a
    check of the process alone called that a slow start ('did not start within 20 s')."""
    import dataclasses

    from p4switch.reference.bmv2 import SwitchRefused
    fake = tmp_path / "simple_switch"
    fake.write_text("#!/bin/sh\necho \"Invalid match type: 'fuzzy'\"\nexec >&- 2>&-\nsleep 2\n")
    fake.chmod(0o755)
    toolchain = dataclasses.replace(TOOLCHAIN, simple_switch=fake)
    with pytest.raises(SwitchRefused, match="fuzzy"):
        SimpleSwitch(toolchain, tmp_path / "any.json", start_timeout_s=10)
