"""The Thrift runtime on inaemu's switch, call by call, over a real socket.

Each answer here (results, handles, error codes) is what simple_switch 1.15 gave for the same
call on the same program (probed with p4switch/thrift/client.py); test_cli_transcript.py checks
the whole of simple_switch_CLI's session against real simple_switch where it is installed.
"""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from p4switch.compiler import compile_source
from p4switch.runtime import Switch
from p4switch.thrift import RuntimeService, ThriftRuntimeServer, binary
from p4switch.thrift.client import ApplicationError, RuntimeCallError, RuntimeClient
from p4switch.thrift.idl import APPLICATION_EXCEPTION, SERVICES, ApplicationErrorType
from p4switch.thrift.idl import MatchParamType as MT

PROGRAM = Path(__file__).with_name("runtime_objects.p4")


@pytest.fixture(scope="module")
def doc():
    return compile_source(PROGRAM.read_text(), str(PROGRAM)).bmv2


@pytest.fixture
def served(doc):
    sw = Switch(doc)
    log = []
    server = ThriftRuntimeServer(RuntimeService(sw, device_id=4, config_text=json.dumps(doc)),
                                 host="127.0.0.1", port=0, log=log.append)
    port = server.start()
    client = RuntimeClient("127.0.0.1", port)
    yield sw, client, port, log
    client.close()
    server.stop()


def std(client, name, **args):
    return client.call("standard", name, **({"cxt_id": 0} | args))


def exact(raw: bytes) -> dict:
    return {"type": MT.EXACT, "exact": {"key": raw}}


def mac(last: int) -> bytes:
    return bytes([0, 0, 0, 0, 0, last])


def add_dmac(client, last: int, port: int = 2) -> int:
    return std(client, "bm_mt_add_entry", table_name="I.dmac", match_key=[exact(mac(last))],
               action_name="I.to_port_counted", action_data=[port.to_bytes(2, "big")],
               options={})


def code_of(call) -> str:
    with pytest.raises(RuntimeCallError) as info:
        call()
    return info.value.name


def test_entries_get_bmv2s_handles_and_codes(served):
    sw, c, _, _ = served
    assert [add_dmac(c, i) for i in range(3)] == [0, 1, 2]
    assert code_of(lambda: add_dmac(c, 0)) == "DUPLICATE_ENTRY"
    std(c, "bm_mt_delete_entry", table_name="I.dmac", entry_handle=1)
    assert code_of(lambda: std(c, "bm_mt_delete_entry", table_name="I.dmac",
                               entry_handle=1)) == "INVALID_HANDLE"
    assert add_dmac(c, 9) == 16777217
    assert code_of(lambda: std(c, "bm_mt_delete_entry", table_name="I.dmac",
                               entry_handle=1)) == "EXPIRED_HANDLE"
    assert add_dmac(c, 10) == 3
    assert code_of(lambda: add_dmac(c, 11)) == "TABLE_FULL"            # size = 4
    assert std(c, "bm_mt_get_num_entries", table_name="I.dmac") == 4
    listed = std(c, "bm_mt_get_entries", table_name="I.dmac")
    assert [e["entry_handle"] for e in listed] == [0, 16777217, 2, 3]
    assert listed[1] == {"match_key": [exact(mac(9))], "options": {"priority": -1},
                         "entry_handle": 16777217, "action_entry": {
                             "action_type": 1, "action_name": "I.to_port_counted",
                             "action_data": [b"\x02"]}}
    std(c, "bm_mt_clear_entries", table_name="I.dmac", reset_default_entry=False)
    assert add_dmac(c, 5) == 0                      # a clear starts the numbers over


