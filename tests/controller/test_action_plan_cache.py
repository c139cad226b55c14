"""`entities` keeps each (table, action, parameters) it planned per P4Info index (a fabric's
routes repeat a few actions thousands of times). Kept plans must be exactly what planning
gives, per table (an action allowed in one table is not thereby allowed in another), and a
refused action or value must be refused every time, not remembered as planned."""

from __future__ import annotations

import pytest

from controller import entities
from controller.errors import EncodingError, P4InfoError
from controller.p4info import P4InfoIndex
from p4info_sample import SAMPLE_P4INFO


def test_kept_plans_equal_fresh_ones_and_refusals_repeat():
    index = P4InfoIndex.from_text(SAMPLE_P4INFO)
    fresh = P4InfoIndex.from_text(SAMPLE_P4INFO)
    args = ("ipv4_lpm", {"dstAddr": "10.0.0.1/32"}, "ipv4_forward",
            {"dstAddr": "02:00:0a:00:00:01", "port": 3})
    first = entities.table_entry(index, *args)
    again = entities.table_entry(index, *args)
    assert first == again == entities.table_entry(fresh, *args)
    other = entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.2/32"}, "ipv4_forward",
                                 {"dstAddr": "02:00:0a:00:00:01", "port": 4})
    assert [p.value for p in other.action.action.params][-1] == b"\x04"
    for _ in range(2):          # same action, a table that does not allow it: refused each time
        with pytest.raises(P4InfoError, match="not allowed in table MyEgress.acl"):
            entities.table_entry(index, "MyEgress.acl", {"srcAddr": 1}, "ipv4_forward",
                                 {"dstAddr": "02:00:0a:00:00:01", "port": 3})
    for _ in range(2):
        with pytest.raises(EncodingError, match="does not fit"):
            entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.1/32"},
                                 "ipv4_forward", {"dstAddr": 1, "port": 1 << 20})
    with_bytearray = entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.1/32"},
                                          "ipv4_forward",
                                          {"dstAddr": bytearray(b"\x02\x00\x0a\x00\x00\x01"),
                                           "port": 3})
    assert with_bytearray == first


def test_kept_plans_are_bounded(monkeypatch):
    index = P4InfoIndex.from_text(SAMPLE_P4INFO)
    monkeypatch.setattr(entities, "ACTION_PLANS_KEPT", 4)
    for port in range(1, 11):
        entry = entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.1/32"},
                                     "ipv4_forward", {"dstAddr": 1, "port": port})
        assert entry.action.action.params[-1].value == bytes([port])
    assert len(index.__dict__["_action_plans"]) <= 4
