"""The STF parser: every command, the number forms, and located syntax errors."""

from __future__ import annotations

import pytest

from p4switch.stf import StfSyntaxError, parse_stf
from p4switch.stf import commands as c
from p4switch.stf.parser import parse_number


def one(text: str) -> c.Command:
    test = parse_stf(text, "t.stf")
    assert len(test.commands) == 1
    return test.commands[0]


def test_add_with_keys_and_named_args() -> None:
    cmd = one("add MyIngress.by_type hdr.eth.ether_type:0x0800 forward(port:2, mac:0xAABB)")
    assert isinstance(cmd, c.AddEntry)
    assert cmd.table == "MyIngress.by_type" and cmd.priority is None and cmd.entry_id is None
    assert cmd.keys[0].field == "hdr.eth.ether_type"
    assert cmd.keys[0].value.number.value == 0x0800
    assert cmd.action.name == "forward"
    assert [(n, v.value) for n, v in cmd.action.args] == [("port", 2), ("mac", 0xAABB)]


def test_add_priority_sits_between_table_and_keys() -> None:
    cmd = one("add rewrite 20 hdr.eth.dst:0x00000000000* set_dst(d:0x0000000000E2)")
    assert cmd.priority == 20
    number = cmd.keys[0].value.number
    assert number.value == 0 and number.care_mask == 0xFFFFFFFFFFF0 and number.has_wildcards


def test_add_entry_id_prefix_range_mask_and_stack_names() -> None:
    cmd = one("add t 3 a.b:10.5 x:0x0A000000/8 y:1->9 z:0x10&&&0xF0 h.s[1].f:0b1*01 act() = E1"
              .replace("a.b:10.5 ", ""))
    assert cmd.entry_id == "E1" and cmd.action.args == ()
    assert isinstance(cmd.keys[0].value, c.PrefixValue) and cmd.keys[0].value.prefix_len == 8
    assert isinstance(cmd.keys[1].value, c.RangeValue)
    assert (cmd.keys[1].value.low.value, cmd.keys[1].value.high.value) == (1, 9)
    assert isinstance(cmd.keys[2].value, c.MaskedValue) and cmd.keys[2].value.mask.value == 0xF0
    assert cmd.keys[3].field == "h.s[1].f"
    assert cmd.keys[3].value.number.care_mask == 0b1011


def test_numbers() -> None:
    assert parse_number("42").value == 42 and parse_number("42").care_mask is None
    n = parse_number("0x0A**")
    assert (n.value, n.care_mask, n.written_bits) == (0x0A00, 0xFF00, 16)
    assert parse_number("0b1*1").care_mask == 0b101


def test_setdefault_remove_wait_no_packet() -> None:
    test = parse_stf("setdefault t drop()\nremove all\nwait\nno_packet\n", "t.stf")
    kinds = [type(x) for x in test.commands]
    assert kinds == [c.SetDefault, c.RemoveAll, c.Wait, c.NoPacket]
    assert [x.line for x in test.commands] == [1, 2, 3, 4]


def test_packet_and_expect_data() -> None:
    test = parse_stf("packet 3 00 11 2233  # comment\n"
                     "expect 2 00 1* **33 $\n"
                     "expect 4\n"
                     "EXPECT 5 aabb\n", "t.stf")
    pkt, exact, anything, upper = test.commands
    assert pkt == c.SendPacket(line=1, port=3, data=bytes.fromhex("00112233"))
    assert exact.pattern == "001***33" and exact.exact_length and exact.port == 2
    assert anything.pattern is None and anything.port == 4
    assert upper.pattern == "AABB" and not upper.exact_length
    assert test.packet_count == 1 and test.expect_count == 3


