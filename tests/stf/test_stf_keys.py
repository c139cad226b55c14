"""STF key values become the right match keys for each match type (p4c's driver's rules)."""

from __future__ import annotations

import pytest

from p4switch.stf.commands import KeyMatch
from p4switch.stf.keys import KeyValueError, build_keys, key_spec
from p4switch.stf.parser import parse_stf


def keys_of(line: str) -> tuple[KeyMatch, ...]:
    return parse_stf(line).commands[0].keys


def spec(match_type: str, width: int, text: str) -> tuple:
    return key_spec(match_type, width, "f", keys_of(f"add t f:{text} a()")[0].value)


def test_lpm_prefix_counts_written_digits() -> None:
    assert spec("lpm", 32, "0x0A******") == ("lpm", 0x0A000000, 8)
    assert spec("lpm", 32, "0x0A01****") == ("lpm", 0x0A010000, 16)
    assert spec("lpm", 32, "0x0A000001") == ("lpm", 0x0A000001, 32)
    assert spec("lpm", 32, "167772160/8") == ("lpm", 0x0A000000, 8)
    assert spec("lpm", 32, "5") == ("lpm", 5, 32)
    assert spec("lpm", 9, "0x1**") == ("lpm", 0x100, 1)


def test_ternary_mask_covers_the_written_digits() -> None:
    assert spec("ternary", 48, "0x0000000000**") == ("ternary", 0, 0xFFFFFFFFFF00)
    assert spec("ternary", 16, "0x1") == ("ternary", 1, 0xF)          # p4c: mask from digits
    assert spec("ternary", 16, "0x10&&&0xF0") == ("ternary", 0x10, 0xF0)
    assert spec("ternary", 16, "7") == ("ternary", 7, 0xFFFF)
    assert spec("ternary", 8, "0b1*1*****") == ("ternary", 0b10100000, 0b10100000)


def test_range_optional_exact() -> None:
    assert spec("range", 16, "10->20") == ("range", 10, 20)
    assert spec("range", 16, "7") == ("range", 7, 7)
    assert spec("range", 8, "0x**") == ("range", 0, 255)
    assert spec("optional", 16, "0x0800") == ("optional", 0x800)
    assert spec("optional", 16, "0x****") == ("optional", None)
    assert spec("exact", 9, "3") == ("exact", 3)


@pytest.mark.parametrize("match_type, width, text, words", [
    ("exact", 16, "0x0*", "is exact"),
    ("exact", 8, "256", "does not fit in 8 bits"),
    ("lpm", 32, "0x*A000000", "not a prefix"),
    ("lpm", 32, "0x0A**", "write every digit"),
    ("lpm", 8, "1/9", "longer than key"),
    ("range", 8, "9->3", "empty range"),
    ("exact", 8, "1->3", "for range keys"),
    ("optional", 8, "0x*1", "all '*' or no '*'"),
    ("lpm", 8, "1&&&3", "for ternary keys"),
])
def test_bad_values(match_type: str, width: int, text: str, words: str) -> None:
    with pytest.raises(KeyValueError, match=words.replace("*", r"\*")):
        spec(match_type, width, text)


def test_build_keys_by_suffix_any_order_and_defaults() -> None:
    table_keys = [("hdr.eth.dst", "exact", 48), ("hdr.ipv4.dst", "lpm", 32),
                  ("meta.m", "ternary", 8), ("hdr.s[1].v", "optional", 4)]
    aliases = [("hdr.eth.dst", "eth.dst"), ("hdr.ipv4.dst", "ipv4.dst"), (), ()]
    specs = build_keys(table_keys, aliases, keys_of("add t ipv4.dst:0x0A****** hdr.eth.dst:5 a()"))
    assert specs == [("exact", 5), ("lpm", 0x0A000000, 8), ("ternary", 0, 0), ("optional", None)]
    specs = build_keys(table_keys, aliases, keys_of("add t s$1.v:3 m:0x0* a()"))
    assert specs[2:] == [("ternary", 0, 0xF0), ("optional", 3)]


def test_valid_keys_accept_dot_valid() -> None:
    table_keys = [("hdr.ipv4.$valid$", "exact", 1)]
    assert build_keys(table_keys, [()], keys_of("add t ipv4.valid:1 a()")) == [("exact", 1)]
    assert build_keys(table_keys, [()], keys_of("add t hdr.ipv4.$valid$:0 a()")) == [("exact", 0)]


def test_build_keys_rejects_unknown_ambiguous_and_repeated_fields() -> None:
    table_keys = [("hdr.a.x", "exact", 8), ("hdr.b.x", "exact", 8)]
    with pytest.raises(KeyValueError, match="ambiguous"):
        build_keys(table_keys, [(), ()], keys_of("add t x:1 a()"))
    with pytest.raises(KeyValueError, match="no key field 'y'"):
        build_keys(table_keys, [(), ()], keys_of("add t y:1 a()"))
    with pytest.raises(KeyValueError, match="given twice"):
        build_keys(table_keys, [(), ()], keys_of("add t a.x:1 hdr.a.x:2 a()"))


def test_a_key_named_by_p4_name_or_json_target_is_one_key() -> None:
    """p4c names a metadata key `meta.x` and targets `scalars.userMetadata.x`: `x` is one key."""
    table_keys = [("meta.x", "exact", 8), ("hdr.h.y", "exact", 8)]
    aliases = [("meta.x", "scalars.userMetadata.x"), ("hdr.h.y", "h.y")]
    assert build_keys(table_keys, aliases, keys_of("add t x:7 y:1 a()")) == [("exact", 7),
                                                                             ("exact", 1)]
    assert build_keys(table_keys, aliases, keys_of("add t userMetadata.x:7 a()"))[0] == \
        ("exact", 7)
    with pytest.raises(KeyValueError, match="ambiguous"):     # two different keys still are
        build_keys([("hdr.a.x", "exact", 8), ("meta.x", "exact", 8)],
                   [(), ("scalars.x",)], keys_of("add t x:1 a()"))
