"""`_` for a `range` key in `const entries` matches every value of the field: the entry's range
is 0 .. 2**width - 1 for any width. p4c's BMv2 back end gets the upper end wrong from 32 bits up
(it wraps the shift: 0 for 32 and 64 bits, 0x7fffffff for 63, 1 for 65), so its JSON misses
packets the spec says hit (docs/difftest.md F15, seed 210); inaemu must not copy that. The
inaemu JSON also runs on real simple_switch when it is installed."""

from __future__ import annotations

import json

from p4switch.compiler import compile_source
from p4switch.runtime import Switch

WIDTHS = (8, 32, 63, 64, 65)

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> w8; bit<32> w32; bit<63> w63; bit<64> w64; bit<65> w65; bit<8> hits; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action hit(bit<8> bit_) { hdr.h.hits = hdr.h.hits | bit_; }
TABLES
    apply { sm.egress_spec = 1;
APPLIES
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _source() -> str:
    tables = "".join(
        f"    table t{w} {{ key = {{ hdr.h.w{w}: range; }} actions = {{ hit; NoAction; }}\n"
        f"        const entries = {{ _: hit({1 << i}); }} default_action = NoAction(); }}\n"
        for i, w in enumerate(WIDTHS))
    applies = "".join(f"        t{w}.apply();\n" for w in WIDTHS)
    return PROGRAM.replace("TABLES", tables).replace("APPLIES", applies)


def _packet(value_bits: int) -> bytes:
    """Every field set to its top bit pattern `value_bits` (all ones or a middle value)."""
    bits = "".join(format(value_bits & ((1 << w) - 1), f"0{w}b") for w in WIDTHS) + "0" * 8
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


def test_dont_care_range_covers_the_whole_field(tmp_path):
    config = compile_source(_source()).bmv2
    tables = {t["name"]: t for p in config["pipelines"] for t in p["tables"]}
    for w in WIDTHS:
        key = tables[f"I.t{w}"]["entries"][0]["match_key"][0]
        assert (int(key["start"], 16), int(key["end"], 16)) == (0, (1 << w) - 1), w
    every_table = (1 << len(WIDTHS)) - 1
    packets = [_packet(v) for v in (0x17, (1 << 65) - 1, 1 << 40)]
    expected = [[(1, p[:-1] + bytes([every_table]))] for p in packets]
    switch = Switch(config)
    assert [switch.receive(0, p) for p in packets] == expected

    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None:
        return                       # the runtime's own expectations above still ran
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(config))
    stf = "".join(f"packet 0 {p.hex()}\n" for p in packets)
    real = run_stf_bmv2(path, stf, toolchain=toolchain)
    assert real.error is None, real.error
    assert real.outputs == {1: [out[0][1] for out in expected]}
