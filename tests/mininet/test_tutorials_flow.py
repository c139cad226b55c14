"""A p4lang tutorials exercise on inaemu with only the tool names substituted (docs/tutorials.md).

The flow of the tutorials' `make run`, step by step, with the tutorials' own command lines:
compile basic.p4 with `p4c-bm2-ss --p4v 16 --p4runtime-files ... -o ...`, start
`simple_switch_grpc` exactly as utils/p4runtime_switch.py does (ports, `--pcap DIR`,
`--nanolog`, `--device-id`, the JSON, `--log-console`, `--thrift-port`, then `-- --grpc-server-addr
... --cpu-port 255`, all through a shell into a log file), push the pipeline over P4Runtime in
the legacy `p4.tmp.P4DeviceConfig` wrapper (as the older tutorials' p4runtime_lib did), write an
ipv4_lpm entry, send a packet in on port 1 and see it leave port 2 rewritten.

`inaemu shims DIR` provides the two commands; the same test runs on the real tools
(/opt/p4ref) to show the command lines and the outcome are the same.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.server.legacy_device_config import wrap

PROJECT = Path(__file__).resolve().parents[2]
BASIC = PROJECT / "tests" / "p4" / "basic.p4"
REFERENCE = Path("/opt/p4ref/bin")
INAEMU = Path(sys.executable).with_name("inaemu")

pytestmark = pytest.mark.root


def toolsets() -> list:
    return [pytest.param("inaemu", id="inaemu-shims"),
            pytest.param("reference", id="real-p4c-bmv2", marks=pytest.mark.skipif(
                not (REFERENCE / "simple_switch_grpc").exists(),
                reason="/opt/p4ref not installed"))]


def tool_dir(toolset: str, tmp_path: Path) -> Path:
    if toolset == "reference":
        return REFERENCE
    shims = tmp_path / "shims"
    subprocess.run([str(INAEMU), "shims", str(shims)], check=True, capture_output=True)
    return shims


def tutorials_switch_command(*, ports: dict[int, str], pcap_dir: Path, device_id: int,
                             json_path: Path, thrift_port: int, grpc_port: int) -> str:
    """The shell command the tutorials' P4RuntimeSwitch.start() builds, same order and form
    (some options and their values are one word each, joined with spaces)."""
    words = ["simple_switch_grpc"]
    for port, name in ports.items():
        words += ["-i", f"{port}@{name}"]
    words.append(f"--pcap {pcap_dir}")
    words += ["--nanolog", f"ipc:///tmp/bm-{device_id}-log.ipc"]
    words += ["--device-id", str(device_id)]
    words.append(str(json_path))
    words.append("--log-console")
    words.append(f"--thrift-port {thrift_port}")
    words.append(f"-- --grpc-server-addr 0.0.0.0:{grpc_port}")
    words.append("--cpu-port 255")
    return " ".join(words)


class Veths:
    """Two veth pairs in the root namespace: switch ends `<p>s1-ethN`, host ends `<p>hN`."""

    def __init__(self, prefix: str) -> None:
        self.switch = {1: f"{prefix}s1-eth1", 2: f"{prefix}s1-eth2"}
        self.host = {1: f"{prefix}h1", 2: f"{prefix}h2"}
        for port in (1, 2):
            subprocess.run(["ip", "link", "add", self.host[port], "type", "veth", "peer",
                            "name", self.switch[port]], check=True)
        for name in (*self.switch.values(), *self.host.values()):
            Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6").write_text("1\n")
            subprocess.run(["ethtool", "-K", name, "rx", "off", "tx", "off"],
                           capture_output=True)
            subprocess.run(["ip", "link", "set", name, "up"], check=True)

    def close(self) -> None:
        for name in self.host.values():
            subprocess.run(["ip", "link", "del", name], capture_output=True)


def wait_listening(port: int, process: subprocess.Popen, log: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")[-2000:]
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"switch not listening on {port}:\n{log.read_text()[-2000:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def p4_id(p4info: p4info_pb2.P4Info, kind: str, name: str) -> int:
    return next(e.preamble.id for e in getattr(p4info, kind) if e.preamble.name == name)


def push_and_program(address: str, device_id: int, p4info: p4info_pb2.P4Info,
                     device_json: bytes) -> queue.Queue:
    """Primary arbitration, the pipeline in the legacy wrapper, one ipv4_lpm entry. Returns the
    stream's request queue (close it with None)."""
    channel = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    requests: queue.Queue = queue.Queue()
    responses = stub.StreamChannel(iter(requests.get, None))
    hello = p4runtime_pb2.StreamMessageRequest()
    hello.arbitration.device_id = device_id
    hello.arbitration.election_id.low = 1
    requests.put(hello)
    assert next(responses).arbitration.status.code == 0
    setup = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=device_id, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.
        VERIFY_AND_COMMIT)
    setup.election_id.low = 1
    setup.config.p4info.CopyFrom(p4info)
    setup.config.p4_device_config = wrap(device_json)        # p4.tmp.P4DeviceConfig
    stub.SetForwardingPipelineConfig(setup)
    write = p4runtime_pb2.WriteRequest(device_id=device_id)
    write.election_id.low = 1
    entry = write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry
    entry.table_id = p4_id(p4info, "tables", "MyIngress.ipv4_lpm")
    entry.match.add(field_id=1).lpm.CopyFrom(p4runtime_pb2.FieldMatch.LPM(
        value=socket.inet_aton("10.0.2.2"), prefix_len=32))
    entry.action.action.action_id = p4_id(p4info, "actions", "MyIngress.ipv4_forward")
    entry.action.action.params.add(param_id=1, value=bytes.fromhex("080000000222"))
    entry.action.action.params.add(param_id=2, value=b"\x00\x02")
    stub.Write(write)
    return requests


