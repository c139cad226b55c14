"""The server's SetForwardingPipelineConfig deserializer (p4switch/server/pipeline_requests.py):
every field but `config` parsed, the config verified once per content and shared read-only by
the devices that get the same bytes; anything unusual parsed whole as before."""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.runtime import Switch
from p4switch.server import pipeline_requests
from p4switch.server.errors import RequestError
from p4switch.server.pipeline_requests import PipelineRequest, parse_request, verified_pipeline

from .entities import fwd_entry
from .helpers import (CPU_IO_JSON, CPU_IO_P4INFO, RunningServer, load_p4info, pipeline_request,
                      read, update, write)

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def test_every_field_but_config_is_parsed_and_config_kept_as_bytes():
    request = pipeline_request(election_id=9, cookie=5, device_id=3)
    parsed = parse_request(request.SerializeToString())
    assert isinstance(parsed, PipelineRequest)
    header = Set()
    header.CopyFrom(request)
    header.ClearField("config")
    assert parsed.header == header
    assert parsed.config == request.config.SerializeToString()


def test_a_request_without_config_has_none_and_fails_as_before():
    parsed = parse_request(Set(device_id=1, action=Set.VERIFY).SerializeToString())
    assert parsed == PipelineRequest(Set(device_id=1, action=Set.VERIFY), None)
    with pytest.raises(RequestError, match="no p4info"):
        verified_pipeline(parsed.config)


def test_config_given_twice_is_merged_by_protobuf_not_split():
    first = Set(device_id=1)
    first.config.p4info.CopyFrom(load_p4info(CPU_IO_P4INFO))
    second = Set()
    second.config.p4_device_config = CPU_IO_JSON.read_bytes()
    parsed = parse_request(first.SerializeToString() + second.SerializeToString())
    assert isinstance(parsed, Set)
    assert parsed.config.p4info == first.config.p4info
    assert parsed.config.p4_device_config == second.config.p4_device_config


def test_truncated_bytes_fail_in_protobuf_as_before():
    raw = pipeline_request().SerializeToString()
    with pytest.raises(Exception) as scanned:
        parse_request(raw[:-10])
    with pytest.raises(Exception) as whole:
        Set.FromString(raw[:-10])
    assert type(scanned.value) is type(whole.value)


def test_one_verification_per_content():
    pipeline_requests.clear()
    config = pipeline_request(cookie=1).config.SerializeToString()
    first = verified_pipeline(config)
    assert verified_pipeline(bytes(config)) is first
    other = verified_pipeline(pipeline_request(cookie=2).config.SerializeToString())
    assert other is not first and other.config.cookie.cookie == 2
    with pytest.raises(RequestError, match="not a ForwardingPipelineConfig"):
        verified_pipeline(b"\x0a\xff")


@pytest.fixture
def two_switches():
    servers = [RunningServer(Switch(None)) for _ in range(2)]
    yield servers
    for server in servers:
        server.close()


def test_two_devices_share_one_verified_pipeline_and_keep_their_own_state(two_switches):
    pipeline_requests.clear()
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


def test_garbage_inside_config_is_invalid_argument(two_switches):
    server = two_switches[0]
    server.stream().arbitrate(1)
    header = Set(device_id=0, action=Set.VERIFY_AND_COMMIT)
    header.election_id.low = 1
    raw = header.SerializeToString()
    raw += b"\x2a\x02\x0a\xff"          # config (field 5): a p4info field longer than the bytes
    call = server.channel.unary_unary("/p4.v1.P4Runtime/SetForwardingPipelineConfig")
    with pytest.raises(grpc.RpcError) as error:
        call(raw)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "ForwardingPipelineConfig" in error.value.details()
