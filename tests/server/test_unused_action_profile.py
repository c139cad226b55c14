"""An action profile that no table uses: p4c lists it in P4Info (an extern instance) but its
BMv2 JSON has none. The server takes such a pipeline (it refused it: "does not exist in the
BMv2 JSON"), answers a write to the profile with NOT_FOUND, and reads nothing from it."""

from __future__ import annotations

import json

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.compiler import compile_source

from ..compiler.helpers import program
from .helpers import pipeline_request, read, update, write, write_errors

BODY = """
    action_selector(HashAlgorithm.identity, 32w1024, 32w10) unused;
    action_profile(32w16) used;
    action set_port(bit<9> p) { sm.egress_spec = p; }
    table t { key = { hdr.eth.dst : exact; } actions = { set_port; } implementation = used; }
    apply { t.apply(); }"""


@pytest.fixture
def pushed(switch_server, tmp_path):
    result = compile_source(program(BODY), "p.p4")
    (tmp_path / "p.json").write_text(json.dumps(result.bmv2))
    (tmp_path / "p.p4info.txtpb").write_text(result.p4info_text())
    client = switch_server.stream()
    assert client.arbitrate(1).arbitration.status.code == 0
    switch_server.stub.SetForwardingPipelineConfig(
        pipeline_request(tmp_path / "p.p4info.txtpb", tmp_path / "p.json"))
    ids = {e.preamble.name.split(".")[-1]: e.preamble.id
           for e in list(result.p4info.action_profiles) + list(result.p4info.actions)}
    return switch_server, ids


def member(ids, profile: str) -> p4runtime_pb2.ActionProfileMember:
    message = p4runtime_pb2.ActionProfileMember(action_profile_id=ids[profile], member_id=1)
    message.action.action_id = ids["set_port"]
    message.action.params.add(param_id=1, value=b"\x01")
    return message


def test_the_pipeline_is_taken_and_the_used_profile_works(pushed):
    server, ids = pushed
    assert "unused" in ids   # listed in P4Info, as p4c lists it
    write(server.stub, update("INSERT", action_profile_member=member(ids, "used")))
    got = read(server.stub, p4runtime_pb2.ActionProfileMember())   # every profile
    assert [e.action_profile_member.member_id for e in got] == [1]


def test_the_unused_profile_is_not_found_and_reads_nothing(pushed):
    server, ids = pushed
    with pytest.raises(grpc.RpcError) as info:
        write(server.stub, update("INSERT", action_profile_member=member(ids, "unused")))
    (error,) = write_errors(info.value)
    assert error.canonical_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert "used by no table" in error.message
    assert read(server.stub, p4runtime_pb2.ActionProfileMember(
        action_profile_id=ids["unused"])) == []