def test_a_bad_call_gets_the_code_bmv2_gives(served):
    _, c, _, _ = served
    lpm = {"type": MT.LPM, "lpm": {"key": bytes(6), "prefix_length": 8}}
    def add(table="I.by_prefix", key=(lpm,), action="I.to_port", data=(b"\x00\x02",)):
        return std(c, "bm_mt_add_entry", table_name=table, match_key=list(key),
                   action_name=action, action_data=list(data), options={})
    assert code_of(lambda: add(table="by_prefix")) == "INVALID_TABLE_NAME"   # full names only
    assert code_of(lambda: add(action="to_port")) == "INVALID_ACTION_NAME"
    assert code_of(lambda: add(action="I.to_group")) == "INVALID_ACTION_NAME"  # not the table's
    assert code_of(lambda: add(key=(exact(bytes(6)),))) == "BAD_MATCH_KEY"    # wrong kind
    assert code_of(lambda: add(key=())) == "BAD_MATCH_KEY"
    short = {"type": MT.LPM, "lpm": {"key": bytes(5), "prefix_length": 8}}
    assert code_of(lambda: add(key=(short,))) == "BAD_MATCH_KEY"
    long_prefix = {"type": MT.LPM, "lpm": {"key": bytes(6), "prefix_length": 49}}
    assert code_of(lambda: add(key=(long_prefix,))) == "BAD_MATCH_KEY"
    assert code_of(lambda: add(data=())) == "BAD_ACTION_DATA"
    assert code_of(lambda: add(table="I.members")) == "WRONG_TABLE_TYPE"
    assert code_of(lambda: std(c, "bm_mt_set_default_action", table_name="I.fixed_default",
                               action_name="I.drop", action_data=[])) \
        == "DEFAULT_ENTRY_IS_CONST"
    assert code_of(lambda: std(c, "bm_mt_read_counter", table_name="I.by_prefix",
                               entry_handle=0)) == "COUNTERS_DISABLED"
    assert code_of(lambda: std(c, "bm_mt_set_entry_ttl", table_name="I.dmac",
                               entry_handle=0, timeout_ms=5)) == "INVALID_HANDLE"
    assert add() == 0
    assert code_of(lambda: add()) == "DUPLICATE_ENTRY"


def test_priorities_are_bmv2s_lower_wins_and_decide_the_packet(served):
    sw, c, _, _ = served
    def classify(arg: int, action: str, data, priority: int | None):
        key = [{"type": MT.TERNARY, "ternary": {"key": arg.to_bytes(2, "big"),
                                                "mask": b"\x00\xff"}},
               {"type": MT.RANGE, "range": {"start": b"\x00", "end_": b"\xff"}}, exact(b"\x01")]
        options = {} if priority is None else {"priority": priority}
        return std(c, "bm_mt_add_entry", table_name="I.classify", match_key=key,
                   action_name=action, action_data=data, options=options)
    tag = lambda value, port: [value.to_bytes(4, "big"), port.to_bytes(2, "big")]  # noqa: E731
    assert classify(1, "I.tag", tag(10, 3), 7) == 0
    assert classify(1, "I.tag", tag(20, 4), 5) == 1        # same key, other priority: allowed
    assert classify(1, "I.tag", tag(30, 5), None) == 2     # no priority: BMv2 stores 0
    assert [e["options"]["priority"] for e in
            std(c, "bm_mt_get_entries", table_name="I.classify")] == [7, 5, 0]
    frame = (b"\xff" * 6 + b"\x02" * 6 + b"\x88\xb5"       # probe: op 0, lo 0, arg 1
             + bytes([0, 0]) + (1).to_bytes(2, "big") + bytes(4))
    (port, out), = sw.receive(0, frame)
    assert port == 5 and out[-4:] == (30).to_bytes(4, "big")   # priority 0 wins


