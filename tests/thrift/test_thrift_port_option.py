"""`inaemu switch --thrift-port`: a bad number or a taken port is one error line, nothing served."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from p4switch.compiler import compile_file

PROGRAM = Path(__file__).with_name("runtime_objects.p4")


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("prog") / "prog.json"
    path.write_text(json.dumps(compile_file(PROGRAM).bmv2))
    return path


def switch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inaemu", "switch", *args], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("value", ["70000", "-1", "x"])
def test_a_bad_port_number_is_refused_at_the_option(program, value):
    done = switch(str(program), "--no-grpc", "--thrift-port", value)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().startswith("inaemu switch: error: --thrift-port ")
    assert value in done.stderr


def test_a_taken_port_stops_the_switch_with_one_line(program):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = switch(str(program), "--no-grpc", "--thrift-port", str(port))
    assert done.returncode == 1 and "ready" not in done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        f"inaemu switch: error: cannot serve Thrift on 0.0.0.0:{port}: Address already in use")