def test_check_counter_forms() -> None:
    test = parse_stf("check_counter per_port(0) packets == 2\n"
                     "check_counter c($A) bytes >= 100\n"
                     "check_counter c(3)\n", "t.stf")
    a, b, d = test.commands
    assert (a.counter, a.index, a.kind, a.op, a.value) == ("per_port", 0, "packets", "==", 2)
    assert (b.entry_id, b.index, b.kind, b.op, b.value) == ("A", None, "bytes", ">=", 100)
    assert (d.kind, d.op, d.value) == (None, "==", 0)


def test_pass_through_commands() -> None:
    test = parse_stf("mirroring_add 5 4\nmirroring_add_mc 6 7\nmc_mgrp_create 7\n"
                     "mc_node_create 10 1 2\nmc_node_associate 7 0\nmc_node_update 0 3\n"
                     "register_write r 1 99\nregister_read r 1\nregister_reset r\n"
                     "counter_write c 0 1 2\ncounter_read c 0\n"
                     "meter_set_rates m 2 0.5:1 1:2\nmeter_array_set_rates m 0.001:10 2:20\n"
                     "mirroring_delete 5\n", "t.stf")
    cmds = test.commands
    assert cmds[0] == c.MirroringAdd(line=1, session=5, port=4)
    assert cmds[1] == c.MirroringAddMc(line=2, session=6, mgid=7)
    assert cmds[3] == c.McNodeCreate(line=4, rid=10, ports=(1, 2))
    assert cmds[4] == c.McNodeAssociate(line=5, mgid=7, handle=0)
    assert cmds[6] == c.RegisterWrite(line=7, register="r", index=1, value=99)
    assert cmds[9] == c.CounterWrite(line=10, counter="c", index=0, packets=1, bytes=2)
    assert cmds[11] == c.MeterSetRates(line=12, meter="m", index=2, rates=((0.5, 1), (1, 2)))
    assert cmds[12].index is None and cmds[12].rates == ((0.001, 10), (2, 20))
    assert isinstance(cmds[13], c.MirroringDelete)


def test_meter_rates_of_a_direct_meter_entry() -> None:
    cmd = one("meter_set_rates dm $A 0.5:1 1:2")
    assert (cmd.meter, cmd.index, cmd.entry_id, cmd.rates) == ("dm", None, "A", ((0.5, 1), (1, 2)))


@pytest.mark.parametrize("text, line, column, words", [
    ("add t k:1 act(\n", 1, 15, "parameter name"),
    ("\n\nfrobnicate 1\n", 3, 1, "unknown command 'frobnicate'"),
    ("packet 1 0011 zz\n", 1, 15, "hex digits"),
    ("packet 1 001\n", 1, 9, "odd number of hex digits"),
    ("packet x 00\n", 1, 8, "decimal port"),
    ("expect 1 00 $ 11\n", 1, 13, "expected hex digits"),
    ("add t k:0x1* act(p:0x**)\n", 1, 20, "'*' digits are not allowed"),
    ("add t k:1\n", 1, 10, "or an action 'NAME(...)'"),
    ("add t k:1 act\n", 1, 14, "expected '(' after the action name"),
    ("check_counter c(0) packets ~ 2\n", 1, 28, "unexpected character"),
    ("check_counter c(0) frames == 2\n", 1, 20, "'packets' or 'bytes'"),
    ("remove t\n", 1, 8, "only 'remove all'"),
    ("add t k:1 a() = \n", 1, 16, "entry id"),
    ("mc_node_create 1\n", 1, 17, "a port"),
    ("wait 3\n", 1, 6, "end of line"),
])
def test_syntax_errors_are_located(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(StfSyntaxError) as info:
        parse_stf(text, "t.stf")
    err = info.value
    assert (err.path, err.line, err.column) == ("t.stf", line, column), str(err)
    assert words in err.message
    assert str(err).startswith(f"t.stf:{line}:{column}: error: ")
    assert "^" in str(err)


def test_unreadable_file_is_a_typed_error(tmp_path) -> None:
    from p4switch.stf import parse_stf_file
    with pytest.raises(StfSyntaxError, match="cannot read"):
        parse_stf_file(tmp_path / "missing.stf")