def test_profiles_members_groups_and_default_members(served):
    sw, c, _, _ = served
    prof = dict(act_prof_name="I.member_profile")
    assert std(c, "bm_mt_act_prof_add_member", **prof, action_name="I.to_port",
               action_data=[b"\x00\x03"]) == 0
    assert std(c, "bm_mt_act_prof_add_member", **prof, action_name="I.tag",
               action_data=[b"\x00\x00\x00\x05", b"\x00\x01"]) == 1
    assert std(c, "bm_mt_indirect_add_entry", table_name="I.members",
               match_key=[exact(b"\x01")], mbr_handle=1, options={}) == 0
    assert code_of(lambda: std(c, "bm_mt_indirect_add_entry", table_name="I.members",
                               match_key=[exact(b"\x02")], mbr_handle=5, options={})) \
        == "INVALID_MBR_HANDLE"
    assert code_of(lambda: std(c, "bm_mt_act_prof_delete_member", **prof, mbr_handle=1)) \
        == "MBR_STILL_USED"
    std(c, "bm_mt_indirect_modify_entry", table_name="I.members", entry_handle=0, mbr_handle=0)
    assert std(c, "bm_mt_get_entries", table_name="I.members")[0]["action_entry"] == {
        "action_type": 2, "mbr_handle": 0}
    assert std(c, "bm_mt_get_default_entry", table_name="I.members") == {"action_type": 0}
    std(c, "bm_mt_indirect_set_default_member", table_name="I.members", mbr_handle=1)
    assert std(c, "bm_mt_get_default_entry", table_name="I.members") == {
        "action_type": 2, "mbr_handle": 1}
    std(c, "bm_mt_act_prof_delete_member", **prof, mbr_handle=1)
    assert std(c, "bm_mt_act_prof_add_member", **prof, action_name="I.to_port",
               action_data=[b"\x00\x07"]) == 1                      # index 1 again
    frame = b"\xff" * 6 + b"\x02" * 6 + b"\x88\xb5" + bytes([1, 0, 0, 0]) + bytes(4)
    assert [p for p, _ in sw.receive(0, frame)] == [3]              # member 0: port 3

    pick = dict(act_prof_name="I.pick")
    assert std(c, "bm_mt_act_prof_create_group", **pick) == 0
    assert std(c, "bm_mt_act_prof_add_member", **pick, action_name="I.to_port",
               action_data=[b"\x00\x04"]) == 0
    assert code_of(lambda: std(c, "bm_mt_indirect_ws_add_entry", table_name="I.balanced",
                               match_key=[exact(b"\x01")], grp_handle=0, options={})) \
        == "EMPTY_GRP"
    std(c, "bm_mt_act_prof_add_member_to_group", **pick, mbr_handle=0, grp_handle=0)
    assert code_of(lambda: std(c, "bm_mt_act_prof_add_member_to_group", **pick, mbr_handle=0,
                               grp_handle=0)) == "MBR_ALREADY_IN_GRP"
    assert std(c, "bm_mt_indirect_ws_add_entry", table_name="I.balanced",
               match_key=[exact(b"\x01")], grp_handle=0, options={}) == 0
    assert code_of(lambda: std(c, "bm_mt_act_prof_delete_group", **pick, grp_handle=0)) \
        == "GRP_STILL_USED"
    assert code_of(lambda: std(c, "bm_mt_act_prof_delete_member", **pick, mbr_handle=0)) \
        == "MBR_STILL_USED"
    assert std(c, "bm_mt_act_prof_get_groups", **pick) == [{"grp_handle": 0,
                                                            "mbr_handles": [0]}]
    assert code_of(lambda: std(c, "bm_mt_indirect_ws_add_entry", table_name="I.members",
                               match_key=[exact(b"\x03")], grp_handle=0, options={})) \
        == "WRONG_TABLE_TYPE"


