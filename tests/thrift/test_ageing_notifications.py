"""simple_switch's ageing notifications (p4switch/thrift/ageing.py): entries of a
`support_timeout` table given a TTL over Thrift are published on the notifications socket once
idle for it; the same script on `inaemu switch --no-grpc` and, when /opt/p4ref is installed, on
real simple_switch, p4c's program on both: the same first notifications."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from p4switch.compiler import compile_source
from p4switch.ports.packetin import HEADER, PACKET_IN
from p4switch.thrift.ageing import HEADER as AGE, AgeingMonitor
from p4switch.thrift.idl import MatchParamType as MT

from ..compiler.helpers import program
from ..server.ageing import BODY
from .notifying_switch import INAEMU_AS_SIMPLE_SWITCH, REFERENCE, notifying_switch, p4c_json

SOURCE = program(BODY)


def frame(dst: int) -> bytes:
    return dst.to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(20)


def notifications(command: list[str], program_json: Path, folder: Path):
    """Two entries, one with a 300 ms TTL never hit, one with 1.5 s hit every 100 ms (a gap
    that long cannot come even on a loaded machine) for 3 s: (the AGE
    messages published meanwhile as (table id, handles), the two entries' handles, the ageing
    table's id)."""
    import pynng
    doc = json.loads(program_json.read_text())
    table = next(t["name"] for p in doc["pipelines"] for t in p["tables"]
                 if t["name"].endswith("ageing"))
    action = table.rsplit(".", 1)[0] + ".set_port"
    seen: list[tuple] = []
    with notifying_switch(command, program_json, folder, device_id=7, topic=b"AGE|",
                          recv_timeout_ms=20) as (client, sub, pair):
        handles = []
        for dst in (5, 6):
            handles.append(client.call(
                "standard", "bm_mt_add_entry", cxt_id=0, table_name=table,
                match_key=[{"type": MT.EXACT, "exact": {"key": dst.to_bytes(6, "big")}}],
                action_name=action, action_data=[b"\x00\x02"], options={}))
        for handle, ttl_ms in zip(handles, (300, 1500)):
            client.call("standard", "bm_mt_set_entry_ttl", cxt_id=0, table_name=table,
                        entry_handle=handle, timeout_ms=ttl_ms)
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            pair.send(HEADER.pack(PACKET_IN, 1, 34) + frame(6))         # entry 6 stays hit
            stop = time.monotonic() + 0.1
            while time.monotonic() < stop:
                try:
                    message = sub.recv()
                except pynng.Timeout:
                    continue
                topic, switch_id, cxt, _, table_id, count = AGE.unpack_from(message)
                assert (topic, switch_id, cxt) == (b"AGE|", 7, 0)
                body = message[AGE.size:]
                seen.append((table_id, [int.from_bytes(body[4 * i:4 * i + 4], "little")
                                        for i in range(count)]))
    table_id = next(t["id"] for p in doc["pipelines"] for t in p["tables"] if t["name"] == table)
    return seen, handles, table_id


def check(result) -> None:
    """The idle entry (the first handle) is published, alone, under the table's id; the hit
    one, which would have aged in the window without its hits, never is."""
    seen, (idle, hit), table_id = result
    assert seen, "no ageing notification"
    assert all(message == (table_id, [idle]) for message in seen), (seen, hit)


def test_an_idle_entry_is_published_and_a_hit_one_is_not(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(compile_source(SOURCE, "p.p4").bmv2))
    check(notifications(INAEMU_AS_SIMPLE_SWITCH, path, tmp_path))


@pytest.mark.skipif(not (REFERENCE / "simple_switch").exists(),
                    reason="reference toolchain (/opt/p4ref) not installed")
def test_simple_switch_publishes_the_same(tmp_path):
    path = p4c_json(SOURCE, tmp_path)
    real = notifications([str(REFERENCE / "simple_switch")], path, tmp_path / "bmv2")
    check(real)
    ours = notifications(INAEMU_AS_SIMPLE_SWITCH, path, tmp_path / "inaemu")
    check(ours)
    assert ours[0][0] == real[0][0] and ours[1:] == real[1:]     # the first message, ids


def test_a_sweep_publishes_what_the_sweep_before_did_not():
    """simple_switch's rule: an entry that stays idle comes every other sweep."""
    monitor = AgeingMonitor(3)
    messages = [monitor.sweep({2: [16777217, 4]}) for _ in range(4)]
    assert [len(m) for m in messages] == [1, 0, 1, 0]
    topic, switch_id, cxt, buffer_id, table_id, count = AGE.unpack_from(messages[2][0])
    assert (topic, switch_id, cxt, buffer_id, table_id, count) == (b"AGE|", 3, 0, 1, 2, 2)
    assert messages[2][0][AGE.size:] == (16777217).to_bytes(4, "little") + \
        (4).to_bytes(4, "little")
    assert monitor.sweep({2: [4, 9]})[0][AGE.size:] == (4).to_bytes(4, "little") + \
        (9).to_bytes(4, "little")
    assert monitor.sweep({2: [4, 9]}) == [] and monitor.sweep({2: []}) == []
