"""Digests on real simple_switch_grpc and on `inaemu switch`, the same requests and packets
(when /opt/p4ref is installed): the same DigestLists (digest, list id, data in order) for p4c's
program on both switches, and for inaemu's own compile of it on inaemu's switch. Packets enter
as PacketOuts, which both switches run through ingress from the CPU port."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.compiler import compile_source

from .learning_program import PROGRAM, frame

REFERENCE = Path("/opt/p4ref/bin")
pytestmark = pytest.mark.skipif(not (REFERENCE / "simple_switch_grpc").exists(),
                                reason="reference toolchain (/opt/p4ref) not installed")

SECOND = 1_000_000_000
ACK = "ack"


# (DigestEntry config, what the client does: frames, pauses in s, ACK of every list so far).
# Times are bounds that hold on a loaded machine: the frames of a list go within its timeout,
# an ack is taken long before the next frame; simple_switch_grpc's switch layer filters a
# sample until its P4Runtime layer has taken the one before (the half second between frames)
SCENARIOS = {
    # half a second between frames: under load simple_switch_grpc lost, for good, a sample sent
    # right behind its twin (1 run in 6 with two CPU hogs; likely in its switch layer's own
    # filter, which holds a sample until its P4Runtime layer has taken the one before)
    "each at once, duplicates cached until acked": (
        (0, 1, SECOND), [frame(1), 0.5, frame(1), 0.5, frame(2), 0.5, frame(3, 9), ACK,
                         frame(1), 0.5, frame(2)]),
    "lists of three, the rest after the timeout": (
        (SECOND, 3, SECOND), [frame(1), frame(2), frame(2), frame(3), frame(4), frame(5)]),
    "no ack timeout: no cache": ((0, 1, 0), [frame(7), 0.5, frame(7), 0.5, frame(7)]),
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _read_all(stream, responses: queue.Queue) -> None:
    try:
        for response in stream:
            responses.put(response)
    except grpc.RpcError:
        pass        # the channel closed at the end of the run


def digest_lists(command: list[str], p4info: p4info_pb2.P4Info, device_config: bytes,
                 scenario) -> list[tuple[str, int, list[str]]]:
    """Start a switch, push the program, enable every digest with the scenario's config, play
    its steps; the DigestLists received: (digest name, list id, each data in text form)."""
    (max_timeout, list_size, ack_timeout), steps = scenario
    address = f"127.0.0.1:{_free_port()}"
    switch = subprocess.Popen(
        # a Thrift port of its own: two simple_switch_grpc on 9090 at once (tests on the other
        # xdist worker) leave the second not serving gRPC at all
        command + ["--no-p4", "--device-id", "1", "--log-level", "warn",
                   "--thrift-port", str(_free_port()), "--",
                   "--grpc-server-addr", address, "--cpu-port", "64"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(address)
    requests: queue.Queue = queue.Queue()
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        responses: queue.Queue = queue.Queue()
        stream = stub.StreamChannel(iter(requests.get, None))
        threading.Thread(target=_read_all, args=(stream, responses), daemon=True).start()
        hello = p4runtime_pb2.StreamMessageRequest()
        hello.arbitration.device_id, hello.arbitration.election_id.low = 1, 1
        requests.put(hello)
        assert responses.get(timeout=30).HasField("arbitration")
        push = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        push.election_id.low = 1
        push.config.p4info.CopyFrom(p4info)
        push.config.p4_device_config = device_config
        stub.SetForwardingPipelineConfig(push)
        write = p4runtime_pb2.WriteRequest(device_id=1)
        write.election_id.low = 1
        for digest in p4info.digests:
            entry = write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.digest_entry
            entry.digest_id = digest.preamble.id
            entry.config.max_timeout_ns = max_timeout
            entry.config.max_list_size = list_size
            entry.config.ack_timeout_ns = ack_timeout
        stub.Write(write)
        names = {d.preamble.id: d.preamble.name for d in p4info.digests}
        received: list[p4runtime_pb2.DigestList] = []

        def drain(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    response = responses.get(timeout=0.05)
                except queue.Empty:
                    continue
                if response.HasField("digest"):
                    received.append(response.digest)

        def settle() -> None:
            """Read until no list has come for half a second: all that is due has come."""
            while True:
                before = len(received)
                drain(0.5)
                if len(received) == before:
                    return

        for step in steps:
            if step == ACK:
                settle()
                for message in received:
                    ack = p4runtime_pb2.StreamMessageRequest()
                    ack.digest_ack.digest_id = message.digest_id
                    ack.digest_ack.list_id = message.list_id
                    requests.put(ack)
                drain(1.0)
            elif isinstance(step, float):
                drain(step)
            else:
                out = p4runtime_pb2.StreamMessageRequest()
                out.packet.payload = step
                requests.put(out)
                drain(0.02)
        # simple_switch_grpc sends a list on the second sweep after its timeout: up to about
        # three timeouts after its first sample
        drain(1.0 + 3 * max_timeout / SECOND)
        settle()
        return [(names[m.digest_id], m.list_id,
                 [text_format.MessageToString(d, as_one_line=True) for d in m.data])
                for m in received]
    finally:
        requests.put(None)
        channel.close()
        switch.terminate()
        switch.wait(timeout=20)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("digests")
    (folder / "d.p4").write_text(PROGRAM)
    built = subprocess.run(
        [str(REFERENCE / "p4c-bm2-ss"), str(folder / "d.p4"), "-o", str(folder / "d.json"),
         "--p4runtime-files", str(folder / "d.p4info.txtpb")],
        capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    p4c_info = text_format.Parse((folder / "d.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    ours = compile_source(PROGRAM, "d.p4")
    return (p4c_info, (folder / "d.json").read_bytes()), \
        (ours.p4info, json.dumps(ours.bmv2).encode())


INAEMU = [sys.executable, "-m", "inaemu", "switch"]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_same_digest_lists_as_simple_switch_grpc(programs, name):
    (p4c_info, p4c_json), (our_info, our_json) = programs
    scenario = SCENARIOS[name]
    expected = digest_lists([str(REFERENCE / "simple_switch_grpc")], p4c_info, p4c_json,
                            scenario)
    assert expected, "simple_switch_grpc sent no digest list"
    assert digest_lists(INAEMU, p4c_info, p4c_json, scenario) == expected
    assert digest_lists(INAEMU, our_info, our_json, scenario) == expected
