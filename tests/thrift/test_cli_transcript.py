"""BMv2's own simple_switch_CLI, one session of ~140 commands (tests/thrift/cli_commands.txt),
against real simple_switch and against `inaemu switch --thrift-port`: the transcripts are the
same, but for the elapsed time, the port and the notifications socket `switch_info` shows
(p4switch/reference/cli_transcript.py).

Every table kind, indirect tables and selectors, counters, meters, registers, the multicast
engine, clone sessions, queues and reset_state, with the errors a user meets (duplicates,
expired handles, const defaults, members in use, bad indices). inaemu runs p4c's JSON (the same
input as BMv2) and its own compiler's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.reference import find_toolchain
from p4switch.reference.cli_transcript import bmv2_transcript, inaemu_transcript, normalize

HERE = Path(__file__).parent
PROGRAM = HERE / "runtime_objects.p4"
COMMANDS = (HERE / "cli_commands.txt").read_text()
TOOLCHAIN = find_toolchain()
needs_toolchain = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")


def test_normalize_keeps_small_numbers_and_masks_time_and_port():
    text = ("RuntimeCmd: 2076119\nRuntimeCmd: 0\nthrift_port              : 9090\n"
            "notifications_socket     : ipc:///tmp/x.ipc\n")
    assert normalize(text) == ("RuntimeCmd: <elapsed>\nRuntimeCmd: 0\nthrift_port: N\n"
                               "notifications_socket: S\n")


@pytest.fixture(scope="module")
def p4c_json(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("p4c") / "runtime_objects.json"
    subprocess.run([str(TOOLCHAIN.p4c), "-o", str(out), str(PROGRAM)], check=True,
                   capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def bmv2_text(p4c_json) -> str:
    return bmv2_transcript(TOOLCHAIN, p4c_json, COMMANDS)


@needs_toolchain
def test_the_cli_session_on_p4cs_json_reads_as_on_simple_switch(bmv2_text, p4c_json):
    assert "Entry has been added with handle 16777217" in bmv2_text     # the session ran
    assert inaemu_transcript(TOOLCHAIN, p4c_json, COMMANDS) == bmv2_text


@needs_toolchain
def test_the_cli_session_on_inaemus_json_reads_as_on_simple_switch(bmv2_text, tmp_path):
    out = tmp_path / "runtime_objects.json"
    out.write_text(json.dumps(compile_file(PROGRAM).bmv2))
    assert inaemu_transcript(TOOLCHAIN, out, COMMANDS) == bmv2_text
