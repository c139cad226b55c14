"""Checksum verification and update (IPv4 header, UDP with payload) and action profiles."""

from __future__ import annotations

import pytest

from p4switch.runtime import ExactKey, FailedPrecondition, InvalidArgument, Switch
from p4switch.runtime.state.hashes import csum16

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, param, std, valid

IPV4 = [("version", 4), ("ihl", 4), ("tos", 8), ("len", 16), ("id", 16), ("flags", 3),
        ("frag", 13), ("ttl", 8), ("proto", 8), ("csum", 16), ("src", 32), ("dst", 32)]
SUMMED = [name for name, _ in IPV4 if name != "csum"]


def _ipv4_program(update=True, verify=True):
    prog = ethernet_program()
    prog.header_type("ipv4_t", IPV4)
    prog.header("ipv4", "ipv4_t")
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x0800, None, "ip"), (None, None, None)])
    prog.state("ip", [prog.extract("ipv4")])
    prog.calculation("ipsum", "csum16", [fld("ipv4", n) for n in SUMMED])
    prog.checksum("ck", ["ipv4", "csum"], "ipsum", verify=verify, update=update,
                  if_cond=valid("ipv4"))
    act = prog.action("fwd", [
        assign(fld("ipv4", "ttl"), op("&", op("+", fld("ipv4", "ttl"), const(0xFF)),
                                      const(0xFF))),
        assign(fld("eth", "type"), op("|", const(0x0800), std("checksum_error"))),
        assign(std("egress_spec"), const(1))])
    prog.run("fwd", act)
    return Switch(prog.build())


def _ip_header(ttl=64, checksum=None) -> bytes:
    head = bytes.fromhex("45000014000100004011") + b"\0\0" + bytes([10, 0, 0, 1, 10, 0, 0, 2])
    head = head[:8] + bytes([ttl]) + head[9:]
    value = csum16(head) if checksum is None else checksum
    return head[:10] + value.to_bytes(2, "big") + head[12:]


def test_ipv4_checksum_verified_and_recomputed():
    sw = _ipv4_program()
    [(_, out)] = sw.receive(0, eth_frame(payload=_ip_header(ttl=64)))
    assert out[12:14] == b"\x08\x00"                # checksum_error stayed 0
    assert out[14:] == _ip_header(ttl=63)           # TTL decremented, checksum recomputed
    [(_, out)] = sw.receive(0, eth_frame(payload=_ip_header(ttl=64, checksum=0x1234)))
    assert out[12:14] == b"\x08\x01"                # checksum_error = 1


def test_checksum_condition_false_leaves_field_alone():
    sw = _ipv4_program()
    frame = eth_frame(ether_type=0x86DD, payload=b"\x01\x02")
    assert sw.receive(0, frame)[0][1][14:] == b"\x01\x02"


def test_udp_checksum_with_payload_input():
    prog = ethernet_program()
    prog.header_type("udp_t", [("sport", 16), ("dport", 16), ("len", 16), ("csum", 16)])
    prog.header("udp", "udp_t")
    prog.state("start", [prog.extract("eth"), prog.extract("udp")])
    prog.calculation("usum", "csum16", [fld("udp", "sport"), fld("udp", "dport"),
                                        fld("udp", "len"), {"type": "payload", "value": None}])
    prog.checksum("uck", ["udp", "csum"], "usum", verify=False)
    act = prog.action("fwd", [assign(std("egress_spec"), const(1))])
    prog.run("fwd", act)
    sw = Switch(prog.build())
    body = b"hello"
    udp = (1).to_bytes(2, "big") + (2).to_bytes(2, "big") + (13).to_bytes(2, "big") + b"\0\0"
    [(_, out)] = sw.receive(0, eth_frame(payload=udp + body))
    expected = csum16(udp[:6] + body)
    assert int.from_bytes(out[20:22], "big") == expected and out[22:] == body


def _profile_switch(with_selector: bool):
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    port = prog.action("port", [assign(std("egress_spec"), param(0))], [("p", 9)])
    table = prog.table("sel", [("exact", ["eth", "type"])], [port])
    table["type"] = "indirect_ws" if with_selector else "indirect"
    table["action_profile"] = "prof"
    profile = {"name": "prof", "id": 0, "max_size": 16}
    if with_selector:
        profile["selector"] = {"algo": "crc16", "input": [fld("eth", "src")]}
    prog.doc["pipelines"][0]["action_profiles"].append(profile)
    return Switch(prog.build())


