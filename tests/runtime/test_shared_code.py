"""Programs loaded from the same JSON share their generated code, never their state
(p4switch/runtime/share/codeshare.py).

Each test loads one JSON text into two or more switches and changes the state of one (table
entries, registers, counters, meters, action profile members, parser value sets, custom CRC
parameters, over the API, over P4Runtime and by packets) and checks the others did not change;
a shared switch and one generated alone must behave the same packet for packet.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, Switch
from p4switch.runtime.share import codeshare
from p4switch.runtime.state.regbanks import BankColumn

from .bmv2 import eth_frame

ROOT = Path(__file__).resolve().parents[2]
P4 = ROOT / "tests" / "p4"


def _text(path: Path, **defines) -> str:
    return json.dumps(compile_file(str(path), defines=defines or None).bmv2)


def _alone(text: str) -> Switch:
    """A switch whose program was generated for it alone (the behaviour before sharing)."""
    codeshare.ENABLED = False
    try:
        return Switch(text)
    finally:
        codeshare.ENABLED = True


@pytest.fixture(scope="module")
def hash_text() -> str:
    return _text(P4 / "hash_externs.p4")


def _hash_packet(x: int, y: int) -> bytes:
    return eth_frame(ether_type=0x88B5, payload=x.to_bytes(4, "big") + y.to_bytes(2, "big"))


def test_one_translation_two_namespaces(hash_text):
    codeshare.clear()
    a, b = Switch(hash_text), Switch(hash_text)
    assert len(codeshare.cached_keys()) == 1
    ca, cb = a.program.untraced, b.program.untraced
    assert ca.source is cb.source                              # translated once
    assert ca.ingress is not cb.ingress and ca.namespace is not cb.namespace
    # each program runs its own copy of the bytecode: CPython specialises it in place for one
    # globals dict, and switches taking turns on one copy slowed each other down
    # (the Python ingress: with INAEMU_NATIVE=1, `ingress` is the C one over the same state)
    pa, pb = ca.namespace["ingress"], cb.namespace["ingress"]
    assert pa.__code__ is not pb.__code__
    assert pa.__code__.co_code == pb.__code__.co_code
    assert pa.__globals__ is ca.namespace and pb.__globals__ is cb.namespace
    # every state object each namespace reaches is its own program's
    state_b = {id(x) for x in _state_objects(b.program)}
    for name, value in ca.namespace.items():
        if id(value) in {id(x) for x in _state_objects(a.program)}:
            assert id(cb.namespace[name]) in state_b, name


def _state_objects(program) -> list:
    out = [program.registers, program.counters, program.meters, program.vsets,
           program.tables, program.profiles, program.custom_crcs]
    for reg in program.registers.values():
        if isinstance(reg.cells, BankColumn):
            out += [reg.cells.array] + ([reg.cells.flat] if reg.cells.flat is not None else [])
        out += [reg, reg.cells]
    for counter in program.counters.values():
        out += [counter, counter.packets, counter.bytes, counter.cells]
    for meter in program.meters.values():
        out += [meter, meter.meters]
    for table in program.tables.values():
        out += [table, table.exact, table.default, table.levels, table.ordered]
    out += list(program.profiles.values()) + list(program.vsets.values())
    out += list(program.custom_crcs.values())
    return out


def test_no_state_object_is_shared(hash_text):
    """Nothing mutable one program reaches is reached by another of the same JSON."""
    for text in (hash_text, _text(P4 / "meters.p4"), _text(P4 / "action_profile.p4"),
                 _text(P4 / "parser_select.p4"), _text(ROOT / "p4src" / "ina.p4", INA_K="32"),
                 _text(ROOT / "p4src" / "ina.p4", INA_K="256"),
                 _text(ROOT / "p4src" / "l3_forward.p4")):
        a, b = Switch(text), Switch(text)
        assert a.program.untraced.source is b.program.untraced.source, \
            codeshare.REFUSED
        ids_a = {id(x) for x in _state_objects(a.program)}
        assert not ids_a & {id(x) for x in _state_objects(b.program)}
        for name, value in a.program.untraced.namespace.items():
            other = b.program.untraced.namespace[name]
            if other is value:
                assert id(value) not in ids_a, name
                assert not isinstance(value, (list, set)) and (
                    not isinstance(value, dict) or name in ("__builtins__", "__vector_runs__")
                ), name                  # the interpreter's builtins; read-only lane analysis
                # nor memory anyone could write (a register's view, a bank)
                assert not (isinstance(value, memoryview) and not value.readonly), name
                assert not (isinstance(value, np.ndarray) and value.flags.writeable), name


def test_registers_and_custom_crcs_per_switch(hash_text):
    a, b = Switch(hash_text), Switch(hash_text)
    plain = _alone(hash_text)
    packet = _hash_packet(0x01020304, 0x0506)
    out_a = a.receive(0, packet)
    assert a.register_read("last_crc", 0) != 0                # the packet wrote it on a
    assert b.register_read("last_crc", 0) == 0
    b.register_write("last_crc", 1, 77)
    assert a.register_read("last_crc", 1) == 0
    # reconfigure a's crc16_custom: b keeps BMv2's default (that of crc16)
    [calc16] = [c for c in a.crc_calculations() if "crc16" in c.lower()] or \
        a.crc_calculations()[:1]
    a.set_crc_parameters(calc16, 0x1021, 0xFFFF, 0, False, False)
    assert a.receive(0, packet) != b.receive(0, packet)
    assert plain.receive(0, packet) == out_a              # b's history differs (last_crc)
    assert b.receive(0, packet) == plain.receive(0, packet)


def test_tables_and_counters_per_switch():
    """tests/p4/resources.p4: an exact table with a direct counter, indexed counters."""
    text = _text(P4 / "resources.p4")
    a, b = Switch(text), Switch(text)
    a.table_add("t_count", [ExactKey(1)], "fwd_counted", (1,))
    assert a.table_entries("t_count") and not b.table_entries("t_count")
    frame = eth_frame(dst=2, src=1, ether_type=0x88B5, payload=b"\x00\xff\xff\xaa\xbb")
    assert [port for port, _ in a.receive(0, frame)] == [1]
    assert [port for port, _ in b.receive(0, frame)] == [0]      # a miss: egress_spec stays 0
    counter = next(c for c in a.counters() if "idx_counter" in c)
    assert a.counter_read(counter, 0)[0] == 1 and b.counter_read(counter, 0)[0] == 1
    a.counter_write(counter, 0, 10, 100)
    assert a.counter_read(counter, 0)[0] == 10 and b.counter_read(counter, 0)[0] == 1
    [entry] = a.table_entries("t_count")
    assert a.direct_counter_read("t_count", entry.handle)[0] == 1


def test_meters_profiles_and_value_sets_per_switch():
    meters = _text(P4 / "meters.p4")
    a, b = Switch(meters), Switch(meters)
    name = a.meters()[0]
    a.meter_set_rates(name, 0, [(0.001, 1), (0.002, 1)])
    assert a.meter_get_rates(name, 0) and not b.meter_get_rates(name, 0)

    profile_text = _text(P4 / "action_profile.p4")
    a, b = Switch(profile_text), Switch(profile_text)
    profile = a.action_profiles()[0]
    a.act_prof_add_member(profile, "set_port", (3,))
    assert a.act_prof_members(profile) and not b.act_prof_members(profile)

    vsets = _text(P4 / "parser_select.p4")
    a, b = Switch(vsets), Switch(vsets)
    vset = a.parse_vsets()[0]
    a.parse_vset_add(vset, 0x1234)
    assert a.program.vsets[vset].entries and not b.program.vsets[vset].entries


def test_different_json_different_code(hash_text):
    doc = json.loads(hash_text)
    changed = json.loads(hash_text)
    changed["register_arrays"][0]["size"] += 1              # one number differs
    a, b = Switch(hash_text), Switch(json.dumps(changed))
    assert a.program.untraced.source is not b.program.untraced.source
    assert b.register_size("last_crc") == a.register_size("last_crc") + 1
    # equal dicts are one translation (keyed by their canonical JSON), and the template
    # keeps its own copy: a caller changing its dict later changes nothing loaded
    c, d = Switch(doc), Switch(json.loads(hash_text))
    assert c.program.untraced.source is d.program.untraced.source
    doc["register_arrays"][0]["size"] = 1
    assert Switch(json.loads(hash_text)).register_size("last_crc") == \
        a.register_size("last_crc")


def test_lane_switch_is_part_of_the_key():
    from p4switch.runtime.pygen import lanes
    text = _text(ROOT / "p4src" / "ina.p4", INA_K="32")
    fast = Switch(text)
    lanes.ENABLED = False
    try:
        plain = Switch(text)
    finally:
        lanes.ENABLED = True
    assert fast.program.untraced.source != plain.program.untraced.source
    assert "bank_" not in plain.program.untraced.source


def test_shared_behaves_as_generated_alone():
    """ina.p4 (k = 32) through a shared and an unshared program: same outputs, same state."""
    from tests.runtime.test_lane_vectors import _configure, _ina_packets
    text = _text(ROOT / "p4src" / "ina.p4", INA_K="32")
    first, shared, alone = Switch(text), Switch(text), _alone(text)
    for sw in (first, shared, alone):
        _configure(sw)
    for port, data in _ina_packets(300, seed=3)[:150]:
        first.receive(port, data)                          # the first switch's state moves on
    outputs = 0
    for n, (port, data) in enumerate(_ina_packets(300, seed=4)):
        got = shared.receive(port, data)
        assert got == alone.receive(port, data), f"packet {n}"
        outputs += len(got)
    assert outputs > 50
    for name in alone.registers():
        assert shared.register_read_all(name) == alone.register_read_all(name), name


def test_trace_on_a_shared_program_uses_its_own_state(hash_text):
    from p4switch.runtime import PacketTrace
    a, b = Switch(hash_text), Switch(hash_text)
    a.trace = PacketTrace()
    a.receive(0, _hash_packet(1, 2))
    assert a.register_read("last_crc", 0) != 0 and b.register_read("last_crc", 0) == 0


def test_unshareable_code_falls_back(monkeypatch, hash_text):
    codeshare.clear()

    def refuse(*args, **kwargs):
        raise codeshare.Unshareable("test")
    monkeypatch.setattr(codeshare, "bind_namespace", refuse)
    a, b = Switch(hash_text), Switch(hash_text)
    assert a.program.untraced.source is not b.program.untraced.source
    assert a.receive(0, _hash_packet(1, 2)) == b.receive(0, _hash_packet(1, 2))
    assert codeshare.template_for(codeshare.content_key(hash_text)[0], None) is None


def test_bad_json_is_reported_and_not_cached():
    from p4switch.runtime.errors import ConfigError
    codeshare.clear()
    with pytest.raises(ConfigError, match="not valid JSON"):
        Switch("{not json")
    with pytest.raises(ConfigError, match="no 'egress' pipeline|pipelines"):
        doc = json.loads(_text(P4 / "meters.p4"))
        doc["pipelines"] = doc["pipelines"][:1]
        Switch(json.dumps(doc))
    assert codeshare.cached_keys() == []


def test_cache_is_bounded(hash_text):
    codeshare.clear()
    doc = json.loads(hash_text)
    for size in range(codeshare.MAX_TEMPLATES + 3):
        doc["register_arrays"][0]["size"] = size + 1
        Switch(json.dumps(doc))
    assert len(codeshare.cached_keys()) == codeshare.MAX_TEMPLATES


def test_p4runtime_devices_of_one_json_are_independent(tmp_path):
    """Two P4Runtime devices given the same pipeline: a register written over P4Runtime on one
    reads 0 on the other."""
    from controller.client import SwitchClient
    from p4switch.server import P4RuntimeServer
    build = compile_file(str(P4 / "hash_externs.p4"))
    (tmp_path / "p.p4info.txtpb").write_text(build.p4info_text())
    (tmp_path / "p.json").write_text(json.dumps(build.bmv2))
    switches = [Switch(None), Switch(None)]
    servers = [P4RuntimeServer(sw, device_id=i + 1, cpu_port=None, address="127.0.0.1:0",
                               packet_out=lambda data: None) for i, sw in enumerate(switches)]
    for server in servers:
        server.start()
    try:
        clients = [SwitchClient(f"s{i + 1}", f"127.0.0.1:{s.bound_port}", i + 1, timeout=10)
                   for i, s in enumerate(servers)]
        try:
            for client in clients:
                client.set_pipeline_files(tmp_path / "p.p4info.txtpb", tmp_path / "p.json")
            code = [sw.program.untraced.source for sw in switches]
            assert code[0] is code[1]
            clients[0].write_register("last_crc", 2, 4242)
            assert clients[0].read_register("last_crc", 2) == {2: 4242}
            assert clients[1].read_register("last_crc", 2) == {2: 0}
        finally:
            for client in clients:
                client.close()
    finally:
        for server in servers:
            server.stop(grace=0)


def test_random_state_changes_stay_on_their_switch(hash_text):
    """Random register writes spread over three switches of one JSON: each reads back
    exactly its own writes."""
    rng = random.Random(7)
    switches = [Switch(hash_text) for _ in range(3)]
    expected = [[0] * switches[0].register_size("last_crc") for _ in switches]
    for _ in range(60):
        i = rng.randrange(3)
        cell = rng.randrange(len(expected[i]))
        value = rng.getrandbits(16)
        switches[i].register_write("last_crc", cell, value)
        expected[i][cell] = value
    for sw, cells in zip(switches, expected):
        assert sw.register_read_all("last_crc") == cells
