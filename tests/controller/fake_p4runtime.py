"""A minimal in-process P4Runtime server for controller tests: it records what it is sent.

It answers arbitration (highest election id is primary), stores the pipeline, records Write
updates (and can be told to fail chosen updates with per-update details, as P4Runtime servers do),
and serves Reads from entities the test puts in `read_replies`. No switch behind it: the tests
check what the controller encodes and how it handles answers, not forwarding.
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


class FakeP4Runtime(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device_id: int = 1):
        self.device_id = device_id
        self.config: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self.writes: list[p4runtime_pb2.WriteRequest] = []
        self.fail_updates: dict[int, tuple[int, str]] = {}  # update index -> (code, message)
        self.fail_existing_groups = False
        self.read_replies: list[p4runtime_pb2.Entity] = []
        self.reads: list[p4runtime_pb2.ReadRequest] = []
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(grace=None)

    @property
    def updates(self) -> list[p4runtime_pb2.Update]:
        return [u for w in self.writes for u in w.updates]

    # -- RPCs -----------------------------------------------------------------------------------------
    def StreamChannel(self, request_iterator, context):
        for request in request_iterator:
            if request.HasField("arbitration"):
                reply = p4runtime_pb2.StreamMessageResponse()
                reply.arbitration.CopyFrom(request.arbitration)
                if request.arbitration.device_id != self.device_id:
                    context.abort(grpc.StatusCode.NOT_FOUND, "wrong device id")
                reply.arbitration.status.code = code_pb2.OK
                yield reply

    def SetForwardingPipelineConfig(self, request, context):
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, "wrong device id")
        self.config = request.config
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        reply = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if self.config is not None:
            reply.config.p4info.CopyFrom(self.config.p4info)
        return reply

    def Write(self, request, context):
        with self.lock:
            failures = dict(self.fail_updates)
            if self.fail_existing_groups:
                for i, u in enumerate(request.updates):
                    if (u.type == p4runtime_pb2.Update.INSERT
                            and u.entity.HasField("packet_replication_engine_entry")):
                        failures[i] = (code_pb2.ALREADY_EXISTS, "group exists")
            if failures:
                status = status_pb2.Status(code=code_pb2.UNKNOWN, message="write failed")
                for i in range(len(request.updates)):
                    code, message = failures.get(i, (code_pb2.OK, ""))
                    detail = any_pb2.Any()
                    detail.Pack(p4runtime_pb2.Error(canonical_code=code, message=message))
                    status.details.append(detail)
                context.abort_with_status(_RichStatus(status))
            self.writes.append(request)
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        self.reads.append(request)
        yield p4runtime_pb2.ReadResponse(entities=self.read_replies)

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version="1.4.1")


class _RichStatus(grpc.Status):
    """A gRPC status carrying `grpc-status-details-bin`, as the P4Runtime spec asks for batches."""

    def __init__(self, status: status_pb2.Status):
        self.code = grpc.StatusCode.UNKNOWN
        self.details = status.message
        self.trailing_metadata = (("grpc-status-details-bin", status.SerializeToString()),)
