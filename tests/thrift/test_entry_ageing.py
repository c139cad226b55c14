"""Entry ageing over Thrift (`table_set_timeout` in simple_switch_CLI): a TTL on an entry of a
`support_timeout` table, shown back as the entry's life, as simple_switch answers (probed on
simple_switch 1.15: `Life: 0ms since hit, timeout is 5000ms`; a TTL of 0 shows no life; -5 is
kept as an unsigned number and shown as -5); a table without ageing refuses."""

from __future__ import annotations

import pytest

from p4switch.compiler import compile_source
from p4switch.runtime import Switch
from p4switch.thrift import RuntimeService, ThriftRuntimeServer
from p4switch.thrift.client import RuntimeCallError, RuntimeClient
from p4switch.thrift.idl import MatchParamType as MT

from ..compiler.helpers import program
from ..server.ageing import BODY, Clock

@pytest.fixture
def served():
    doc = compile_source(program(BODY), "p.p4").bmv2
    sw = Switch(doc)
    clock = Clock(50.0)
    sw.clock = clock
    server = ThriftRuntimeServer(RuntimeService(sw, device_id=0), host="127.0.0.1", port=0)
    client = RuntimeClient("127.0.0.1", server.start())
    yield client, clock, {t["name"].split(".")[-1]: t["name"]
                          for p in doc["pipelines"] for t in p["tables"]}
    client.close()
    server.stop()


def std(client, name, **args):
    return client.call("standard", name, **({"cxt_id": 0} | args))


def test_a_timeout_is_kept_and_shown_as_the_entry_life(served):
    client, clock, tables = served
    assert std(client, "bm_mt_get_entries", table_name=tables["ageing"]) == []
    for last in (1, 2, 3):
        std(client, "bm_mt_add_entry", table_name=tables["ageing"],
            match_key=[{"type": MT.EXACT, "exact": {"key": bytes(5) + bytes([last])}}],
            action_name=_set_port(client, tables), action_data=[b"\x00\x03"], options={})
    std(client, "bm_mt_set_entry_ttl", table_name=tables["ageing"], entry_handle=0,
        timeout_ms=5000)
    std(client, "bm_mt_set_entry_ttl", table_name=tables["ageing"], entry_handle=2,
        timeout_ms=-5)
    clock.now += 1.25
    got = {e["entry_handle"]: e.get("life") for e in
           std(client, "bm_mt_get_entries", table_name=tables["ageing"])}
    assert got[0] == {"timeout_ms": 5000, "time_since_hit_ms": 1250}
    assert got[1] is None                                     # no timeout: no life
    assert got[2]["timeout_ms"] == -5
    std(client, "bm_mt_set_entry_ttl", table_name=tables["ageing"], entry_handle=0,
        timeout_ms=0)
    assert std(client, "bm_mt_get_entry", table_name=tables["ageing"],
               entry_handle=0).get("life") is None


def test_a_table_without_ageing_refuses(served):
    client, _, tables = served
    std(client, "bm_mt_add_entry", table_name=tables["plain"],
        match_key=[{"type": MT.EXACT, "exact": {"key": bytes(6)}}],
        action_name=_set_port(client, tables), action_data=[b"\x00\x03"], options={})
    with pytest.raises(RuntimeCallError) as info:
        std(client, "bm_mt_set_entry_ttl", table_name=tables["plain"], entry_handle=0,
            timeout_ms=100)
    assert info.value.name == "AGEING_DISABLED"


def _set_port(client, tables) -> str:
    """The JSON name of set_port (qualified by its control)."""
    return next(name.rsplit(".", 1)[0] + ".set_port" for name in tables.values()
                if name.endswith("ageing"))
