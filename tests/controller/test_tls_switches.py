"""`inaemu run`'s TLS path without Mininet: the switch command line a Mininet switch gets with
TLS (`P4Switch.command`), run as a process with no ports (no root), on inaemu and on the real
simple_switch_grpc; the run's controller settings (`RunTLS`) get in, a client without a
certificate is refused and told why, by both switches alike."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest

from controller.client import SwitchClient
from controller.errors import ConnectionFailed
from controller.tls import ClientTLS
from inaemu.experiment.tls import RunTLS
from tests.server.tls_certs import make_pki
from topologies.mininet_switch import P4Switch, reference_tool


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def run_tls(pki, mutual: bool = True) -> RunTLS:
    client = (str(pki.client.cert), str(pki.client.key)) if mutual else (None, None)
    return RunTLS.from_options(str(pki.ca), str(pki.switch.cert), str(pki.switch.key), *client)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def command(target: str, tls: RunTLS, tmp_path) -> tuple[list[str], int]:
    """What `P4Switch.command` runs for this target with the run's TLS (no Mininet node)."""
    switch = P4Switch.__new__(P4Switch)
    port = free_port()
    switch.name, switch.device_id, switch.grpc_port, switch.target = "s1", 0, port, target
    switch.json_path, switch.run_dir, switch.trace, switch.pcap, switch.seed = \
        None, tmp_path, False, False, 0
    switch.impairments = {}
    switch.executable = reference_tool("simple_switch_grpc") if target == "bmv2" else None
    switch.switch_ports = lambda: {}
    switch.tls = tls.switch()
    return switch.command(), port


def test_the_switch_command_line_carries_simple_switch_grpcs_tls_options(pki, tmp_path):
    argv, port = command("inaemu", run_tls(pki), tmp_path)
    tail = argv[argv.index("--"):]
    assert tail == ["--", "--grpc-server-ssl", "--grpc-server-cert", str(pki.switch.cert),
                    "--grpc-server-key", str(pki.switch.key), "--grpc-server-cacert",
                    str(pki.ca), "--grpc-server-with-client-auth"]
    argv, _ = command("inaemu", run_tls(pki, mutual=False), tmp_path)
    assert "--grpc-server-with-client-auth" not in argv and "--grpc-server-ssl" in argv


def wait_listening(port: int, process: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


@pytest.mark.parametrize("target", ["inaemu", "bmv2"])
def test_run_controller_gets_in_and_a_client_without_certificate_is_told_why(
        target, pki, tmp_path):
    if target == "bmv2" and reference_tool("simple_switch_grpc") is None:
        pytest.skip("the real simple_switch_grpc is not installed (/opt/p4ref)")
    tls = run_tls(pki)
    argv, port = command(target, tls, tmp_path)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True)
    try:
        wait_listening(port, process)
        address = f"127.0.0.1:{port}"
        with SwitchClient("s1", address, 0, tls=tls.client(), timeout=10):
            pass                           # primary over mutual TLS (else it raises)
        with pytest.raises(ConnectionFailed, match="requires a client certificate"):
            SwitchClient("s1", address, 0, tls=ClientTLS(cacert=pki.ca), timeout=10)
        with pytest.raises(ConnectionFailed, match="serves P4Runtime over TLS"):
            SwitchClient("s1", address, 0, timeout=10)
        with pytest.raises(ConnectionFailed, match="refused this client's certificate"):
            SwitchClient("s1", address, 0, timeout=10, tls=ClientTLS(
                cacert=pki.ca, cert=pki.rogue.cert, key=pki.rogue.key))
    finally:
        process.terminate()
        try:
            output = process.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            process.kill()
            output = process.communicate()[0]
    if target == "inaemu":
        refused = [line for line in output.splitlines() if "P4Runtime TLS: refused" in line]
        assert any("sent no client certificate" in line for line in refused), output
        assert any("does not speak TLS" in line for line in refused), output
        assert any("client certificate is not trusted" in line for line in refused), output


def test_run_options_fit_together_or_say_which_is_wrong(pki):
    from inaemu.cli import build_parser
    from inaemu.experiment.config import ConfigError
    from inaemu.run import config_from

    def config(*extra: str):
        return config_from(build_parser(only="run").parse_args(["run", *extra]))
    files = ["--grpc-cacert", str(pki.ca), "--grpc-server-cert", str(pki.switch.cert),
             "--grpc-server-key", str(pki.switch.key)]
    assert config(*files).tls.switch().cacert is None              # TLS, not mutual
    mutual = config(*files, "--grpc-cert", str(pki.client.cert), "--grpc-key",
                    str(pki.client.key)).tls
    assert mutual.switch().cacert == pki.ca and mutual.client().mutual
    for extra, message in [
            (files[:2], "--grpc-server-cert is needed too"),
            (files + ["--grpc-cert", str(pki.client.cert)], "--grpc-cert and --grpc-key go"),
            (files[:5] + [str(pki.client.key)], "does not match --grpc-server-cert"),
            (files + ["--net", "sim"], "TLS is for Mininet")]:
        with pytest.raises(ConfigError, match=message):
            config(*extra)