def test_counters_meters_registers(served):
    sw, c, _, _ = served
    std(c, "bm_counter_write", counter_name="I.per_op", index=2,
        value={"bytes": 10, "packets": 1})
    assert std(c, "bm_counter_read", counter_name="I.per_op", index=2) == {"bytes": 10,
                                                                          "packets": 1}
    assert code_of(lambda: std(c, "bm_counter_read", counter_name="I.per_op", index=8)) \
        == "INVALID_INDEX"
    assert code_of(lambda: std(c, "bm_counter_read", counter_name="per_op", index=0)) \
        == "INVALID_COUNTER_NAME"
    meter = dict(meter_array_name="I.limiter", index=1)
    assert std(c, "bm_meter_get_rates", **meter) == []
    rates = [{"units_per_micros": 0.5, "burst_size": 3}, {"units_per_micros": 1.0,
                                                          "burst_size": 5}]
    std(c, "bm_meter_set_rates", **meter, rates=rates)
    assert std(c, "bm_meter_get_rates", **meter) == rates
    assert code_of(lambda: std(c, "bm_meter_set_rates", **meter, rates=rates[:1])) \
        == "BAD_RATES_LIST"
    assert code_of(lambda: std(c, "bm_meter_set_rates", **meter, rates=rates[::-1])) \
        == "INVALID_INFO_RATE_VALUE"
    reg = dict(register_array_name="I.small")
    std(c, "bm_register_write", **reg, index=1, value=0x1FF)        # low 8 bits kept
    assert std(c, "bm_register_read", **reg, idx=1) == 0xFF
    std(c, "bm_register_write", register_array_name="I.cells", index=1, value=-1)
    assert sw.register_read("I.cells", 1) == 0xFFFFFFFF
    std(c, "bm_register_write_range", **reg, start_index=2, end_index=4, value=9)
    assert std(c, "bm_register_read_all", **reg) == [0, 0xFF, 9, 9]  # end excluded
    assert code_of(lambda: std(c, "bm_register_write_range", **reg, start_index=3,
                               end_index=1, value=0)) == "INVALID_INDEX"
    assert code_of(lambda: std(c, "bm_register_read", **reg, idx=4)) == "INVALID_INDEX"


def test_multicast_and_mirroring(served):
    sw, c, _, _ = served
    def pre(name, **args):
        return c.call("simple_pre_lag", name, **({"cxt_id": 0} | args))
    assert pre("bm_mc_mgrp_create", mgrp=7) == 7
    assert pre("bm_mc_mgrp_create", mgrp=7) == 7                   # no complaint, as BMv2
    assert pre("bm_mc_node_create", rid=3, port_map="110", lag_map="") == 0
    pre("bm_mc_node_associate", mgrp_handle=7, l1_handle=0)
    assert code_of(lambda: pre("bm_mc_node_associate", mgrp_handle=7, l1_handle=0)) == "ERROR"
    assert code_of(lambda: pre("bm_mc_node_associate", mgrp_handle=8, l1_handle=0)) \
        == "INVALID_MGRP_HANDLE"
    assert code_of(lambda: pre("bm_mc_node_associate", mgrp_handle=7, l1_handle=9)) \
        == "INVALID_L1_HANDLE"
    assert sw.mc_group_get(7) == [(1, 3), (2, 3)]
    entries = json.loads(pre("bm_mc_get_entries"))
    assert entries["mgrps"] == [{"id": 7, "l1_handles": [0]}]
    assert entries["l2_handles"] == [{"handle": 0, "lags": [], "ports": [1, 2]}]
    with pytest.raises(ApplicationError, match="0s and 1s"):
        pre("bm_mc_node_create", rid=1, port_map="x1", lag_map="")
    ss = lambda name, **a: c.call("simple_switch", name, **a)    # noqa: E731
    ss("mirroring_session_add", mirror_id=4, config={"port": 3})
    assert ss("mirroring_session_get", mirror_id=4) == {"port": 3}
    assert code_of(lambda: ss("mirroring_session_get", mirror_id=5)) == "SESSION_NOT_FOUND"
    assert ss("mirroring_mapping_get_egress_port", mirror_id=8) == -1


def test_management_calls(served, doc):
    sw, c, port, _ = served
    assert json.loads(std(c, "bm_get_config")) == doc
    assert std(c, "bm_mgmt_get_info") == {
        "device_id": 4, "thrift_port": 0,
        "notifications_socket": "ipc:///tmp/bmv2-4-notifications.ipc"}
    assert std(c, "bm_get_id_from_name", resource_type=4, resource_name="I.small") == next(
        r["id"] for r in doc["register_arrays"] if r["name"] == "I.small")
    assert code_of(lambda: std(c, "bm_get_id_from_name", resource_type=9,
                               resource_name="x")) == "INVALID_RESOURCE_TYPE"
    assert code_of(lambda: std(c, "bm_swap_configs")) == "CONFIG_SWAP_DISABLED"
    add_dmac(c, 1)
    std(c, "bm_register_write", register_array_name="I.cells", index=0, value=5)
    c.call("standard", "bm_reset_state")
    assert std(c, "bm_mt_get_num_entries", table_name="I.dmac") == 0
    assert sw.register_read("I.cells", 0) == 0
    with pytest.raises(ApplicationError, match="context 1"):
        std(c, "bm_mt_get_num_entries", cxt_id=1, table_name="I.dmac")