def test_action_profile_members():
    sw = _profile_switch(False)
    m = sw.act_prof_add_member("prof", "port", [3])
    h = sw.table_add_member("sel", [ExactKey(0x0800)], m)
    assert sw.receive(0, eth_frame())[0][0] == 3
    sw.act_prof_modify_member("prof", m, "port", [4])
    assert sw.receive(0, eth_frame())[0][0] == 4
    assert sw.act_prof_members("prof") == {m: ("port", (4,))}
    with pytest.raises(FailedPrecondition):
        sw.act_prof_delete_member("prof", m)
    with pytest.raises(InvalidArgument):
        sw.act_prof_create_group("prof")          # no selector
    sw.table_delete("sel", h)
    sw.act_prof_delete_member("prof", m)
    assert sw.act_prof_members("prof") == {}


def test_action_selector_spreads_flows_and_is_sticky():
    sw = _profile_switch(True)
    members = [sw.act_prof_add_member("prof", "port", [p]) for p in (1, 2, 3)]
    g = sw.act_prof_create_group("prof")
    for m in members:
        sw.act_prof_add_member_to_group("prof", m, g)
    sw.table_add_group("sel", [ExactKey(0x0800)], g)
    ports = {src: sw.receive(0, eth_frame(src=src))[0][0] for src in range(40)}
    assert set(ports.values()) == {1, 2, 3}
    assert all(sw.receive(0, eth_frame(src=s))[0][0] == p for s, p in ports.items())
    from p4switch.runtime.state.hashes import standard_algorithms
    crc16 = standard_algorithms()["crc16"]
    assert all(p == 1 + crc16(s.to_bytes(6, "big")) % 3 for s, p in ports.items())
    sw.act_prof_remove_member_from_group("prof", members[0], g)
    assert {sw.receive(0, eth_frame(src=s))[0][0] for s in range(40)} == {2, 3}
    assert sw.act_prof_groups("prof") == {g: members[1:]}


def test_calculation_over_a_varbit_field_uses_its_current_length():
    prog = ethernet_program()
    prog.header_type("opt_t", [("len", 8), ("data", "*")], max_length=9)
    prog.header("opt", "opt_t")
    prog.state("start", [prog.extract("eth"), {"op": "extract_VL", "parameters": [
        {"type": "regular", "value": "opt"},
        op("<<", {"type": "lookahead", "value": [0, 8]}, const(3))]}])
    prog.calculation("c", "csum16", [fld("opt", "len"), fld("opt", "data")])
    act = prog.action("sum", [
        {"op": "modify_field_with_hash_based_offset", "parameters": [
            fld("eth", "type"), const(0), {"type": "calculation", "value": "c"},
            const(1 << 16)]},
        assign(std("egress_spec"), const(1))])
    prog.run("sum", act)
    sw = Switch(prog.build())
    for body in (b"\x02\xAA\xBB", b"\x03\x01\x02\x03"):
        out = sw.receive(0, eth_frame(payload=body))[0][1]
        assert int.from_bytes(out[12:14], "big") == csum16(body) and out[14:] == body


def test_direct_meter_colours_each_entry_and_writes_the_result_field():
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    colour = prog.scalar("colour", 8)
    fwd = prog.action("fwd", [assign(fld("eth", "type"), colour),
                              assign(std("egress_spec"), const(1))])
    table = prog.table("t", [("exact", ["eth", "dst"])], [fwd], default=fwd)
    table["direct_meters"] = "dm"
    prog.meter("dm", 0, unit="packets", direct_table="t", result=["scalars", "colour"])
    sw = Switch(prog.build())
    now = [0.0]
    sw.clock = lambda: now[0]
    h1 = sw.table_add("t", [ExactKey(1)], "fwd")
    h2 = sw.table_add("t", [ExactKey(2)], "fwd")
    sw.direct_meter_set_rates("t", h1, [(1e-6, 1), (1e-6, 1)])   # 1 packet/s, burst 1

    def colour_of(dst):
        return int.from_bytes(sw.receive(0, eth_frame(dst=dst))[0][1][12:14], "big")
    assert [colour_of(1) for _ in range(2)] == [0, 2]      # green, then red
    assert [colour_of(2) for _ in range(3)] == [0, 0, 0]   # unconfigured entry: green
    assert sw.table_info("t").direct_meters == "dm"
    with pytest.raises(InvalidArgument):
        sw.direct_meter_set_rates("t", h2, [(2e-6, 1), (1e-6, 1)])  # peak below committed
