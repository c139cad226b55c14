"""The difftest generator on its own (no reference toolchain needed): determinism, validity of
what it generates (inaemu's compiler as the checker), mutations that must be rejected, packets
that follow the parser, the STF it writes, and the per-packet split used against stale state."""

from __future__ import annotations

import random

import pytest

from p4switch.compiler import CompileError, compile_source
from p4switch.difftest import generate_case
from p4switch.difftest.exprs import ExprGen
from p4switch.difftest.model import Header
from p4switch.difftest.ptypes import BOOL, bit, literal, sint
from p4switch.difftest.runner import split_per_packet
from p4switch.difftest.scope import Scope, Var
from p4switch.difftest.stf import _pack
from p4switch.stf import parse_stf

SEEDS = range(40)


def test_same_seed_same_case():
    assert generate_case(7) == generate_case(7)
    assert generate_case(7).source != generate_case(8).source


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_case_compiles_or_is_rejected_on_purpose(seed):
    case = generate_case(seed)
    if case.expect_valid:
        result = compile_source(case.source, f"seed{seed}.p4")
        assert result.bmv2["pipelines"]
    else:
        with pytest.raises(CompileError):
            compile_source(case.source, f"seed{seed}.p4")


def test_invalid_rate_one_always_mutates():
    cases = [generate_case(s, invalid_rate=1.0) for s in range(15)]
    assert all(not c.expect_valid and c.mutation for c in cases)
    for case in cases:
        with pytest.raises(CompileError):
            compile_source(case.source)


@pytest.mark.parametrize("seed", SEEDS)
def test_stf_parses_and_names_what_the_program_declares(seed):
    case = generate_case(seed)
    test = parse_stf(case.stf)
    packets = [line for line in case.stf.splitlines() if line.startswith("packet ")]
    assert 2 <= len(packets) <= 5
    assert len(test.commands) == len(case.stf.splitlines())
    for line in case.stf.splitlines():
        if line.startswith("check_counter"):
            name = line.split()[1].split("(")[0].split(".")[1]
            assert f") {name};" in case.source


_TYPES = [bit(1), bit(8), bit(13), bit(64), bit(100), sint(8), sint(33), BOOL]


@pytest.mark.parametrize("seed", range(12))
def test_expressions_have_the_type_asked_for(seed):
    """Each expression is assigned to a variable of the type it was made for; inaemu's type
    checker must accept every assignment."""
    rng = random.Random(seed)
    scope = Scope([Var(f"meta.v{i}", ty) for i, ty in enumerate(_TYPES)])
    gen = ExprGen(rng, max_depth=4)
    lines = [f"meta.v{i} = {gen.expr(ty, scope)};" for _ in range(5)
             for i, ty in enumerate(_TYPES)]
    fields = " ".join(f"{ty.p4()} v{i};" for i, ty in enumerate(_TYPES))
    source = _WRAPPER.replace("FIELDS", fields).replace("BODY", "\n        ".join(lines))
    compile_source(source, f"exprs{seed}.p4")


def test_literals_fit_their_type():
    rng = random.Random(3)
    assert literal(rng, bit(8), 0x1ff) == "8w0xff"
    assert literal(rng, sint(8), 0x80) == "(-8s127 - 1)"
    assert literal(rng, sint(8), 0xfd) == "(-8s3)"
    assert literal(rng, sint(4), 5) == "4s5"


def test_header_packing_is_big_endian_in_field_order():
    header = Header("h0", [("a", bit(4)), ("b", sint(12)), ("c", bit(8))])
    assert _pack(header, {"a": 0xA, "b": 0xBCD, "c": 0xEF}).hex() == "abcdef"
    assert _pack(header, {"a": 0x1F, "b": -1, "c": 0}).hex() == "ffff00"


