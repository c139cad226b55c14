"""LPM tables looked up in C (nativeprelude.py `levels_answer`, over the table's own
`Table.levels`) must choose what the Python lookup (`Table.lookup_lpm`) chooses, also while the
control plane inserts, modifies and deletes routes over P4Runtime between packets.

p4src/l3_forward.p4 runs on two switches, one with C controls and one with the Python
controls; every P4Runtime write goes to both, and every packet to both."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2

from p4switch.compiler import compile_file
from p4switch.runtime import LpmKey, Switch
from p4switch.runtime.cgen import nativebuild

from ..server.helpers import write
from ..server.local_server import LocalRunningServer

ROOT = Path(__file__).resolve().parents[2]
ROUTER_MAC = bytes.fromhex("000000000100")


@pytest.fixture(scope="module")
def l3_program():
    return compile_file(str(ROOT / "p4src" / "l3_forward.p4"))


@pytest.fixture
def native_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))


class Controlled:
    """A switch behind an in-process P4Runtime server (tests/server's), its program installed
    by SetForwardingPipelineConfig, this client primary."""

    def __init__(self, program, native: bool, monkeypatch):
        monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
        self.switch = Switch(None)
        self.server = LocalRunningServer(self.switch)
        self.server.stream().arbitrate(1)
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=0)
        request.election_id.low = 1
        request.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        request.config.p4info.CopyFrom(program.p4info)
        request.config.p4_device_config = json.dumps(program.bmv2).encode()
        self.server.stub.SetForwardingPipelineConfig(request)
        in_use = self.switch.program.untraced.native_in_use
        assert ("ingress" in in_use) == native, (nativebuild.why_not,
                                                 self.switch.program.untraced.native.refused)

    def write(self, updates: list) -> None:
        write(self.server.stub, *updates)

    def close(self) -> None:
        self.server.close()


def lpm_table(switch: Switch):
    return next(t for name, t in switch.program.tables.items() if name.endswith("ipv4_lpm"))


class Ids:
    """The P4Info ids of ipv4_lpm and ipv4_forward."""

    def __init__(self, p4info):
        self.table = next(t.preamble.id for t in p4info.tables
                          if t.preamble.name.endswith("ipv4_lpm"))
        self.forward = next(a.preamble.id for a in p4info.actions
                            if a.preamble.name.endswith("ipv4_forward"))


def route_update(ids: Ids, kind: str, prefix: int, length: int, port: int | None = None):
    entry = p4runtime_pb2.TableEntry(table_id=ids.table)
    if length:          # P4Runtime: a /0 route is the field left out of the match
        entry.match.add(field_id=1).lpm.CopyFrom(p4runtime_pb2.FieldMatch.LPM(
            value=_bytes(prefix), prefix_len=length))
    if port is not None:
        action = entry.action.action
        action.action_id = ids.forward
        action.params.add(param_id=1, value=_bytes(0x0800_0000_0000 | port))
        action.params.add(param_id=2, value=_bytes(port))
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind))
    update.entity.table_entry.CopyFrom(entry)
    return update


def _bytes(value: int) -> bytes:
    """P4Runtime's canonical bytestring: the shortest big-endian form."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def ipv4_packet(dst: int) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8, 1, 0, 64, 17, 0,
                         bytes([10, 0, 1, 1]), dst.to_bytes(4, "big"))
    checksum = _csum(header)
    header = header[:10] + checksum.to_bytes(2, "big") + header[12:]
    udp = struct.pack("!HHHH", 4000, 5000, 8, 0)
    return ROUTER_MAC + bytes.fromhex("000000000011") + b"\x08\x00" + header + udp


