"""P4Info actions and the BMv2 JSON (found by p4-guide's packetinout PTF suite).

p4c's P4Info lists an action called directly from an apply block, and its JSON runs the call
as a keyless table of its own with a copy of the action under the action's name. inaemu's
compiler inlined a call whose arguments are not constants into straight-line code, so its own
P4Info listed an action its JSON did not have, and the server refused that pair ("does not
exist in the BMv2 JSON"). Now the compiler makes the table as p4c does, and the server takes
a pair whose JSON lacks an action no table uses, as simple_switch_grpc takes it (no request can
name such an action); an action a table uses must still be in the JSON."""

from __future__ import annotations

import json

import grpc
import pytest

from p4switch.compiler import compile_source

from ..compiler.helpers import program
from .helpers import pipeline_request

BODY = """
    action punt(bit<16> reason, bit<48> who) { hdr.eth.ether_type = reason; hdr.eth.src = who; }
    action set_port(bit<9> p) { sm.egress_spec = p; }
    table t { key = { hdr.eth.dst : exact; } actions = { set_port; } }
    apply {
        t.apply();
        if (hdr.eth.ether_type == 0x88b5) {
            punt(hdr.eth.ether_type + 1, hdr.eth.dst);
            hdr.eth.dst = 0;
        }
    }"""


def compiled():
    return compile_source(program(BODY), "p.p4")


def test_a_direct_call_with_field_arguments_is_a_table_running_the_named_action():
    result = compiled()
    listed = {a.preamble.name for a in result.p4info.actions}
    assert "ingress.punt" in listed or any(n.endswith(".punt") for n in listed)
    name = next(n for n in listed if n.endswith(".punt"))
    (action,) = [a for a in result.bmv2["actions"] if a["name"] == name]
    assert action["runtime_data"] == []           # the arguments are bound at the call
    tables = [t for p in result.bmv2["pipelines"] for t in p["tables"]]
    (table,) = [t for t in tables if t["actions"] == [name]]
    assert table["name"] == "tbl_punt" and table["key"] == []
    assert table["default_entry"]["action_id"] == action["id"]


def test_every_p4info_action_is_in_the_json():
    result = compiled()
    names = {a["name"] for a in result.bmv2["actions"]}
    assert {a.preamble.name for a in result.p4info.actions} <= names


def push(server, result, tmp_path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(result.bmv2))
    (tmp_path / "p.p4info.txtpb").write_text(result.p4info_text())
    client = server.stream()
    assert client.arbitrate(1).arbitration.status.code == 0
    server.stub.SetForwardingPipelineConfig(
        pipeline_request(tmp_path / "p.p4info.txtpb", tmp_path / "p.json"))


def test_a_json_without_an_action_no_table_uses_is_taken(switch_server, tmp_path):
    result = compiled()
    name = next(a.preamble.name for a in result.p4info.actions if a.preamble.name.endswith("punt"))
    result.bmv2["actions"] = [a for a in result.bmv2["actions"] if a["name"] != name]
    (noaction,) = [a["id"] for a in result.bmv2["actions"] if a["name"] == "NoAction"]
    for pipe in result.bmv2["pipelines"]:          # the call inlined, as before the fix
        for t in pipe["tables"]:
            if t["actions"] == [name]:
                t["actions"], t["action_ids"] = ["NoAction"], [noaction]
                t["default_entry"]["action_id"] = noaction
                t["next_tables"] = {"NoAction": t["base_default_next"]}
    push(switch_server, result, tmp_path)


def test_a_json_without_an_action_a_table_uses_is_refused(switch_server, tmp_path):
    result = compiled()
    name = next(a.preamble.name for a in result.p4info.actions
                if a.preamble.name.endswith("set_port"))
    for action in result.bmv2["actions"]:
        if action["name"] == name:
            action["name"] = "renamed"
    with pytest.raises(grpc.RpcError) as info:
        push(switch_server, result, tmp_path)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not exist in the BMv2 JSON" in info.value.details()


def test_an_action_called_only_after_exit_is_in_the_json_too():
    # p4c's sample global_action_after_exit.p4: the call is never reached, but P4Info lists
    # its action and p4c's JSON keeps its table, reached from nowhere
    result = compile_source(program("""
        action mark(inout bit<16> v) { v = 0xdead; }
        apply { exit; mark(hdr.eth.ether_type); }"""), "p.p4")
    listed = {a.preamble.name for a in result.p4info.actions}
    assert any(n.endswith("mark") for n in listed)
    assert listed <= {a["name"] for a in result.bmv2["actions"]}
