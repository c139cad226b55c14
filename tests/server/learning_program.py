"""The program of the digest and learning tests against simple_switch (P4Runtime digests:
test_digests_on_bmv2.py; Thrift learning notifications: tests/thrift/test_learning.py): a
learn_t digest of the source MAC, the ingress port and the EtherType, called in an action
(EtherType 9: no digest), the source field overwritten after the call."""

from __future__ import annotations

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct learn_t { bit<48> src; bit<9> port; bit<16> type; }
struct meta_t { learn_t learn; }
struct headers_t { ethernet_t eth; }
parser P(packet_in p, out headers_t h, inout meta_t m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; } }
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t s) {
    action learn() { m.learn.src = h.eth.src; m.learn.port = s.ingress_port;
                     m.learn.type = h.eth.type; digest<learn_t>(1, m.learn); }
    apply { if (h.eth.type != 9) { learn(); } m.learn.src = 1; s.egress_spec = 1; } }
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t s) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out p, in headers_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def frame(src: int, ether_type: int = 0x0800) -> bytes:
    return bytes.fromhex("112233445566") + src.to_bytes(6, "big") + \
        ether_type.to_bytes(2, "big") + bytes(30)
