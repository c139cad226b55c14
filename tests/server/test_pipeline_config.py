"""Capabilities, Set/GetForwardingPipelineConfig and their errors."""

from importlib import metadata

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from .entities import FWD, fwd_entry
from .helpers import CPU_IO_JSON, CPU_IO_P4INFO, load_p4info, pipeline_request, read, update, write

Set = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def get(stub, kind=Get.ALL, device_id=0):
    return stub.GetForwardingPipelineConfig(Get(device_id=device_id, response_type=kind))


def test_capabilities_reports_the_p4runtime_version(bare_server):
    reply = bare_server.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert reply.p4runtime_api_version == metadata.version("p4runtime")


def test_get_before_set_is_failed_precondition(bare_server):
    with pytest.raises(grpc.RpcError) as err:
        get(bare_server.stub)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_set_then_get_round_trips_every_response_type(bare_server):
    bare_server.stream().arbitrate(1)
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request(cookie=77))
    p4info = load_p4info(CPU_IO_P4INFO)
    device_config = CPU_IO_JSON.read_bytes()
    everything = get(bare_server.stub, Get.ALL).config
    assert everything.p4info == p4info
    assert everything.p4_device_config == device_config
    assert everything.cookie.cookie == 77
    cookie_only = get(bare_server.stub, Get.COOKIE_ONLY).config
    assert not cookie_only.HasField("p4info") and not cookie_only.p4_device_config
    assert cookie_only.cookie.cookie == 77
    with_p4info = get(bare_server.stub, Get.P4INFO_AND_COOKIE).config
    assert with_p4info.p4info == p4info and not with_p4info.p4_device_config
    with_json = get(bare_server.stub, Get.DEVICE_CONFIG_AND_COOKIE).config
    assert with_json.p4_device_config == device_config and not with_json.HasField("p4info")
    assert bare_server.switch.has_program


def test_verify_does_not_commit_and_save_then_commit_does(bare_server):
    bare_server.stream().arbitrate(1)
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request(action=Set.VERIFY))
    assert not bare_server.switch.has_program
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request(action=Set.VERIFY_AND_SAVE))
    assert not bare_server.switch.has_program
    commit = Set(device_id=0, action=Set.COMMIT)
    commit.election_id.low = 1
    bare_server.stub.SetForwardingPipelineConfig(commit)
    assert bare_server.switch.has_program
    assert get(bare_server.stub).config.p4info == load_p4info(CPU_IO_P4INFO)


def test_commit_without_saved_config_is_failed_precondition(bare_server):
    bare_server.stream().arbitrate(1)
    commit = Set(device_id=0, action=Set.COMMIT)
    commit.election_id.low = 1
    with pytest.raises(grpc.RpcError) as err:
        bare_server.stub.SetForwardingPipelineConfig(commit)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_reconcile_same_program_keeps_entries(server):
    write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)))
    server.stub.SetForwardingPipelineConfig(
        pipeline_request(action=Set.RECONCILE_AND_COMMIT, cookie=5)
    )
    assert len(read(server.stub, p4runtime_pb2.TableEntry(table_id=FWD))) == 1
    assert get(server.stub, Get.COOKIE_ONLY).config.cookie.cookie == 5


def test_bad_json_is_invalid_argument_and_changes_nothing(bare_server, tmp_path):
    bare_server.stream().arbitrate(1)
    bad = tmp_path / "bad.json"
    bad.write_text('{"header_types": 3')
    with pytest.raises(grpc.RpcError) as err:
        bare_server.stub.SetForwardingPipelineConfig(pipeline_request(json_path=bad))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "p4_device_config" in err.value.details()
    assert not bare_server.switch.has_program


def test_p4info_naming_a_table_missing_from_the_json_is_invalid_argument(bare_server, tmp_path):
    bare_server.stream().arbitrate(1)
    text = CPU_IO_P4INFO.read_text().replace('name: "Ingress.acl"', 'name: "Ingress.nowhere"')
    p4info = tmp_path / "p4info.txtpb"
    p4info.write_text(text)
    with pytest.raises(grpc.RpcError) as err:
        bare_server.stub.SetForwardingPipelineConfig(pipeline_request(p4info_path=p4info))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Ingress.nowhere" in err.value.details()


def test_backup_client_may_not_set_the_pipeline(bare_server):
    bare_server.stream().arbitrate(5)
    bare_server.stream().arbitrate(3)
    with pytest.raises(grpc.RpcError) as err:
        bare_server.stub.SetForwardingPipelineConfig(pipeline_request(election_id=3))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert not bare_server.switch.has_program


def test_wrong_device_id_is_not_found(bare_server):
    with pytest.raises(grpc.RpcError) as err:
        bare_server.stub.SetForwardingPipelineConfig(pipeline_request(device_id=9))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as err:
        get(bare_server.stub, device_id=9)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND



def test_reconcile_with_a_different_program_is_unimplemented_and_keeps_state(server, tmp_path):
    write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)))
    other = tmp_path / "other.json"
    other.write_text(CPU_IO_JSON.read_text().replace('"max_size": 64', '"max_size": 65'))
    with pytest.raises(grpc.RpcError) as err:
        server.stub.SetForwardingPipelineConfig(
            pipeline_request(json_path=other, action=Set.RECONCILE_AND_COMMIT)
        )
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert len(read(server.stub, p4runtime_pb2.TableEntry(table_id=FWD))) == 1


def test_non_default_role_is_unimplemented(server):
    request = pipeline_request()
    request.role = "monitor"
    with pytest.raises(grpc.RpcError) as err:
        server.stub.SetForwardingPipelineConfig(request)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
