"""Thrift's binary protocol (p4switch/thrift/binary.py): values both ways, streams cut anywhere."""

from __future__ import annotations

import struct

import pytest

from p4switch.thrift import binary
from p4switch.thrift.binary import (Binary, Bool, Double, Field, Int16, Int32, Int64, ListOf,
                                    MapOf, Struct, Text)

INNER = Struct("Inner", (Field(1, "key", Binary), Field(2, "length", Int32)))
OUTER = Struct("Outer", (
    Field(1, "flag", Bool), Field(2, "small", Int16), Field(3, "n", Int32), Field(4, "big", Int64),
    Field(5, "rate", Double), Field(6, "name", Text), Field(7, "raw", Binary),
    Field(8, "items", ListOf(INNER)), Field(9, "extra", MapOf(Text, Text)),
    Field(10, "ids", ListOf(Int32))))

VALUE = {"flag": True, "small": -2, "n": -(1 << 31), "big": (1 << 63) - 1, "rate": 0.5,
         "name": "I.dmac é", "raw": b"\x00\xff", "items": [{"key": b"\x0a", "length": 8}, {}],
         "extra": {"a": "b"}, "ids": [0, 16777217]}


def encoded(stype, value) -> bytes:
    w = binary.Writer()
    w.struct(stype, value)
    return bytes(w.out)


def test_a_struct_round_trips_with_every_type():
    data = encoded(OUTER, VALUE)
    r = binary.Reader(data)
    assert r.struct(OUTER) == VALUE
    assert r.pos == len(data)


def test_the_wire_bytes_are_thrifts():
    # field 3 (i32) = 5, field 6 (string) = "ab", stop
    stype = Struct("S", (Field(3, "n", Int32), Field(6, "s", Text)))
    assert encoded(stype, {"n": 5, "s": "ab"}) == (b"\x08\x00\x03\x00\x00\x00\x05"
                                                   b"\x0b\x00\x06\x00\x00\x00\x02ab\x00")
    w = binary.Writer()
    w.message_begin("standard:bm_get_config", binary.CALL, 7)
    assert bytes(w.out) == (struct.pack(">I", 0x80010001) + struct.pack(">i", 22)
                            + b"standard:bm_get_config" + struct.pack(">i", 7))


def test_absent_fields_are_not_written_and_unknown_ones_are_skipped():
    data = encoded(OUTER, VALUE)
    narrow = Struct("Narrow", (Field(3, "n", Int32), Field(6, "name", Binary)))
    # "name" is a string on the wire and Binary here: same wire type, read as bytes
    assert binary.Reader(data).struct(narrow) == {"n": -(1 << 31),
                                                  "name": "I.dmac é".encode()}
    other_type = Struct("T", (Field(3, "n", Text),))      # i32 on the wire: skipped
    assert binary.Reader(data).struct(other_type) == {}
    assert encoded(OUTER, {"n": 1, "name": None}) == b"\x08\x00\x03\x00\x00\x00\x01\x00"


@pytest.mark.parametrize("cut", range(0, 40))
def test_a_message_cut_anywhere_is_incomplete_not_wrong(cut):
    w = binary.Writer()
    w.message_begin("standard:bm_mt_add_entry", binary.CALL, 3)
    w.struct(OUTER, VALUE)
    data = bytes(w.out)
    cut = cut * len(data) // 40
    with pytest.raises(binary.Incomplete):
        r = binary.Reader(data[:cut])
        r.message_begin()
        r.struct(OUTER)
    r = binary.Reader(data)
    assert r.message_begin() == ("standard:bm_mt_add_entry", binary.CALL, 3)
    assert r.struct(OUTER) == VALUE


def test_the_old_header_without_a_version_is_read():
    data = struct.pack(">i", 4) + b"ping" + b"\x01" + struct.pack(">i", 9)
    assert binary.Reader(data).message_begin() == ("ping", binary.CALL, 9)


@pytest.mark.parametrize("data, why", [
    (struct.pack(">I", 0x80020001) + struct.pack(">i", 0) + struct.pack(">i", 0), "version"),
    (struct.pack(">I", 0x80010009) + struct.pack(">i", 0) + struct.pack(">i", 0), "type"),
    (struct.pack(">I", 0x80010001) + struct.pack(">i", -5), "length"),
    (struct.pack(">I", 0x80010001) + struct.pack(">i", 2) + b"\xff\xfe" + b"\0\0\0\0", "UTF-8"),
])
def test_a_broken_header_is_a_protocol_error(data, why):
    with pytest.raises(binary.ProtocolError, match=why):
        binary.Reader(data).message_begin()


def test_broken_values_are_protocol_errors():
    with pytest.raises(binary.ProtocolError, match="field type"):
        binary.Reader(b"\x07\x00\x01").struct(OUTER)             # type 7 does not exist
    wrong_list = b"\x0f\x00\x0a" + b"\x0b" + struct.pack(">i", 1) + b"\0\0\0\0" + b"\x00"
    with pytest.raises(binary.ProtocolError, match="list of type"):
        binary.Reader(wrong_list).struct(OUTER)                  # strings where i32s go
    nested = b"\x0c\x00\x63" * 100
    with pytest.raises(binary.ProtocolError, match="nested"):
        binary.Reader(nested).struct(OUTER)


def test_integers_out_of_range_are_refused_when_written():
    with pytest.raises(ValueError, match="32-bit"):
        encoded(OUTER, {"n": 1 << 31})
    with pytest.raises(ValueError, match="64-bit"):
        encoded(OUTER, {"big": -(1 << 63) - 1})
