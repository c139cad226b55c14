"""Programs whose BMv2 JSON from p4c does not run (or runs wrongly) on simple_switch, but
inaemu's does.

Each program here runs its STF test on inaemu's runtime and, when the reference toolchain is
installed, on real simple_switch with inaemu's JSON; both must pass. (Programs p4c handles
belong in tests/p4 with an .stf, where tests/reference also runs p4c's JSON.) The expected bytes
were worked out by hand and confirmed on real simple_switch.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from p4switch.compiler import compile_source

SIMPLE_SWITCH = Path("/opt/p4ref/bin/simple_switch")

# Header stack elements chosen at run time. p4c's JSON for these is refused or aborts
# simple_switch: it puts the dereference in a parser select key, passes an unwrapped
# dereference to assign_header, and gives register_read an expression destination (BMv2's
# register_read and execute_meter write plain fields only).
STACK_RUNTIME_INDEX = """
#include <core.p4>
#include <v1model.p4>
error { BadIndex }
header idx_t { bit<8> i; bit<8> j; }
header item_t { bit<8> v; }
header out_t { bit<8> r; bit<8> m; bit<8> e; }
struct headers { idx_t idx; out_t o; item_t[4] items; }
struct metadata { error err; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.idx);
        pkt.extract(hdr.o);
        pkt.extract(hdr.items.next);
        pkt.extract(hdr.items.next);
        meta.err = error.BadIndex;
        verify(hdr.idx.i < 2, meta.err);
        transition select(hdr.items[hdr.idx.i].v) {
            0x42: mark;
            default: accept;
        }
    }
    state mark {
        hdr.o.m = hdr.items[hdr.idx.i].v + 1;
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<8>>(1) r;
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.BadIndex) {
            hdr.o.e = 0xEE;
        } else {
            r.write(0, hdr.o.r);
            r.read(hdr.items[hdr.idx.i].v, 0);
            hdr.items[hdr.idx.j] = hdr.items[hdr.idx.i];
            if (hdr.idx.j == 3) {
                hdr.items[hdr.idx.j].setInvalid();
            }
        }
    }
}
control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control Dep(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.idx); pkt.emit(hdr.o); pkt.emit(hdr.items); }
}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""
STACK_RUNTIME_INDEX_STF = """
# idx = i j; o = r m e; then the valid items (two are parsed)
# i = 1, j = 0: items[1] = 42 selects `mark` (m = 43); the register read writes r = 99 into
# items[1]; items[0] = items[1] -> 99 99
packet 0 01 00  99 00 00  11 42
expect 1 01 00  99 43 00  99 99 $
# i = 0, j = 2: items[0] = 17, no mark; the read writes 33 into items[0]; items[2] = items[0]
# makes the third element valid, so it is emitted
packet 0 00 02  33 00 00  17 18
expect 1 00 02  33 00 00  33 18 33 $
# j = 3: items[3] = items[1] is made valid, then setInvalid() removes it again
packet 0 01 03  05 00 00  21 22
expect 1 01 03  05 00 00  21 05 $
# i = 2: verify fails (BadIndex) before the select; the extracted items are still emitted
packet 0 02 00  05 00 00  21 22
expect 1 02 00  05 00 EE  21 22 $
"""

# A whole-header inout argument hs[i] names the element chosen at the call, even when the
# action then changes i (p4c's JSON: an unwrapped dereference, refused by simple_switch).
HEADER_ARG_AT_INDEX = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> i; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[2] s; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_e(inout e_t e) {
        hdr.h.i = hdr.h.i ^ 1;
        e.v = e.v + 1;
    }
    apply {
        sm.egress_spec = 1;
        set_e(hdr.s[hdr.h.i]);
    }
}
control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control Dep(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""
HEADER_ARG_AT_INDEX_STF = """
# h = i, then s[0] s[1]; set_e flips i and adds 1 to the element named at the call
packet 0 01 11 22
expect 1 00 11 23 $
packet 0 00 11 22
expect 1 01 12 22 $
"""

# A loop with run-time bounds in a function called straight from an apply block. p4c's JSON
# does not run the loop (the count stays 0 on simple_switch; tests/p4/run_time_loops calls such
# functions from an action instead, where p4c's JSON is right); inaemu's runs the loop with
# jumps in the synthesized action.
LOOP_IN_APPLY_FUNCTION = """
#include <core.p4>
#include <v1model.p4>
header v_t { bit<8> v; bit<8> bits; }
struct headers { v_t h; }
struct metadata { }
bit<8> popcount(in bit<8> v) {
    bit<8> count = 0;
    for (bit<8> rest = v; rest != 0; rest = rest >> 1) {
        count = count + (bit<8>)rest[0:0];
    }
    return count;
}
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control Ing(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { hdr.h.bits = popcount(hdr.h.v); }
}
control Eg(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control Dep(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""
LOOP_IN_APPLY_FUNCTION_STF = """
packet 0 B7 00
expect 0 B7 06 $
packet 0 00 55
expect 0 00 00 $
packet 0 FF 00
expect 0 FF 08 $
"""

CASES = {"stack_runtime_index": (STACK_RUNTIME_INDEX, STACK_RUNTIME_INDEX_STF),
         "header_arg_at_index": (HEADER_ARG_AT_INDEX, HEADER_ARG_AT_INDEX_STF),
         "loop_in_apply_function": (LOOP_IN_APPLY_FUNCTION, LOOP_IN_APPLY_FUNCTION_STF)}


def _compiled(name: str) -> dict:
    source, _ = CASES[name]
    return compile_source(textwrap.dedent(source), f"{name}.p4").bmv2


@pytest.mark.parametrize("name", sorted(CASES))
def test_passes_on_inaemu_runtime(name):
    from p4switch.reference import run_stf_inaemu
    outcome = run_stf_inaemu(_compiled(name), CASES[name][1])
    assert outcome.error is None and outcome.passed, outcome.report


@pytest.mark.skipif(not SIMPLE_SWITCH.exists(), reason="reference BMv2 not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_passes_on_real_simple_switch(name, tmp_path):
    from p4switch.reference import run_stf_bmv2
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(_compiled(name)))
    outcome = run_stf_bmv2(path, CASES[name][1])
    assert outcome.error is None, outcome.error
    assert outcome.passed, outcome.report
