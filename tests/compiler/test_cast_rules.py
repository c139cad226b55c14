"""P4_16 8.11.1: a cast between bit<W> and int<W> keeps the width, a width change keeps the
signedness; one cast that changes both is an error (p4c: "Cannot unify"), two casts are fine.
Found by differential testing (docs/difftest.md F1)."""

from __future__ import annotations

import pytest

from p4switch.compiler import CompileError, compile_source
from p4switch.runtime import Switch

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<4> a; bit<4> b; int<16> s; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        STATEMENT
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("statement, cast", [
    ("hdr.h.s = (int<16>)hdr.h.a;", "(int<16>)hdr.h.a"),
    ("hdr.h.b = (bit<4>)hdr.h.s;", "(bit<4>)hdr.h.s"),
    ("hdr.h.s = hdr.h.s + (int<16>)(hdr.h.a ++ hdr.h.b);", "(int<16>)(hdr.h.a"),
])
def test_width_and_sign_in_one_cast_is_an_error(statement, cast):
    source = PROGRAM.replace("STATEMENT", statement)
    with pytest.raises(CompileError) as info:
        compile_source(source, "p.p4")
    _, line, col, message = info.value.diagnostics[0]
    assert "changes either the width or the signedness" in message
    assert source.splitlines()[line - 1][col - 1:].startswith(cast)


@pytest.mark.parametrize("statement, packet, out", [
    # bit<4> 0xA -> int<4> -6 -> int<16> 0xFFFA (sign extended)
    ("hdr.h.s = (int<16>)(int<4>)hdr.h.a;", "A0 0000", "A0 FFFA"),
    # bit<4> 0xA -> bit<16> 10 -> int<16> 10 (zero extended)
    ("hdr.h.s = (int<16>)(bit<16>)hdr.h.a;", "A0 0000", "A0 000A"),
    # int<16> 0x1235 -> bit<16> -> bit<4> 5 (truncated)
    ("hdr.h.b = (bit<4>)(bit<16>)hdr.h.s;", "00 1235", "05 1235"),
])
def test_two_casts_compile_and_run(statement, packet, out):
    sw = Switch(compile_source(PROGRAM.replace("STATEMENT", statement), "p.p4").bmv2)
    assert sw.receive(0, bytes.fromhex(packet)) == [(0, bytes.fromhex(out))]