def reply_to(sock: socket.socket, name: str, seqid: int, stype) -> tuple[int, dict]:
    """Send `name` with no arguments on a raw socket; the reply's (message type, body)."""
    w = binary.Writer()
    w.message_begin(name, binary.CALL, seqid)
    w.fixed(binary.BYTE, binary.STOP)
    sock.sendall(w.out)
    data = b""
    while True:
        data += sock.recv(65536)
        r = binary.Reader(data)
        try:
            _, mtype, got = r.message_begin()
            body = r.struct(APPLICATION_EXCEPTION if mtype == binary.EXCEPTION else stype)
        except binary.Incomplete:
            continue
        assert got == seqid
        return mtype, body


def test_unknown_calls_are_answered_and_broken_streams_closed(served):
    _, c, port, log = served
    with socket.create_connection(("127.0.0.1", port)) as raw:
        config = SERVICES["standard"]["bm_get_config"].result_struct()
        mtype, body = reply_to(raw, "standard:no_such_call", 5, config)
        assert mtype == binary.EXCEPTION and body["type"] == ApplicationErrorType.UNKNOWN_METHOD
        mtype, body = reply_to(raw, "bm_get_config", 6, config)         # no service name
        assert mtype == binary.EXCEPTION and "no service name" in body["message"]
        mtype, body = reply_to(raw, "standard:bm_get_config", 7, config)  # still served
        assert mtype == binary.REPLY and json.loads(body["success"])
    with socket.create_connection(("127.0.0.1", port)) as broken:
        broken.sendall(struct.pack(">I", 0x80020001) + bytes(8))         # wrong version
        assert broken.recv(100) == b""                                   # closed
    assert "bad protocol version" in " ".join(log)
    assert std(c, "bm_mt_get_num_entries", table_name="I.dmac") == 0    # others go on


def test_direct_meter_rates_stay_with_the_entry_index_as_in_bmv2(served):
    """simple_switch's direct meters are an array by entry index: rates set for the array, or
    for one index, are the meter of whatever entry takes that index later (p4-learning's
    examples/meter sets them before adding entries)."""
    sw, c, _, _ = served
    def add(last: int) -> int:
        return std(c, "bm_mt_add_entry", table_name="I.metered", match_key=[exact(mac(last))],
                   action_name="I.metered_to", action_data=[b"\x00\x01"], options={})
    def rates(handle):
        return [(r["units_per_micros"], r["burst_size"]) for r in
                std(c, "bm_mt_get_meter_rates", table_name="I.metered", entry_handle=handle)]
    meter = dict(meter_array_name="I.per_src")
    assert add(1) == 0
    std(c, "bm_meter_array_set_rates", **meter, rates=[
        {"units_per_micros": 0.5, "burst_size": 1}, {"units_per_micros": 1.0, "burst_size": 2}])
    assert rates(0) == [(0.5, 1), (1.0, 2)]
    assert add(2) == 1 and rates(1) == [(0.5, 1), (1.0, 2)]         # a later entry too
    std(c, "bm_meter_set_rates", **meter, index=1, rates=[
        {"units_per_micros": 0.25, "burst_size": 1}, {"units_per_micros": 0.75, "burst_size": 3}])
    std(c, "bm_mt_delete_entry", table_name="I.metered", entry_handle=1)
    assert add(3) == (1 << 24) | 1
    assert rates((1 << 24) | 1) == [(0.25, 1), (0.75, 3)]            # index 1's own rates
    assert std(c, "bm_meter_get_rates", **meter, index=5) == [
        {"units_per_micros": 0.5, "burst_size": 1}, {"units_per_micros": 1.0, "burst_size": 2}]
    runtime = {e.keys[0].value: e.handle for e in sw.table_entries("I.metered")}
    assert sw.direct_meter_get_rates("I.metered", runtime[3]) == [(0.25, 1), (0.75, 3)]
