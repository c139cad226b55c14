"""A multicast replica carries only the valid headers: a field written while its header is not
valid reads 0 in a replica's egress, as on simple_switch (which builds each replica from a fresh
PHV and copies the valid headers into it); the packet's own unicast egress still sees the value.
Found by differential testing (docs/difftest.md F13, F16: an egress `mark_to_drop` guarded by
such a field). Each case also runs on real simple_switch when it is installed.

Zero is the usual answer on simple_switch, not the only one: a replica's PHV comes from a pool
and resetting it clears only validity, so under load a recycled PHV can still hold what an
earlier packet wrote into the invalid header (seen: 1 run in 40 with the CPUs busy). The spec
leaves such reads unspecified; the comparison with simple_switch accepts either value there."""

from __future__ import annotations

import io
import json

import pytest

from p4switch.compiler import compile_source
from p4switch.runtime import Switch
from p4switch.runtime.trace import TextTrace

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> res; }
header g_t { bit<8> k; bit<4> x; bit<4> y; }
struct headers_t { h_t h; g_t g; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.g.k = 0x55;                       // g is not valid
        hdr.g.y = 3;
        sm.egress_spec = 1;
        if (hdr.h.op == 1) { sm.mcast_grp = 1; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.res = hdr.g.k + (bit<8>)hdr.g.y;
        DIVERGE
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

# egress as is (the fast path runs every replica), or dropping the first replica (the general
# flow takes over from the replica that diverged)
DIVERGE = {"plain": "", "drop_port2": "if (sm.egress_port == 2) { mark_to_drop(sm); }"}
PACKETS = [bytes([0, 0]), bytes([1, 0])]


def _expected(variant: str) -> list[list[tuple[int, bytes]]]:
    replicas = [(3, bytes([1, 0]))] if variant == "drop_port2" else \
        [(2, bytes([1, 0])), (3, bytes([1, 0]))]
    return [[(1, bytes([0, 0x58]))], replicas]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("variant", sorted(DIVERGE))
def test_replica_sees_invalid_header_fields_as_zero(variant, traced, tmp_path):
    config = compile_source(PROGRAM.replace("DIVERGE", DIVERGE[variant])).bmv2
    switch = Switch(config, trace=TextTrace(io.StringIO()) if traced else None)
    switch.mc_group_create(1)
    switch.mc_node_associate(1, switch.mc_node_create(0, [2, 3]))
    expected = _expected(variant)
    assert [switch.receive(0, packet) for packet in PACKETS] == expected

    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None or traced:
        return                       # the runtime's own expectations above still ran
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(config))
    stf = "mc_mgrp_create 1\nmc_node_create 0 2 3\nmc_node_associate 1 0\n" + \
        "".join(f"packet 0 {packet.hex()}\n" for packet in PACKETS)
    real = run_stf_bmv2(path, stf, toolchain=toolchain)
    assert real.error is None, real.error
    want: dict[int, list[bytes]] = {}
    for outs in expected:
        for port, data in outs:
            want.setdefault(port, []).append(data)
    assert sorted(real.outputs) == sorted(want)
    for port, datas in real.outputs.items():
        assert [_as_fresh(port, data) for data in datas] == want[port]


STALE_RES = (0x55 + 3) & 0xFF      # what ingress wrote into the invalid g, as egress adds it


def _as_fresh(port: int, data: bytes) -> bytes:
    """A replica (ports 2, 3) from a recycled PHV reads the stale g; map it to the fresh answer."""
    if port in (2, 3) and len(data) == 2 and data[1] == STALE_RES:
        return data[:1] + b"\x00"
    return data


def test_stale_replica_is_mapped_only_where_simple_switch_may_differ():
    assert _as_fresh(3, bytes([1, 0x58])) == bytes([1, 0])
    assert _as_fresh(1, bytes([0, 0x58])) == bytes([0, 0x58])   # the unicast copy must keep it
    assert _as_fresh(2, bytes([1, 0x57])) == bytes([1, 0x57])   # any other value still fails


# An egress-to-egress clone is built the same way on simple_switch: only the valid headers are
# copied into it (found by differential testing, seed 570496: an egress register written from
# an invalid header's field held 16 on inaemu, 0 on simple_switch, after the clone's pass).
E2E_EGRESS = """
        hdr.h.res = hdr.g.k + (bit<8>)hdr.g.y;
        if (sm.instance_type == 0) { clone(CloneType.E2E, 32w5); }"""


@pytest.mark.parametrize("traced", [False, True])
def test_an_egress_clone_sees_invalid_header_fields_as_zero(traced, tmp_path):
    source = PROGRAM.replace("""
        hdr.h.res = hdr.g.k + (bit<8>)hdr.g.y;
        DIVERGE""", E2E_EGRESS)
    config = compile_source(source).bmv2
    switch = Switch(config, trace=TextTrace(io.StringIO()) if traced else None)
    switch.mirroring_add(5, port=3)
    # the packet itself: g's stale 0x55 + 3; its clone (port 3): g's fields are 0
    expected = [(1, bytes([0, 0x58])), (3, bytes([0, 0x00]))]
    assert switch.receive(0, bytes([0, 0])) == expected

    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None or traced:
        return
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(config))
    real = run_stf_bmv2(path, "mirroring_add 5 3\npacket 0 0000\n", toolchain=toolchain)
    assert real.error is None, real.error
    assert {port: [_as_fresh(port, d) for d in datas] for port, datas in real.outputs.items()} \
        == {1: [bytes([0, 0x58])], 3: [bytes([0, 0x00])]}