def test_split_per_packet_keeps_setup_and_checks_for_each_packet():
    stf = "mc_mgrp_create 1\nadd t k:1 a()\npacket 0 AA\npacket 1 BB\ncheck_counter c(0)\n"
    assert split_per_packet(stf) == [
        "mc_mgrp_create 1\nadd t k:1 a()\npacket 0 AA\ncheck_counter c(0)\n",
        "mc_mgrp_create 1\nadd t k:1 a()\npacket 1 BB\ncheck_counter c(0)\n"]


_WRAPPER = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; }
struct headers_t { h_t h; }
struct meta_t { FIELDS }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        BODY
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _returns_in_switch_cases(source: str) -> int:
    """`return;` lines inside the braces of a `switch` on a value (not a table's action_run,
    which p4c compiles right), in the generator's layout."""
    found, depth_at_switch, depth = 0, [], 0
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("switch (") and ".apply().action_run" not in text:
            depth_at_switch.append(depth)
        if text == "return;" and depth_at_switch:
            found += 1
        depth += text.count("{") - text.count("}")
        while depth_at_switch and depth <= depth_at_switch[-1]:
            depth_at_switch.pop()
    return found


def test_no_return_in_a_switch_case_while_f21_is_avoided():
    """F21: p4c drops every statement after a `switch` on a value one of whose cases
    returns."""
    avoided = sum(_returns_in_switch_cases(generate_case(seed, invalid_rate=0).source)
                  for seed in range(300))
    allowed = sum(_returns_in_switch_cases(generate_case(seed, invalid_rate=0,
                                                         avoid=frozenset()).source)
                  for seed in range(300))
    assert avoided == 0 and allowed > 0


def _parser_stores(source: str) -> dict[str, set[str]]:
    """metadata field -> the parser states that assign it, in the generator's layout."""
    stores: dict[str, set[str]] = {}
    state = None
    in_parser = False
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("parser P("):
            in_parser = True
        elif in_parser and text.startswith("state "):
            state = text.split()[1]
        elif in_parser and line.startswith("}"):
            break
        elif in_parser and text.startswith("meta.") and " = " in text:
            stores.setdefault(text.split()[0], set()).add(state)
    return stores


def test_no_metadata_field_stored_in_two_parser_states_while_f39_is_avoided():
    """F39: p4c drops a parser state's store that the next state overwrites after an extract,
    though that extract may fail."""
    def twice(avoid):
        return sum(len(states) > 1
                   for seed in range(300)
                   for states in _parser_stores(
                       generate_case(seed, invalid_rate=0, **avoid).source).values())
    assert twice({}) == 0 and twice({"avoid": frozenset()}) > 0


def test_varbit_packets_carry_the_bytes_their_length_field_says():
    """The STF's packets give a varbit header as many bytes as the low bits of the first
    header's field say, so the parser's length expression is what the packet holds."""
    from p4switch.difftest.model import ParserState, Program
    from p4switch.difftest.stf import packet_bytes
    first = Header("h0", [("n", bit(8))])
    options = Header("h1", [("x", bit(16))], varbit=64, length_source="h0.n", length_bits=3)
    program = Program(headers=[first, options], meta=[], ingress=None, egress=None,
                      emit_order=["h0", "h1"],
                      states=[ParserState("start", "h0", default="parse_h1"),
                              ParserState("parse_h1", "h1")])
    assert options.length_expr == "((bit<32>)hdr.h0.n[2:0]) << 3"

    class NoTail(random.Random):
        """No bytes after the headers and none cut short, so a packet's length is exact."""
        def randrange(self, start, stop=None, step=1):
            return 0 if (start, stop) == (0, 10) else super().randrange(start, stop, step)

        def random(self):
            return 0.5

    rng = NoTail(5)
    lengths = set()
    for _ in range(100):
        data = packet_bytes(program, rng, {})
        assert len(data) == 1 + 2 + (data[0] & 7)
        lengths.add(data[0] & 7)
    assert len(lengths) > 3
