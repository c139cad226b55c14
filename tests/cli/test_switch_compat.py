"""`inaemu switch` takes simple_switch_grpc's command line as the p4lang tutorials write it
(utils/p4runtime_switch.py): JSON anywhere before `--`, target options after it, options inaemu
does not implement accepted with a note."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inaemu.cli import build_parser
from p4switch import switch_cli
from p4switch.ports.errors import PortConfigError

# What the tutorials' P4RuntimeSwitch.start() runs (one token per word, as the shell splits it).
TUTORIALS = ("-i 1@s1-eth1 -i 2@s1-eth2 --pcap /tmp/pcaps --nanolog ipc:///tmp/bm-0-log.ipc "
             "--device-id 0 build/basic.json --log-console --thrift-port 9090 "
             "-- --grpc-server-addr 0.0.0.0:50051 --cpu-port 255").split()


def parse(argv: list[str]):
    """Through the real `inaemu` parser, as `inaemu switch ARGV` parses it."""
    args, extra = build_parser(only="switch").parse_known_args(["switch", *argv])
    assert extra == []
    return switch_cli.parse_options(args)


def test_the_tutorials_command_line():
    options = parse(TUTORIALS)
    assert options.json_path == Path("build/basic.json")
    assert options.interfaces == {1: "s1-eth1", 2: "s1-eth2"}
    assert options.pcap_dir == Path("/tmp/pcaps")
    assert options.grpc_address == "0.0.0.0:50051" and options.cpu_port == 255
    assert options.device_id == 0 and options.log_console
    assert options.priority_queues is None
    assert options.thrift_port == 9090                  # served (docs/thrift.md)
    assert not any("thrift" in n for n in options.notes)
    assert any("--nanolog ipc:///tmp/bm-0-log.ipc" in n for n in options.notes)


@pytest.mark.parametrize("argv", [
    ["p.json", "--", "--priority-queues", "4"],
    ["p.json", "--", "--priority-queues=4"],
    ["--priority-queues", "4", "p.json"],
])
def test_priority_queues_either_side_of_the_double_dash(argv):
    assert parse(argv).priority_queues == 4


def test_json_before_options_and_target_options_it_ignores():
    options = parse(["p.json", "-i", "1@a", "--", "--cpu-port=3", "--max-mc-groups", "9",
                     "--disable-swap", "--drop-port", "511"])
    assert options.json_path == Path("p.json") and options.cpu_port == 3 and not options.notes


@pytest.mark.parametrize("level, traced", [("trace", True), ("debug", True), ("info", False),
                                           ("off", False)])
def test_log_level_below_debug_means_no_packet_trace(level, traced):
    for flag in ("-L", "--log-level"):
        options = parse(["p.json", "--log-console", flag, level])
        assert options.log_console is traced
        options = parse(["p.json", "--log-file", "x.log", flag, level])
        assert (options.log_file is not None) is traced


@pytest.mark.parametrize("argv, message", [
    (["p.json", "-L", "loud"], "expected one of trace, debug"),
    (["p.json", "--", "--priority-queues", "0"], "outside 1..8"),
    (["p.json", "--", "--load-modules", "x.so"], "not supported by inaemu switch"),
    (["p.json", "--", "--grpc-server-ssl"], "--grpc-server-ssl needs --grpc-server-cert"),
    (["p.json", "--", "--grpc-server-ssl", "--grpc-server-cert", "c.pem"],
     "--grpc-server-ssl needs --grpc-server-key"),
    (["p.json", "--no-grpc", "--", "--grpc-server-ssl", "--grpc-server-cert", "c",
      "--grpc-server-key", "k"], "--no-grpc and --grpc-server-ssl exclude each other"),
    (["p.json", "--", "--grpc-server-ssl=1"], "takes no value"),
    (["p.json", "--", "--drop-port", "100"], "only 511"),
    (["p.json", "--", "--disable-swap=1"], "takes no value"),
    (["p.json", "--", "--thrift-port", "1"], "unknown target option"),
])
def test_bad_simple_switch_options(argv, message):
    with pytest.raises(PortConfigError, match=message):
        parse(argv)


def test_notes_on_stderr_and_one_line_errors(tmp_path):
    # a missing JSON file after the notes: exit 2, the notes and one error line
    done = subprocess.run([sys.executable, "-m", "inaemu", "switch", "--debugger",
                           "--nanolog", "ipc:///tmp/x.ipc", str(tmp_path / "none.json"),
                           "--no-grpc"], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2
    assert lines[0].startswith("inaemu switch: note: --nanolog")
    assert lines[1].startswith("inaemu switch: note: --debugger")
    assert lines[2].startswith("inaemu switch: error: cannot read")
    done = subprocess.run([sys.executable, "-m", "inaemu", "switch", "--bogus", "p.json"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_tls_options_after_the_double_dash_as_simple_switch_grpc_takes_them():
    options = parse(["p.json", "--", "--grpc-server-ssl", "--grpc-server-cert", "s.crt",
                     "--grpc-server-key=s.key", "--grpc-server-cacert", "ca.crt",
                     "--grpc-server-with-client-auth"])
    assert options.tls.cert == Path("s.crt") and options.tls.key == Path("s.key")
    assert options.tls.cacert == Path("ca.crt") and options.tls.client_auth
    assert not options.notes
    options = parse(["--grpc-server-ssl", "--grpc-server-cert", "s.crt", "--grpc-server-key",
                     "s.key", "p.json"])
    assert options.tls.cacert is None and not options.tls.client_auth


def test_tls_files_without_grpc_server_ssl_are_ignored_with_a_note():
    """simple_switch_grpc serves plaintext then, and warns; so does inaemu switch."""
    options = parse(["p.json", "--", "--grpc-server-cert", "s.crt", "--grpc-server-key", "k",
                     "--grpc-server-with-client-auth"])
    assert options.tls is None
    assert any("given .pem files are ignored" in n for n in options.notes)
    assert any("--grpc-server-with-client-auth cannot be applied" in n for n in options.notes)
    options = parse(["p.json", "--", "--grpc-server-ssl", "--grpc-server-cert", "s.crt",
                     "--grpc-server-key", "k", "--grpc-server-with-client-auth"])
    assert any("system's CA store" in n for n in options.notes)


def test_switch_process_with_mutual_tls_logs_who_it_refused(tmp_path):
    """`inaemu switch` (no ports: no root needed) over mutual TLS: the controller with its
    certificate gets in; one without is refused, and both sides say why."""
    from controller.client import SwitchClient
    from controller.errors import ConnectionFailed
    from controller.tls import ClientTLS
    from tests.server.tls_certs import make_pki
    pki = make_pki(tmp_path / "pki")
    switch = subprocess.Popen(
        [sys.executable, "-m", "inaemu", "switch", "--no-p4", "--grpc-server-addr",
         "127.0.0.1:0", "--", "--grpc-server-ssl", "--grpc-server-cert", str(pki.switch.cert),
         "--grpc-server-key", str(pki.switch.key), "--grpc-server-cacert", str(pki.ca),
         "--grpc-server-with-client-auth"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = switch.stdout.readline().strip()
        assert ready.startswith("inaemu switch ready: device 0, 0 ports, grpc+mtls 127.0.0.1:"), \
            ready + switch.stderr.read()
        address = ready.rsplit(" ", 1)[1]
        with SwitchClient("s1", address, 0, timeout=10, tls=ClientTLS(
                cacert=pki.ca, cert=pki.client.cert, key=pki.client.key)):
            pass                        # connected as primary (else SwitchClient raises)
        with pytest.raises(ConnectionFailed, match="requires a client certificate"):
            SwitchClient("s1", address, 0, timeout=10, tls=ClientTLS(cacert=pki.ca))
    finally:
        switch.terminate()
        out, err = switch.communicate(timeout=30)
    assert switch.returncode == 0, err
    refused = [line for line in err.splitlines() if "P4Runtime TLS: refused 127.0.0.1:" in line]
    assert refused and all("sent no client certificate" in line for line in refused), err
    assert "P4Runtime clients refused at the TLS handshake:" in out, out


def test_switch_refuses_to_start_with_a_key_that_is_not_the_certificates(tmp_path):
    from tests.server.tls_certs import make_pki
    pki = make_pki(tmp_path / "pki")
    done = subprocess.run(
        [sys.executable, "-m", "inaemu", "switch", "--no-p4", "--grpc-server-addr",
         "127.0.0.1:0", "--", "--grpc-server-ssl", "--grpc-server-cert", str(pki.switch.cert),
         "--grpc-server-key", str(pki.client.key)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert f"--grpc-server-key {pki.client.key} does not match --grpc-server-cert" in line


def test_notifications_address_as_simple_switch_takes_it():
    """`--notifications-addr` is where a switch run as simple_switch publishes learning
    notifications; with P4Runtime the digests go to the client, which a note says."""
    options = parse(["p.json", "--no-grpc", "--device-id", "4"])
    assert options.notifications_address == "ipc:///tmp/bmv2-4-notifications.ipc"
    assert not options.notifications_given
    options = parse(["p.json", "--no-grpc", "--notifications-addr", "tcp://127.0.0.1:7777"])
    assert (options.notifications_address, options.notifications_given) == \
        ("tcp://127.0.0.1:7777", True)
    options = parse(["p.json", "--notifications-addr", "ipc:///tmp/n.ipc"])
    assert options.notifications_address is None
    assert any("digests go to the P4Runtime client" in note for note in options.notes)
    with pytest.raises(PortConfigError, match="--notifications-addr udp://x: expected ipc"):
        parse(["p.json", "--no-grpc", "--notifications-addr", "udp://x"])