def ipv4_frame(ttl: int) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + 4, 7, 0, ttl, 17, 0,
                         socket.inet_aton("10.0.1.1"), socket.inet_aton("10.0.2.2"))
    udp = struct.pack("!HHHH", 1234, 4321, 12, 0) + b"ping"
    return (bytes.fromhex("080000000100") + bytes.fromhex("080000000111") + b"\x08\x00" +
            header + udp)


def wait_group_gone(group: int, timeout: float) -> None:
    """Wait until no process of the group is left. The shell Popen started may exit on SIGTERM
    before the switch it started has closed its pcaps (dash runs the command as a child): the
    captures are complete only when the switch itself is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the switch's process group {group} still runs after "
                                 f"{timeout:g} s")
        time.sleep(0.01)


def exchange(send_on: str, listen_on: str, frame: bytes, timeout: float = 5) -> bytes | None:
    """Send one frame on `send_on`; the first IPv4 frame seen on `listen_on`, or None."""
    # The receiving socket takes no protocol until it is bound to the interface: opened with
    # ETH_P_IP it would queue IPv4 frames of every interface (the loopback's gRPC traffic)
    # in the moment before bind, and the test read one of those (a frame with zero MACs).
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as rx, \
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        rx.bind((listen_on, 0x0800))
        rx.settimeout(timeout)
        tx.bind((send_on, 0))
        tx.send(frame)
        try:
            return rx.recv(2048)
        except socket.timeout:
            return None


@pytest.mark.parametrize("toolset", toolsets())
def test_tutorials_basic_exercise(tmp_path, toolset):
    tools = tool_dir(toolset, tmp_path)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    build, pcaps, logs = tmp_path / "build", tmp_path / "pcaps", tmp_path / "logs"
    for directory in (build, pcaps, logs):
        directory.mkdir()
    # the Makefile's rule: $(P4C) --p4v 16 $(P4C_ARGS) -o $(BUILD_DIR)/$@ $<
    compiled = subprocess.run(
        "p4c-bm2-ss --p4v 16 --p4runtime-files build/basic.p4.p4info.txtpb "
        f"-o build/basic.json {BASIC}", shell=True, cwd=tmp_path, env=env,
        capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    p4info = text_format.Parse((build / "basic.p4.p4info.txtpb").read_text(),
                               p4info_pb2.P4Info())

    prefix = "tu" if toolset == "inaemu" else "tr"
    veths = Veths(prefix)
    device_id, grpc_port, thrift_port = 37 if toolset == "inaemu" else 38, free_port(), \
        free_port()
    command = tutorials_switch_command(
        ports=veths.switch, pcap_dir=pcaps, device_id=device_id,
        json_path=build / "basic.json", thrift_port=thrift_port, grpc_port=grpc_port)
    log = logs / "s1.log"
    switch = subprocess.Popen(f"{command} > {log} 2>&1", shell=True, cwd=tmp_path, env=env,
                              start_new_session=True)
    requests = None
    try:
        wait_listening(grpc_port, switch, log)
        requests = push_and_program(f"127.0.0.1:{grpc_port}", device_id, p4info,
                                    (build / "basic.json").read_bytes())
        out = exchange(veths.host[1], veths.host[2], ipv4_frame(ttl=64))
        assert out is not None, log.read_text(errors="replace")[-3000:]
        assert out[0:6] == bytes.fromhex("080000000222")       # next hop's MAC
        assert out[6:12] == bytes.fromhex("080000000100")      # the old destination
        assert out[14 + 8] == 63                               # TTL decremented
        assert out[14 + 16:14 + 20] == socket.inet_aton("10.0.2.2")
        missed = exchange(veths.host[1], veths.host[2], ipv4_frame(ttl=64)[:30] +
                          socket.inet_aton("10.0.9.9") + ipv4_frame(64)[34:], timeout=1)
        assert missed is None                                  # no entry: dropped
    finally:
        if requests is not None:
            requests.put(None)
        os.killpg(switch.pid, signal.SIGTERM)
        switch.wait(timeout=20)
        wait_group_gone(switch.pid, timeout=20)
        veths.close()
    text = log.read_text(errors="replace")
    assert "deprecated" in text                    # the legacy wrapper was noticed, once
    assert (pcaps / f"{veths.switch[1]}_in.pcap").stat().st_size > 24
    assert (pcaps / f"{veths.switch[2]}_out.pcap").stat().st_size > 24
    if toolset == "inaemu":
        assert text.count("P4DeviceConfig wrapper, which is deprecated") == 1
        assert "inaemu switch ready: device 37, 2 ports, grpc 0.0.0.0" in text
        assert f", thrift {thrift_port}" in text          # served, as simple_switch_grpc does
        assert "packet in: port 1" in text         # --log-console traced the packet
