"""The in-process transport (p4switch/server/inprocess.py) against gRPC: a client sees the same
replies and the same failures (status code, details, trailing metadata) either way, for what
the transport itself decides (unknown methods, bytes that do not parse, messages over the
size limits, a stopped server) as for what the servicer decides. The servicer's own semantics
over both transports: every other test of this directory (conftest's `local` server)."""

from __future__ import annotations

import json

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.runtime import Switch
from p4switch.server.inprocess import CLIENT_MAX_RECEIVE_BYTES

from .fake_switch import FakeSwitch
from .helpers import CPU_IO_JSON, RunningServer, pipeline_request, read, update, write
from .entities import FWD, fwd_entry
from .local_server import LocalRunningServer

Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


@pytest.fixture(params=["fake", "runtime"])
def both(request):
    """The same kind of switch behind gRPC and behind the in-process transport."""
    make = FakeSwitch if request.param == "fake" else lambda: Switch(None)
    servers = [RunningServer(make()), LocalRunningServer(make())]
    yield servers
    for server in servers:
        server.close()


def outcome(call):
    """What a client can observe of a call: its reply, or its error's code, details and
    trailing metadata (the grpc-status-details-bin bytes included)."""
    try:
        reply = call()
    except grpc.RpcError as error:
        return ("error", error.code(), error.details(),
                tuple((key, value) for key, value in error.trailing_metadata() or ()))
    if isinstance(reply, list):
        return ("reply", [m.SerializeToString() for m in reply])
    return ("reply", reply.SerializeToString())


def same_outcomes(servers, scenario):
    results = [scenario(server) for server in servers]
    assert results[0] == results[1]
    return results[0]


def test_servicer_replies_and_failures_are_the_same_over_both(both):
    def scenario(server):
        primary = server.stream()
        arbitration = primary.arbitrate(1)
        steps = [("arbitration", arbitration.SerializeToString())]
        backup = server.stream().arbitrate(0)
        steps.append(("backup", backup.SerializeToString()))
        steps.append(outcome(lambda: server.stub.SetForwardingPipelineConfig(
            pipeline_request(election_id=None))))                       # no election id
        steps.append(outcome(lambda: server.stub.SetForwardingPipelineConfig(
            pipeline_request(device_id=7))))                            # no such device
        steps.append(outcome(lambda: server.stub.SetForwardingPipelineConfig(
            pipeline_request())))
        steps.append(outcome(lambda: write(
            server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)),
            update("INSERT", table_entry=fwd_entry(1, port=3)),          # duplicate
            update("DELETE", table_entry=fwd_entry(9)))))                # absent
        steps.append(outcome(lambda: read(server.stub,
                                          p4runtime_pb2.TableEntry(table_id=FWD))))
        steps.append(outcome(lambda: read(server.stub, p4runtime_pb2.TableEntry(
            table_id=FWD), device_id=5)))
        steps.append(outcome(lambda: server.stub.GetForwardingPipelineConfig(
            Get(device_id=0, response_type=Get.COOKIE_ONLY))))
        steps.append(outcome(lambda: server.stub.Capabilities(
            p4runtime_pb2.CapabilitiesRequest())))
        return steps

    steps = same_outcomes(both, scenario)
    assert steps[2][1] == grpc.StatusCode.PERMISSION_DENIED
    assert steps[3][1] == grpc.StatusCode.NOT_FOUND
    assert steps[5][:2] == ("error", grpc.StatusCode.UNKNOWN)
    assert steps[5][3][0][0] == "grpc-status-details-bin"
    assert steps[7][1] == grpc.StatusCode.NOT_FOUND


def test_what_the_transport_decides_is_the_same_over_both(both):
    def scenario(server):
        steps = []
        raw = server.channel.unary_unary("/p4.v1.P4Runtime/Write")
        steps.append(outcome(lambda: raw(b"\xff\xff\xff")))            # does not parse
        nothing = server.channel.unary_unary("/p4.v1.P4Runtime/NoSuchMethod")
        steps.append(outcome(lambda: nothing(b"")))
        other = server.channel.unary_unary("/other.Service/Write")
        steps.append(outcome(lambda: other(b"")))
        return steps

    steps = same_outcomes(both, scenario)
    assert [s[1] for s in steps] == [grpc.StatusCode.INTERNAL, grpc.StatusCode.UNIMPLEMENTED,
                                     grpc.StatusCode.UNIMPLEMENTED]
    assert steps[0][2] == "Exception deserializing request!"
    assert steps[1][2] == "Method not found!"


def test_a_reply_over_the_clients_default_limit_is_refused_over_both():
    big = json.loads(CPU_IO_JSON.read_text())
    big["__padding"] = "x" * CLIENT_MAX_RECEIVE_BYTES      # unknown keys are ignored
    servers = [RunningServer(FakeSwitch()), LocalRunningServer(FakeSwitch())]
    try:
        def scenario(server):
            server.stream().arbitrate(1)
            request = pipeline_request()
            request.config.p4_device_config = json.dumps(big).encode()
            steps = [outcome(lambda: server.stub.SetForwardingPipelineConfig(request))]
            steps.append(outcome(lambda: server.stub.GetForwardingPipelineConfig(
                Get(device_id=0, response_type=Get.ALL))))
            return steps

        results = [scenario(server) for server in servers]
    finally:
        for server in servers:
            server.close()
    assert results[0][0] == results[1][0] == ("reply", b"")
    for steps in results:
        assert steps[1][1] == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "Received message larger than max (" in steps[1][2]
    assert results[0][1][2] == results[1][1][2]


def test_a_stopped_server_refuses_calls_and_ends_streams():
    server = LocalRunningServer(Switch(None))
    stream = server.stream()
    stream.arbitrate(1)
    server.server.stop()
    assert stream.next() is None and stream.error.code() == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(grpc.RpcError) as error:
        server.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    server.close()


def test_a_closed_channel_refuses_calls_as_grpc_does():
    server = LocalRunningServer(Switch(None))
    server.channel.close()
    with pytest.raises(ValueError, match="closed channel"):
        server.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    server.close()