def _csum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def nearby(rng: random.Random, routes: dict) -> int:
    """An address in or next to a route (or anywhere), so hits and misses at every length."""
    if routes and rng.random() < 0.8:
        prefix, length = rng.choice(list(routes))
        host = rng.getrandbits(32 - length) if length < 32 else 0
        address = prefix | host
        if rng.random() < 0.3:
            address ^= 1 << rng.randrange(32)       # just outside (or inside a longer one)
        return address
    return rng.getrandbits(32)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_native_lpm_follows_p4runtime_writes_as_python(l3_program, native_cache, monkeypatch,
                                                        seed):
    rng = random.Random(seed)
    ids = Ids(l3_program.p4info)
    native = Controlled(l3_program, True, monkeypatch)
    python = Controlled(l3_program, False, monkeypatch)
    routes: dict[tuple[int, int], int] = {}
    ports_seen: set[int] = set()
    try:
        for step in range(40):
            updates, touched = [], set()       # one update per route in a write
            for _ in range(rng.randint(1, 6)):
                choice = rng.random()
                free = [key for key in routes if key not in touched]
                if free and choice < 0.25:
                    key = rng.choice(free)
                    del routes[key]
                    updates.append(route_update(ids, "DELETE", *key))
                elif free and choice < 0.45:
                    key = rng.choice(free)
                    routes[key] = rng.randint(1, 8)
                    updates.append(route_update(ids, "MODIFY", *key, routes[key]))
                else:
                    length = rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32,
                                         rng.randint(0, 32)])
                    key = (rng.getrandbits(32) & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF,
                           length)
                    if key in routes or key in touched:
                        continue
                    routes[key] = rng.randint(1, 8)
                    updates.append(route_update(ids, "INSERT", *key, routes[key]))
                touched.add(key)
            if not updates:
                continue
            for switch in (native, python):
                switch.write(updates)
            for _ in range(30):
                packet = ipv4_packet(nearby(rng, routes))
                got = native.switch.receive(1, packet)
                want = python.switch.receive(1, packet)
                assert got == want, (step, packet.hex(), sorted(routes))
                ports_seen.update(port for port, _ in got)
        assert len(lpm_table(native.switch).levels) > 3     # several lengths really in play
        assert len(ports_seen) > 4                          # routes really chose the ports
    finally:
        native.close()
        python.close()


def test_native_lpm_matches_the_python_lookup_at_every_length(native_cache, monkeypatch,
                                                              l3_program):
    """Every prefix length 0..32 at once, nested in one another: the longest match wins, in C
    as in `Table.lookup_lpm`, for addresses at each boundary."""
    monkeypatch.setenv("INAEMU_NATIVE", "1")
    sw = Switch(l3_program.bmv2)
    assert "ingress" in sw.program.untraced.native_in_use
    base = 0x0A0B0C0D
    for length in range(33):
        prefix = base & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF
        sw.table_add("ipv4_lpm", [LpmKey(prefix, length)], "ipv4_forward",
                     (0x0800_0000_0000 | length, length + 1))
    table = lpm_table(sw)
    for bit in range(33):
        address = base ^ (1 << (32 - bit)) if bit else base ^ (1 << 31)
        for probe in (address, base):
            result = table.lookup_lpm(probe)
            want_port = result[1][1]
            got = sw.receive(1, ipv4_packet(probe))
            assert [port for port, _ in got] == [want_port], (bit, hex(probe))


def test_many_keys_in_turn_find_their_own_routes(native_cache, monkeypatch, l3_program):
    """Many distinct keys for the C's ints kept by the key's low bits (nativebuild.py
    `key_int`, 1,024 entries: 1,000 routes and as many misses share entries), each looked up
    several times in a shuffled order: every packet goes where its own /32 route says (or
    nowhere), in C as in Python."""
    rng = random.Random(7)
    switches = []
    for native in (True, False):           # (each its own copy: a program is built once)
        monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
        switches.append(Switch(json.loads(json.dumps(l3_program.bmv2))))
    assert "ingress" in switches[0].program.untraced.native_in_use
    assert "ingress" not in switches[1].program.untraced.native_in_use
    addresses = rng.sample(range(1 << 32), 2000)
    routed = {address: index % 500 + 1 for index, address in enumerate(addresses[:1000])}
    for sw in switches:
        for address, port in routed.items():
            sw.table_add("ipv4_lpm", [LpmKey(address, 32)], "ipv4_forward",
                         (0x0800_0000_0000 | port, port))
    order = addresses * 3
    rng.shuffle(order)
    for address in order:
        want = [routed[address]] if address in routed else []
        for sw in switches:
            assert [port for port, _ in sw.receive(1, ipv4_packet(address))] == want
