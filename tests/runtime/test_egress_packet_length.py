"""packet_length in egress is the length after ingress (valid headers plus payload), on the
fast path, the general (traced) flow and the queued variant alike; and the fast path computes it
only for programs whose egress can read it (docs/difftest.md F10). The STF of
tests/p4/egress_packet_length checks the values against simple_switch."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from p4switch.compiler import compile_file, compile_source
from p4switch.runtime import Switch
from p4switch.runtime.trace import TextTrace

PROGRAM = Path(__file__).resolve().parents[1] / "p4" / "egress_packet_length.p4"


@pytest.mark.parametrize("mode", ["fast", "traced", "queued"])
def test_length_after_ingress_in_every_flow(mode):
    sw = Switch(compile_file(str(PROGRAM)).bmv2,
                trace=TextTrace(io.StringIO()) if mode == "traced" else None)
    now = [0.0]
    if mode == "queued":
        sw.clock = lambda: now[0]         # a manual clock: copies wait until it moves
        sw.set_queue_rate(1000)           # queues in use: the fast path's queued variant
    sw.mc_group_create(1)
    sw.mc_node_associate(1, sw.mc_node_create(2, [3]))
    out = sw.receive(0, bytes.fromhex("0300AABBCC"))      # h made invalid: 5 - 2
    out += sw.receive(0, bytes.fromhex("0600AABBCC"))     # o valid, multicast: 5 + 8
    if mode == "queued":
        now[0] = 1.0
        out += sw.release_queued()
    assert sorted(out) == sorted([
        (1, bytes.fromhex("0000000500000003AABBCC")),
        (3, bytes.fromhex("0600000000050000000DAABBCC"))])


SOURCE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> x; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.x = sm.packet_length; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { EGRESS }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("egress, reads", [
    ("hdr.h.setInvalid();", False),            # ingress reads it, egress does not
    ("hdr.h.x = sm.packet_length + 1;", True),
    ("if (sm.packet_length == 9) { hdr.h.x = 1; }", True),
])
def test_length_computed_only_where_egress_reads_it(egress, reads):
    sw = Switch(compile_source(SOURCE.replace("EGRESS", egress)).bmv2)
    sw.receive(0, bytes(6))
    assert sw._engine.egress_reads_length is reads
