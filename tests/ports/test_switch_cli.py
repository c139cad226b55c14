"""`inaemu switch` command line: validation (pure) and the one-line errors with exit status 2."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from p4switch import switch_cli
from p4switch.ports.errors import PortConfigError
from p4switch.ports.impairment import LinkImpairment

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def parse(argv: list[str]):
    parser = argparse.ArgumentParser()
    switch_cli.add_arguments(parser)
    return switch_cli.parse_options(parser.parse_args(argv))


def test_full_command_line():
    options = parse(["prog.json", "-i", "1@veth1", "--interface", "2@veth2", "--device-id", "3",
                     "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255",
                     "--pcap", "caps", "--loss", "0.1", "--loss", "2:0.5", "--delay-ms", "1:4",
                     "--seed", "9", "--log-file", "sw.log"])
    assert options.json_path == Path("prog.json")
    assert options.interfaces == {1: "veth1", 2: "veth2"}
    assert (options.device_id, options.cpu_port, options.seed) == (3, 255, 9)
    assert options.grpc_address == "127.0.0.1:50001"
    assert options.pcap_dir == Path("caps") and options.log_file == Path("sw.log")
    assert options.plan.for_port(1) == LinkImpairment(loss=0.1, delay_s=0.004)
    assert options.plan.for_port(2) == LinkImpairment(loss=0.5)


def test_defaults_follow_simple_switch_grpc():
    options = parse(["--no-p4", "-i", "0@eth9"])
    assert options.json_path is None
    assert options.grpc_address == "0.0.0.0:9559"
    assert options.cpu_port is None and options.device_id == 0 and options.pcap_dir is None
    assert parse(["--no-p4", "--pcap"]).pcap_dir == Path(".")
    assert parse(["--no-p4", "--no-grpc"]).grpc_address is None


def test_target_options_after_double_dash():
    # as simple_switch_grpc is usually called: options, the JSON, then "--" and target options
    options = parse(["-i", "1@a", "prog.json", "--", "--grpc-server-addr", "0.0.0.0:50002",
                     "--cpu-port=510"])
    assert options.grpc_address == "0.0.0.0:50002" and options.cpu_port == 510
    options = parse(["--no-p4", "--", "--cpu-port", "7"])
    assert options.json_path is None and options.cpu_port == 7



def test_words_after_double_dash_that_are_no_option_are_ignored_with_a_note():
    # p4c's PTF harness (run-bmv2-ptf-test.py) splits "... --grpc-server-addr A:P &" on spaces:
    # simple_switch_grpc gets a literal "&" and ignores it, keeping the options around it
    options = parse(["--no-p4", "--", "--grpc-server-addr", "0.0.0.0:50002", "&", "x"])
    assert options.grpc_address == "0.0.0.0:50002"
    assert options.notes == ("ignored after '--', as simple_switch_grpc ignores them: & x",)


@pytest.mark.parametrize("argv, message", [
    (["p.json", "-i", "x@"], "expected PORT@IFACE"),
    (["p.json", "-i", "1veth"], "expected PORT@IFACE"),
    (["p.json", "-i", "a@veth"], "not an integer"),
    (["p.json", "-i", "511@veth"], "outside 0..510"),
    (["p.json", "-i", "1@a", "-i", "1@b"], "already a"),
    (["p.json", "-i", "1@a", "-i", "2@a"], "attached twice"),
    (["p.json", "-i", "1@waytoolonginterfacename"], "not a valid interface name"),
    (["p.json", "--loss", "1.5"], r"\[0, 1\]"),
    (["p.json", "-i", "1@a", "--loss", "2:0.1"], "no -i attaches"),
    (["p.json", "--delay-ms", "-1"], ">= 0"),
    (["p.json", "--seed", "x"], "not an integer"),
    (["p.json", "--device-id", "-1"], "outside"),
    ([], "--no-p4"),
    (["p.json", "--no-p4"], "exclude each other"),
    (["p.json", "--no-grpc", "--grpc-server-addr", "0.0.0.0:1"], "exclude each other"),
    (["p.json", "--grpc-server-addr", "nohost"], "HOST:PORT"),
    (["p.json", "--", "--thrift-port", "9090"], "unknown target option"),
    (["p.json", "--", "--cpu-port"], "needs a value"),
    (["p.json", "-i", "5@a", "--cpu-port", "5"], "also attached"),
])
def test_bad_arguments_raise_port_config_error(argv, message):
    with pytest.raises(PortConfigError, match=message):
        parse(argv)


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inaemu", "switch", *argv], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("argv", [
    ["--no-p4", "-i", "x@"],
    ["--no-p4", "--no-grpc", "--loss", "2"],
    ["--no-p4", "--no-grpc", "-i", "1@inaemu-nosuch0"],
])
def test_bad_arguments_print_one_line_and_exit_2(argv):
    result = run_cli(*argv)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("inaemu switch: error: "), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_unknown_interface_is_named():
    result = run_cli("--no-p4", "--no-grpc", "-i", "1@inaemu-nosuch0")
    assert "no interface named 'inaemu-nosuch0'" in result.stderr


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ('{"x":', "not valid JSON"),
    ('{"pipelines": 3}', "pipelines"),
])
def test_unusable_json_is_one_error_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "prog.json"
    if content is not None:
        path.write_text(content)
    result = run_cli(str(path), "--no-grpc")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], result.stderr
