"""`inaemu switch` with its P4Runtime server (root): the program arrives over gRPC and the CPU
port's packets travel as PacketIn/PacketOut, through the driver's thread-safe hook.

The program is tests/ports/cpu_wire.json (port 1 -> CPU port 64 -> port 1, no controller header),
pushed with SetForwardingPipelineConfig to a switch started with --no-p4.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .test_switch_veth import PROJECT_ROOT, SwitchProcess, frame
from .vethnet import VethNet, receive_frames

CPU_WIRE_JSON = Path(__file__).with_name("cpu_wire.json")
ETHER_TYPE = 0x88B5
CPU_PORT = 64


class Controller:
    """A bare P4Runtime client: one stream, primary with election id 1."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.requests: queue.Queue = queue.Queue()
        self.responses = self.stub.StreamChannel(iter(self.requests.get, None))
        update = p4runtime_pb2.StreamMessageRequest()
        update.arbitration.device_id = 0
        update.arbitration.election_id.low = 1
        self.requests.put(update)
        reply = next(self.responses)
        assert reply.arbitration.status.code == 0, reply

    def push(self, json_path: Path) -> None:
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        request.election_id.low = 1
        request.config.p4info.CopyFrom(p4info_pb2.P4Info())
        request.config.p4info.pkg_info.arch = "v1model"
        request.config.p4_device_config = json_path.read_bytes()
        self.stub.SetForwardingPipelineConfig(request, timeout=30)

    def packet_out(self, payload: bytes) -> None:
        message = p4runtime_pb2.StreamMessageRequest()
        message.packet.payload = payload
        self.requests.put(message)

    def next_packet_in(self) -> bytes:
        reply = next(self.responses)
        assert reply.HasField("packet"), reply
        return reply.packet.payload

    def close(self) -> None:
        self.requests.put(None)
        self.channel.close()


@pytest.mark.root
def test_pipeline_over_grpc_and_packet_in_out_through_the_driver():
    net = VethNet(1)
    s1 = net.switch_ends[1]
    switch = controller = None
    try:
        h1 = net.host_socket(1)
        switch = SwitchProcess("--no-p4", "-i", f"1@{s1}", "--grpc-server-addr", "127.0.0.1:0",
                               "--cpu-port", str(CPU_PORT))
        ready = switch.first_line()
        assert ready is not None and ready.startswith(
            "inaemu switch ready: device 0, 1 port, grpc 127.0.0.1:"), ready
        port = int(ready.rsplit(":", 1)[1])
        assert port > 0
        controller = Controller(f"127.0.0.1:{port}")
        controller.push(CPU_WIRE_JSON)

        controller.packet_out(frame(1, src=9))
        assert receive_frames(h1, ETHER_TYPE, expected=1) == [frame(1, src=9)]
        h1.send(frame(2, src=1))
        assert controller.next_packet_in() == frame(2, src=1)

        before = switch.cpu_seconds()          # idle with the server up and a stream open
        time.sleep(2.0)
        idle_cpu = switch.cpu_seconds() - before
        assert idle_cpu < 0.2, f"idle switch used {idle_cpu:.2f} s of CPU in 2 s"

        controller.close()
        controller = None
        switch.process.send_signal(signal.SIGTERM)
        assert switch.process.wait(timeout=30) == 0, switch.process.stderr.read()
        assert switch.rest() == [
            f"inaemu switch: port 1 ({s1}): rx 1 tx 1 lost-in 0 lost-out 0",
            f"inaemu switch: port {CPU_PORT} (cpu): rx 1 tx 1 lost-in 0 lost-out 0",
            "inaemu switch: packet code: C for parse, ingress, egress, deparse",
        ]
        h1.close()
    finally:
        if controller is not None:
            controller.close()
        if switch is not None:
            switch.kill()
        net.close()


def test_unusable_grpc_address_is_one_error_line():
    # 192.0.2.1 (TEST-NET-1) is on no interface here, so the bind fails. (A port in use would
    # not: gRPC sets SO_REUSEPORT, so two servers can share one.)
    result = subprocess.run(
        [sys.executable, "-m", "inaemu", "switch", "--no-p4", "--grpc-server-addr",
         "192.0.2.1:50051"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    error = result.stderr.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("inaemu switch: error: "), error
    assert "192.0.2.1:50051" in error[0] and result.stdout == ""
