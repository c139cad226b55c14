"""Shared test plumbing: programs, a server on port 0 with a real grpc stub, stream clients."""

from __future__ import annotations

import queue
from pathlib import Path

import grpc
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.server import P4RuntimeServer

PROGRAMS = Path(__file__).resolve().parent / "programs"
CPU_IO_JSON = PROGRAMS / "cpu_io.json"
CPU_IO_P4INFO = PROGRAMS / "cpu_io.p4info.txtpb"
# The same place tests/conftest.py names: p4c output checked on real BMv2, when present.
SHARED_FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
DEVICE_ID = 0
CPU_PORT = 64


def load_p4info(path: Path) -> p4info_pb2.P4Info:
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())


def pipeline_request(
    p4info_path=CPU_IO_P4INFO, json_path=CPU_IO_JSON, *, election_id=1, action=None, cookie=None,
    device_id=DEVICE_ID,
):
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=device_id)
    if election_id is not None:
        request.election_id.low = election_id
    request.action = action or p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    request.config.p4info.CopyFrom(load_p4info(p4info_path))
    request.config.p4_device_config = Path(json_path).read_bytes()
    if cookie is not None:
        request.config.cookie.cookie = cookie
    return request


class StreamClient:
    """One StreamChannel: put requests in, read responses out (with a timeout)."""

    def __init__(self, stub) -> None:
        self._requests: queue.Queue = queue.Queue()
        self.responses: queue.Queue = queue.Queue()
        self.error: grpc.RpcError | None = None
        self._call = stub.StreamChannel(iter(self._requests.get, None))
        import threading

        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for response in self._call:
                self.responses.put(response)
        except grpc.RpcError as error:
            self.error = error
        self.responses.put(None)

    def send(self, message: p4runtime_pb2.StreamMessageRequest) -> None:
        self._requests.put(message)

    def arbitrate(self, election_id: int | None, device_id: int = DEVICE_ID):
        message = p4runtime_pb2.StreamMessageRequest()
        message.arbitration.device_id = device_id
        if election_id is not None:
            message.arbitration.election_id.high = election_id >> 64
            message.arbitration.election_id.low = election_id & ((1 << 64) - 1)
        self.send(message)
        return self.next("arbitration")

    def next(self, kind: str | None = None, timeout: float = 5.0):
        """The next response (of `kind`, skipping others); None when the stream ended."""
        while True:
            response = self.responses.get(timeout=timeout)
            if response is None or kind is None or response.HasField(kind):
                return response

    def close(self) -> None:
        self._requests.put(None)
        self._call.cancel()
        self._thread.join(timeout=5)


class RunningServer:
    """A P4RuntimeServer on 127.0.0.1:0 around `switch`, with a stub; collects packet-outs.
    With `tls` (a `ServerTLS`) the server requires TLS and the stub's channel uses
    `credentials` (grpc channel credentials; None: plaintext)."""

    def __init__(self, switch, device_id: int = DEVICE_ID, tls=None, credentials=None) -> None:
        self.switch = switch
        self.packets_out: list[bytes] = []
        self.server = P4RuntimeServer(
            switch, device_id=device_id, cpu_port=CPU_PORT, address="127.0.0.1:0",
            packet_out=self.packets_out.append, tls=tls,
        )
        self.server.start()
        if credentials is not None:
            self.channel = grpc.secure_channel(f"127.0.0.1:{self.server.bound_port}",
                                               credentials)
        else:
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.bound_port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.streams: list[StreamClient] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.bound_port}"

    def stream(self) -> StreamClient:
        client = StreamClient(self.stub)
        self.streams.append(client)
        return client

    def close(self) -> None:
        for client in self.streams:
            client.close()
        self.channel.close()
        self.server.stop(grace=0)


def write(stub, *updates, election_id=1, device_id=DEVICE_ID):
    request = p4runtime_pb2.WriteRequest(device_id=device_id)
    if election_id is not None:
        request.election_id.low = election_id
    request.updates.extend(updates)
    return stub.Write(request)


def update(kind: str, **entity) -> p4runtime_pb2.Update:
    message = p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind))
    for name, value in entity.items():
        getattr(message.entity, name).CopyFrom(value)
    return message


def read(stub, *entities, device_id=DEVICE_ID) -> list[p4runtime_pb2.Entity]:
    request = p4runtime_pb2.ReadRequest(device_id=device_id)
    for entity in entities:
        wrapped = p4runtime_pb2.Entity()
        field = next(
            f.name for f in p4runtime_pb2.Entity.DESCRIPTOR.fields
            if f.message_type is entity.DESCRIPTOR
        )
        getattr(wrapped, field).CopyFrom(entity)
        request.entities.append(wrapped)
    return [e for response in stub.Read(request) for e in response.entities]


def write_errors(error: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The per-update p4.v1.Errors of a failed Write, from grpc-status-details-bin."""
    assert error.code() == grpc.StatusCode.UNKNOWN
    details = dict(error.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    result = []
    for packed in status.details:
        detail = p4runtime_pb2.Error()
        assert packed.Unpack(detail)
        result.append(detail)
    return result
