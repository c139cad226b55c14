"""The controller over TLS: sessions with a switch that requires TLS or mutual TLS, and every
refusal as one `ConnectionFailed` that names the TLS problem, quickly (not a timeout)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from controller.client import SwitchClient
from controller.errors import ConnectionFailed, TLSConfigError
from controller.fabric import Fabric
from controller.tls import ClientTLS
from inaemu.cli import main
from p4switch.runtime import Switch
from p4switch.server import ServerTLS
from tests.server.helpers import CPU_IO_JSON, CPU_IO_P4INFO, RunningServer
from tests.server.tls_certs import make_pki
from topologies.builders import star

TIMEOUT = 8.0
QUICK = 4.0       # a TLS refusal is explained well before the connect timeout


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def serve(pki, *, client_auth: bool, tls: bool = True) -> RunningServer:
    settings = ServerTLS(cert=pki.switch.cert, key=pki.switch.key, cacert=pki.ca,
                         client_auth=client_auth) if tls else None
    return RunningServer(Switch(None), tls=settings)


@pytest.fixture(scope="module")
def mtls(pki):
    running = serve(pki, client_auth=True)
    yield running
    running.close()


def connect_error(address: str, tls: ClientTLS | None) -> str:
    started = time.monotonic()
    with pytest.raises(ConnectionFailed) as error:
        SwitchClient("s1", address, 0, tls=tls, timeout=TIMEOUT)
    assert time.monotonic() - started < QUICK, str(error.value)
    return str(error.value)


def test_mutual_tls_session_pushes_a_pipeline(mtls, pki):
    tls = ClientTLS(cacert=pki.ca, cert=pki.client.cert, key=pki.client.key)
    with SwitchClient("s1", mtls.address, 0, tls=tls, timeout=TIMEOUT) as client:
        from controller.p4info import P4InfoIndex
        client.set_pipeline(P4InfoIndex.from_file(CPU_IO_P4INFO), CPU_IO_JSON.read_bytes())
    assert mtls.switch.has_program


def test_each_refusal_says_which_tls_problem(mtls, pki):
    address = mtls.address
    assert "serves P4Runtime over TLS" in connect_error(address, None)
    assert "--grpc-cacert" in connect_error(address, None)
    message = connect_error(address, ClientTLS(cacert=pki.ca))
    assert "requires a client certificate" in message and "--grpc-cert" in message
    message = connect_error(address, ClientTLS(cacert=pki.ca, cert=pki.rogue.cert,
                                               key=pki.rogue.key))
    assert f"refused this client's certificate {pki.rogue.cert}" in message
    message = connect_error(address, ClientTLS(cacert=pki.other_ca, cert=pki.client.cert,
                                               key=pki.client.key))
    assert f"the CA of --grpc-cacert {pki.other_ca} does not sign" in message
    assert message.startswith(f"s1: cannot connect to {address}: ")


def test_tls_client_to_a_plaintext_switch(pki):
    running = serve(pki, client_auth=False, tls=False)
    try:
        message = connect_error(running.address, ClientTLS(cacert=pki.ca))
        assert "does not speak TLS" in message
    finally:
        running.close()


def test_nothing_listening_is_still_the_timeout_message(pki):
    running = serve(pki, client_auth=False)
    address = running.address
    running.close()
    with pytest.raises(ConnectionFailed, match="no P4Runtime server answers at .*waited 1 s"):
        SwitchClient("s1", address, 0, tls=ClientTLS(cacert=pki.ca), timeout=1.0)


def test_bad_client_files_are_errors_naming_option_and_file(pki, tmp_path):
    with pytest.raises(TLSConfigError, match="--grpc-cert needs --grpc-key"):
        ClientTLS(cacert=pki.ca, cert=pki.client.cert)
    with pytest.raises(TLSConfigError, match=f"--grpc-key {pki.rogue.key} does not match "
                                             f"--grpc-cert {pki.client.cert}"):
        ClientTLS(cacert=pki.ca, cert=pki.client.cert, key=pki.rogue.key).check()
    missing = tmp_path / "none.crt"
    with pytest.raises(TLSConfigError, match=f"--grpc-cacert {missing}: cannot read it"):
        ClientTLS(cacert=missing).check()
    assert ClientTLS.from_options(False, None, None, None) is None
    assert ClientTLS.from_options(False, str(pki.ca), None, None) == ClientTLS(cacert=pki.ca)


def test_fabric_over_mutual_tls_and_its_progress_line(mtls, pki):
    topology = star(2)
    topology = dataclasses.replace(topology, switches=[dataclasses.replace(
        topology.switches[0], grpc_port=mtls.server.bound_port, device_id=0)])
    lines: list[str] = []
    tls = ClientTLS(cacert=pki.ca, cert=pki.client.cert, key=pki.client.key)
    with Fabric(topology, timeout=TIMEOUT, tls=tls, progress=lines.append) as fabric:
        fabric.push_pipeline(CPU_IO_P4INFO, CPU_IO_JSON)
    assert any(line.endswith("(device 0, mutual TLS)") for line in lines), lines


def test_controller_command_over_mutual_tls(mtls, pki, tmp_path, capsys):
    topology = star(2)
    topology = dataclasses.replace(topology, switches=[dataclasses.replace(
        topology.switches[0], grpc_port=mtls.server.bound_port, device_id=0)])
    topology.save(tmp_path / "topo.json")
    base = ["controller", "--topology", str(tmp_path / "topo.json"), "--p4info",
            str(CPU_IO_P4INFO), "--json", str(CPU_IO_JSON), "--timeout", str(TIMEOUT)]
    assert main(base + ["--grpc-cacert", str(pki.ca), "--grpc-cert", str(pki.client.cert),
                        "--grpc-key", str(pki.client.key)]) == 0
    assert "pipeline pushed" in capsys.readouterr().out
    assert main(base + ["--grpc-cacert", str(pki.ca)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "requires a client certificate" in err[0], err
    assert main(base + ["--grpc-cert", str(pki.client.cert)]) == 2
    assert "--grpc-cert needs --grpc-key" in capsys.readouterr().err
