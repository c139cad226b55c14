"""Pipeline pushes: a config is verified once per content (p4switch/server/pipeline.verified)
and the devices given the same config share that read-only pipeline, each with its own state;
requests protobuf merges or refuses behave as protobuf says."""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.runtime import Switch
from p4switch.server import pipeline
from p4switch.server.errors import RequestError

from .entities import fwd_entry
from .helpers import (CPU_IO_JSON, CPU_IO_P4INFO, RunningServer, load_p4info, pipeline_request,
                      read, update, write)

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def test_one_verification_per_content():
    pipeline.clear_verified()
    config = pipeline_request(cookie=1).config
    first = pipeline.verified(config)
    assert pipeline.verified(Set.FromString(pipeline_request(cookie=1).SerializeToString())
                             .config) is first
    other = pipeline.verified(pipeline_request(cookie=2).config)
    assert other is not first and other.config.cookie.cookie == 2


def test_a_config_without_p4info_fails_each_time():
    pipeline.clear_verified()
    for _ in range(2):
        with pytest.raises(RequestError, match="no p4info"):
            pipeline.verified(p4runtime_pb2.ForwardingPipelineConfig())


def test_config_given_twice_is_merged_by_protobuf(two_switches):
    server = two_switches[0]
    server.stream().arbitrate(1)
    first = Set(device_id=0, action=Set.VERIFY_AND_COMMIT)
    first.election_id.low = 1
    first.config.p4info.CopyFrom(load_p4info(CPU_IO_P4INFO))
    second = Set()
    second.config.p4_device_config = CPU_IO_JSON.read_bytes()
    call = server.channel.unary_unary("/p4.v1.P4Runtime/SetForwardingPipelineConfig")
    call(first.SerializeToString() + second.SerializeToString())
    got = server.stub.GetForwardingPipelineConfig(Get(device_id=0)).config
    assert got.p4info == first.config.p4info
    assert got.p4_device_config == second.config.p4_device_config


@pytest.fixture
def two_switches():
    servers = [RunningServer(Switch(None)) for _ in range(2)]
    yield servers
    for server in servers:
        server.close()


def test_two_devices_share_one_verified_pipeline_and_keep_their_own_state(two_switches):
    pipeline.clear_verified()
    for server in two_switches:
        server.stream().arbitrate(1)
        server.stub.SetForwardingPipelineConfig(pipeline_request(cookie=42))
    first, second = (s.server.device._state for s in two_switches)
    assert first.pipeline is second.pipeline
    assert first.switch is not second.switch
    write(two_switches[0].stub, update("INSERT", table_entry=fwd_entry(1, 2)))
    written, untouched = (read(s.stub, p4runtime_pb2.TableEntry()) for s in two_switches)
    assert len(written) == len(untouched) + 1      # the const entries and the one written
    for server in two_switches:
        got = server.stub.GetForwardingPipelineConfig(Get(device_id=0)).config
        assert got.p4info == load_p4info(CPU_IO_P4INFO)
        assert got.p4_device_config == CPU_IO_JSON.read_bytes() and got.cookie.cookie == 42


def test_garbage_inside_config_fails_like_any_unparsable_request(two_switches):
    """grpc's own answer to bytes its deserializer refuses (INTERNAL, as for every RPC); the
    device is untouched and takes a good push afterwards."""
    server = two_switches[0]
    server.stream().arbitrate(1)
    header = Set(device_id=0, action=Set.VERIFY_AND_COMMIT)
    header.election_id.low = 1
    raw = header.SerializeToString()
    raw += b"\x2a\x02\x0a\xff"          # config (field 5): a p4info field longer than the bytes
    call = server.channel.unary_unary("/p4.v1.P4Runtime/SetForwardingPipelineConfig")
    with pytest.raises(grpc.RpcError) as error:
        call(raw)
    assert error.value.code() == grpc.StatusCode.INTERNAL
    assert server.server.device._state is None
    server.stub.SetForwardingPipelineConfig(pipeline_request())
    assert server.server.device._state is not None
