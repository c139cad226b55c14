"""`RunningServer`'s interface over the in-process transport (p4switch/server/inprocess.py):
the same switch, servicer and handlers, reached through a `LocalChannel` instead of gRPC."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2_grpc

from p4switch.server import LocalP4Runtime

from .helpers import CPU_PORT, DEVICE_ID, RunningServer, StreamClient


class LocalRunningServer(RunningServer):
    """A `LocalP4Runtime` around `switch`, with a generated stub over its channel (streams and
    close as `RunningServer`'s: `LocalP4Runtime.stop` takes the same `grace`)."""

    def __init__(self, switch, device_id: int = DEVICE_ID) -> None:
        self.switch = switch
        self.packets_out: list[bytes] = []
        self.server = LocalP4Runtime(switch, device_id=device_id, cpu_port=CPU_PORT,
                                     packet_out=self.packets_out.append)
        self.channel = self.server.channel()
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.streams: list[StreamClient] = []

    @property
    def address(self) -> str:
        return "in process"
