"""P4Runtime over TLS and mutual TLS (simple_switch_grpc's --grpc-server-* semantics), with
certificates made in the test: who gets in, who is refused, what the switch logs about it, and
which files it refuses to start with."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell
from p4runtime_sh.p4runtime import SSLOptions

from p4switch.runtime import Switch
from p4switch.server import P4RuntimeServer, ServerStartError, ServerTLS

from .helpers import CPU_IO_JSON, CPU_IO_P4INFO, RunningServer, pipeline_request
from .tls_certs import make_cert, make_pki

PROJECT_ROOT = Path(__file__).resolve().parents[2]

LOGGER = "p4switch.server.tls_front"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def server_tls(pki, client_auth: bool) -> ServerTLS:
    return ServerTLS(cert=pki.switch.cert, key=pki.switch.key, cacert=pki.ca,
                     client_auth=client_auth)


def credentials(ca: Path, pair=None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        ca.read_bytes(), pair.key.read_bytes() if pair else None,
        pair.cert.read_bytes() if pair else None)


def capabilities(address: str, creds: grpc.ChannelCredentials | None) -> str:
    """The server's P4Runtime version, or the gRPC status name of the failure."""
    channel = (grpc.secure_channel(address, creds) if creds is not None
               else grpc.insecure_channel(address))
    try:
        reply = channel.unary_unary(
            "/p4.v1.P4Runtime/Capabilities",
            request_serializer=p4runtime_pb2.CapabilitiesRequest.SerializeToString,
            response_deserializer=p4runtime_pb2.CapabilitiesResponse.FromString,
        )(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        return reply.p4runtime_api_version
    except grpc.RpcError as error:
        return error.code().name
    finally:
        channel.close()


@pytest.fixture
def tls_server(pki):
    running = RunningServer(Switch(None), tls=server_tls(pki, False),
                            credentials=credentials(pki.ca))
    yield running
    running.close()


@pytest.fixture
def mtls_server(pki):
    running = RunningServer(Switch(None), tls=server_tls(pki, True),
                            credentials=credentials(pki.ca, pki.client))
    yield running
    running.close()


def refusals(caplog, *expected: str, wait: float = 5.0) -> list[str]:
    """The front's refusal warnings so far, once each `expected` text is in one of them (the
    front logs from its own thread, maybe just after the client saw the refusal)."""
    deadline = time.monotonic() + wait
    while True:
        messages = [r.getMessage() for r in caplog.records
                    if r.name == LOGGER and r.levelno == logging.WARNING]
        if all(any(e in m for m in messages) for e in expected) or time.monotonic() > deadline:
            return messages
        time.sleep(0.05)


def test_tls_accepts_the_right_ca_and_refuses_another_and_plaintext(tls_server, pki, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    address = tls_server.address
    assert capabilities(address, credentials(pki.ca)) == "1.6.0"
    assert capabilities(address, credentials(pki.other_ca)) == "UNAVAILABLE"
    assert capabilities(address, None) == "UNAVAILABLE"
    # without client authentication a client certificate is not asked for, whoever signed it
    # (simple_switch_grpc: the same)
    assert capabilities(address, credentials(pki.ca, pki.rogue)) == "1.6.0"
    messages = refusals(caplog, "does not speak TLS", "during the TLS handshake")
    assert any("does not speak TLS" in m for m in messages), messages
    assert any("closed the connection during the TLS handshake" in m or "TLS alert" in m
               for m in messages), messages
    assert all(m.startswith("P4Runtime TLS: refused 127.0.0.1:") for m in messages), messages
    assert tls_server.server.tls_refused == len(messages)


def test_mutual_tls_needs_a_client_certificate_of_the_ca(mtls_server, pki, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    address = mtls_server.address
    assert capabilities(address, credentials(pki.ca, pki.client)) == "1.6.0"
    assert capabilities(address, credentials(pki.ca)) == "UNAVAILABLE"
    assert capabilities(address, credentials(pki.ca, pki.rogue)) == "UNAVAILABLE"
    messages = refusals(caplog, "sent no client certificate", "is not trusted")
    assert any("sent no client certificate" in m for m in messages), messages
    assert any("client certificate is not trusted" in m and "--grpc-server-cacert" in m
               for m in messages), messages
    accepted = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("CN=controller" in m for m in accepted), accepted


def test_a_pipeline_and_a_large_config_travel_through_tls(mtls_server):
    """20 MB each way through the TLS front: a pipeline whose JSON is padded (still valid JSON),
    pushed, then read back whole."""
    padded = CPU_IO_JSON.read_bytes() + b" " * (20 * 1024 * 1024)
    request = pipeline_request(election_id=None)
    request.config.p4_device_config = padded
    mtls_server.stub.SetForwardingPipelineConfig(request)
    channel = grpc.secure_channel(
        mtls_server.address, credentials(*_client_files(mtls_server)),
        options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    try:
        get = channel.unary_unary(
            "/p4.v1.P4Runtime/GetForwardingPipelineConfig",
            request_serializer=p4runtime_pb2.GetForwardingPipelineConfigRequest.SerializeToString,
            response_deserializer=p4runtime_pb2.GetForwardingPipelineConfigResponse.FromString)
        reply = get(p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0), timeout=60)
    finally:
        channel.close()
    assert reply.config.p4_device_config == padded


def _client_files(running):
    tls = running.server.tls
    pki_dir = tls.cert.parent
    from .tls_certs import Pair
    return tls.cacert, Pair(pki_dir / "controller.crt", pki_dir / "controller.key")


def test_stop_frees_the_port_and_the_private_socket(pki):
    server = P4RuntimeServer(Switch(None), device_id=0, cpu_port=None, address="127.0.0.1:0",
                             packet_out=lambda data: None, tls=server_tls(pki, True))
    server.start()
    port, private = server.bound_port, server._private_dir
    assert private.stat().st_mode & 0o777 == 0o700
    server.stop()
    assert not private.exists()
    again = P4RuntimeServer(Switch(None), device_id=0, cpu_port=None,
                            address=f"127.0.0.1:{port}", packet_out=lambda data: None,
                            tls=server_tls(pki, True))
    again.start()
    try:
        assert again.bound_port == port
        assert capabilities(f"127.0.0.1:{port}", credentials(pki.ca, pki.client)) == "1.6.0"
    finally:
        again.stop()


def test_a_taken_port_is_a_start_error_with_tls(pki, mtls_server):
    taken = P4RuntimeServer(Switch(None), device_id=0, cpu_port=None,
                            address=mtls_server.address, packet_out=lambda data: None,
                            tls=server_tls(pki, True))
    with pytest.raises(ServerStartError, match=f"cannot bind .*{mtls_server.server.bound_port}"):
        taken.start()


def _start_error(tls: ServerTLS) -> str:
    server = P4RuntimeServer(Switch(None), device_id=0, cpu_port=None, address="127.0.0.1:0",
                             packet_out=lambda data: None, tls=tls)
    with pytest.raises(ServerStartError) as error:
        server.start()
    return str(error.value)


def test_unusable_files_are_start_errors_naming_option_file_and_why(pki, tmp_path):
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    missing = tmp_path / "missing.pem"
    encrypted = tmp_path / "encrypted.key"
    subprocess.run(["openssl", "pkey", "-in", str(pki.switch.key), "-aes256", "-passout",
                    "pass:secret", "-out", str(encrypted)], check=True, capture_output=True)
    good = dict(cert=pki.switch.cert, key=pki.switch.key, cacert=pki.ca, client_auth=True)
    cases = [
        (dict(good, cert=missing), f"--grpc-server-cert {missing}: cannot read it: No such file"),
        (dict(good, key=missing), f"--grpc-server-key {missing}: cannot read it"),
        (dict(good, cacert=missing), f"--grpc-server-cacert {missing}: cannot read it"),
        (dict(good, cert=garbage), f"--grpc-server-cert {garbage}: no PEM certificate"),
        (dict(good, key=garbage), f"--grpc-server-key {garbage}: not a PEM private key"),
        (dict(good, cacert=garbage), f"--grpc-server-cacert {garbage}: no PEM certificate"),
        (dict(good, key=pki.client.key),
         f"--grpc-server-key {pki.client.key} does not match --grpc-server-cert "
         f"{pki.switch.cert}"),
        (dict(good, key=encrypted), f"--grpc-server-key {encrypted}: the key is encrypted"),
    ]
    for fields, expected in cases:
        message = _start_error(ServerTLS(**fields))
        assert expected in message, (fields, message)


def test_an_unreadable_key_is_a_start_error(pki, tmp_path):
    """Root reads files whatever their mode, so as root the switch runs as `nobody` (setpriv),
    through its command line, on a key only root may read."""
    if os.geteuid() != 0:
        key = tmp_path / "switch.key"
        key.write_bytes(pki.switch.key.read_bytes())
        key.chmod(0)
        message = _start_error(ServerTLS(cert=pki.switch.cert, key=key))
        assert f"--grpc-server-key {key}: cannot read it: Permission denied" in message
        return
    shared = Path(tempfile.mkdtemp(prefix="inaemu-tls-"))      # nobody may enter it
    try:
        shared.chmod(0o755)
        cert, key = shared / "switch.pem", shared / "switch.key"
        cert.write_bytes(pki.switch.cert.read_bytes())
        cert.chmod(0o644)
        key.write_bytes(pki.switch.key.read_bytes())
        key.chmod(0o600)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-m", "inaemu", "switch", "--no-p4", "--grpc-server-addr", "127.0.0.1:0",
             "--grpc-server-ssl", "--grpc-server-cert", str(cert), "--grpc-server-key",
             str(key)], capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT)
    finally:
        shutil.rmtree(shared)
    assert done.returncode != 0
    assert f"--grpc-server-key {key}: cannot read it: Permission denied" in done.stderr


def test_a_switch_certificate_without_the_address_is_refused_by_clients(pki, tmp_path):
    """gRPC clients check that the certificate names the address they dial."""
    from .tls_certs import Pair
    ca = Pair(pki.ca, pki.ca.with_suffix(".key"))
    elsewhere = make_cert(tmp_path, "elsewhere", ca, "DNS:switch.example")
    running = RunningServer(Switch(None), tls=ServerTLS(cert=elsewhere.cert, key=elsewhere.key))
    try:
        assert capabilities(running.address, credentials(pki.ca)) == "UNAVAILABLE"
    finally:
        running.close()


def test_p4runtime_shell_library_over_mutual_tls(mtls_server, pki):
    shell.setup(device_id=0, grpc_addr=mtls_server.address, election_id=(0, 1),
                config=shell.FwdPipeConfig(str(CPU_IO_P4INFO), str(CPU_IO_JSON)),
                ssl_options=SSLOptions(False, str(pki.ca), str(pki.client.cert),
                                       str(pki.client.key)),
                verbose=False)
    try:
        entry = shell.TableEntry("Ingress.fwd")(action="Ingress.to_port")
        entry.match["smeta.ingress_port"] = "3"
        entry.action["port"] = "4"
        entry.insert()
        (back,) = list(shell.TableEntry("Ingress.fwd").read())
        assert back.action["port"].value == b"\x04"
    finally:
        shell.teardown()
    entries = mtls_server.switch.table_entries("Ingress.fwd")
    assert [(e.keys[0].value, e.params) for e in entries] == [(3, (4,))]


def test_p4runtime_shell_program_with_ssl_cacert_cert_private_key(mtls_server, pki):
    commands = "\n".join([
        'te = table_entry["Ingress.fwd"](action="Ingress.to_port")',
        'te.match["smeta.ingress_port"] = "5"',
        'te.action["port"] = "6"',
        "te.insert()",
        'print("COUNT", len(list(table_entry["Ingress.fwd"].read())))',
        "", "exit", "",
    ])
    result = subprocess.run(
        [sys.executable, "-m", "p4runtime_sh", "--grpc-addr", mtls_server.address,
         "--device-id", "0", "--election-id", "0,1",
         "--config", f"{CPU_IO_P4INFO},{CPU_IO_JSON}", "--ssl", "--cacert", str(pki.ca),
         "--cert", str(pki.client.cert), "--private-key", str(pki.client.key)],
        input=commands, capture_output=True, text=True, timeout=120)
    assert "COUNT 1" in result.stdout, result.stdout + result.stderr
    entries = mtls_server.switch.table_entries("Ingress.fwd")
    assert [(e.keys[0].value, e.params) for e in entries] == [(5, (6,))]
