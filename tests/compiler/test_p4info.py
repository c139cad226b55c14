"""P4Info: field by field against p4c's output for the shared fixtures, and expectations of our own."""

from __future__ import annotations

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler import compile_source
from p4switch.compiler.p4info import jenkins_one_at_a_time

from tests.conftest import SHARED_FIXTURES
from .helpers import program

FIXTURES = sorted(p for p in SHARED_FIXTURES.glob("*/*.p4info.txtpb")) if SHARED_FIXTURES.is_dir() else []


def p4c_id(prefix: int, name: str) -> int:
    return (prefix << 24) | (jenkins_one_at_a_time(name) & 0xFFFFFF)


@pytest.mark.parametrize("expected_file", FIXTURES, ids=[p.parent.name for p in FIXTURES])
def test_matches_p4c_field_by_field(expected_file):
    from p4switch.compiler import compile_file
    source = expected_file.with_name(expected_file.parent.name + ".p4")
    got = compile_file(source).p4info
    expected = text_format.Parse(expected_file.read_text(), p4info_pb2.P4Info())
    for field in ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters",
                  "registers", "action_profiles", "controller_packet_metadata", "digests"):
        assert list(getattr(got, field)) == list(getattr(expected, field)), field
    assert got == expected


def test_id_hash_matches_known_p4c_ids():
    # ids p4c gave these names (from its output for the shared fixtures)
    assert p4c_id(0x01, "NoAction") == 21257015
    assert p4c_id(0x02, "IngressImpl.routes") == 41229565
    assert p4c_id(0x16, "IngressImpl.last_len") == 381578954


def build(ingress: str, **kw) -> p4info_pb2.P4Info:
    return compile_source(program(ingress, **kw), "p.p4").p4info


def test_tables_actions_and_scopes():
    info = build("""
        action set(bit<9> port, bit<8> tag) { sm.egress_spec = port; }
        @name("renamed") action other() { }
        table fwd {
            key = { hdr.eth.dst : lpm @name("dst_addr"); sm.ingress_port : exact; }
            actions = { set; @tableonly other; @defaultonly NoAction; }
            const default_action = NoAction();
            size = 77;
        }
        table plain {
            key = { hdr.eth.src : ternary; }
            actions = { set; }
            default_action = set(5, 0x10);
        }
        apply { fwd.apply(); plain.apply(); }""")
    fwd, plain = info.tables
    assert fwd.preamble.name == "Ing.fwd" and fwd.preamble.alias == "fwd"
    assert fwd.preamble.id == p4c_id(2, "Ing.fwd")
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in fwd.match_fields] == [
        (1, "dst_addr", 48, p4info_pb2.MatchField.LPM),
        (2, "sm.ingress_port", 9, p4info_pb2.MatchField.EXACT)]
    assert fwd.size == 77
    names = {a.preamble.id: a.preamble.name for a in info.actions}
    assert [names[r.id] for r in fwd.action_refs] == ["Ing.set", "Ing.renamed", "NoAction"]
    assert [r.scope for r in fwd.action_refs] == [
        p4info_pb2.ActionRef.TABLE_AND_DEFAULT, p4info_pb2.ActionRef.TABLE_ONLY,
        p4info_pb2.ActionRef.DEFAULT_ONLY]
    assert fwd.const_default_action_id == p4c_id(1, "NoAction")
    assert plain.const_default_action_id == 0
    assert plain.initial_default_action.action_id == p4c_id(1, "Ing.set")
    assert [(a.param_id, a.value) for a in plain.initial_default_action.arguments] == [
        (1, b"\x00\x05"), (2, b"\x10")]  # the whole bytes of each width, as p4c writes
    set_action = [a for a in info.actions if a.preamble.name == "Ing.set"][0]
    assert [(p.id, p.name, p.bitwidth) for p in set_action.params] == [(1, "port", 9), (2, "tag", 8)]


def test_table_without_default_action_gets_noaction_default_only():
    info = build("""
        table t { key = { hdr.eth.dst : exact; } actions = { } }
        apply { t.apply(); }""")
    (t,) = info.tables
    assert [(r.id, r.scope) for r in t.action_refs] == [
        (p4c_id(1, "NoAction"), p4info_pb2.ActionRef.DEFAULT_ONLY)]
    assert t.initial_default_action.action_id == p4c_id(1, "NoAction")


def test_const_entries_mark_the_table():
    info = build("""
        action a() { }
        table t { key = { hdr.eth.dst : exact; } actions = { a; }
                  const entries = { 1 : a(); } }
        apply { t.apply(); }""")
    assert info.tables[0].is_const_table and info.tables[0].has_initial_entries


def test_externs_profiles_and_direct_resources():
    info = build("""
        direct_counter(CounterType.packets_and_bytes) hits;
        direct_meter<bit<2>>(MeterType.bytes) rate;
        counter(64, CounterType.bytes) c;
        meter(32, MeterType.packets) m;
        register<bit<16>>(10) r;
        action_selector(HashAlgorithm.crc16, 128, 14) sel;
        action fwd(bit<9> p) { sm.egress_spec = p; hits.count(); rate.read(meta.color); }
        table ecmp {
            key = { hdr.eth.dst : exact; hdr.eth.src : selector; }
            actions = { fwd; }
            implementation = sel;
        }
        table metered {
            key = { hdr.eth.dst : exact; }
            actions = { fwd; }
            counters = hits;
            meters = rate;
        }
        apply { ecmp.apply(); metered.apply(); c.count(1); m.execute_meter(2, meta.color);
                r.write(0, 7); }""", meta_fields="bit<2> color;")
    ecmp, metered = info.tables
    assert [m.name for m in ecmp.match_fields] == ["hdr.eth.dst"]
    (prof,) = info.action_profiles
    assert prof.preamble.name == "Ing.sel" and prof.with_selector and prof.size == 128
    assert list(prof.table_ids) == [ecmp.preamble.id] and ecmp.implementation_id == prof.preamble.id
    (dc,), (dm,) = info.direct_counters, info.direct_meters
    assert dc.spec.unit == p4info_pb2.CounterSpec.BOTH and dc.direct_table_id == metered.preamble.id
    assert dm.spec.unit == p4info_pb2.MeterSpec.BYTES and dm.direct_table_id == metered.preamble.id
    assert sorted(metered.direct_resource_ids) == sorted([dc.preamble.id, dm.preamble.id])
    assert [(x.preamble.name, x.size, x.spec.unit) for x in info.counters] == [
        ("Ing.c", 64, p4info_pb2.CounterSpec.BYTES)]
    assert [(x.preamble.name, x.size, x.spec.unit) for x in info.meters] == [
        ("Ing.m", 32, p4info_pb2.MeterSpec.PACKETS)]
    (reg,) = info.registers
    assert (reg.size, reg.type_spec.bitstring.bit.bitwidth) == (10, 16)
    assert dc.preamble.id >> 24 == 0x13 and dm.preamble.id >> 24 == 0x15
    assert reg.preamble.id >> 24 == 0x16 and prof.preamble.id >> 24 == 0x11


def test_controller_headers_and_digests():
    decls = """
        @controller_header("packet_in") header packet_in_t { bit<9> port; bit<7> pad; }
        struct learn_t { bit<48> mac; bit<9> port; }"""
    info = build("""
        apply { digest<learn_t>(1, {hdr.eth.src, sm.ingress_port}); }""", decls=decls,
                 header_fields="packet_in_t pin;")
    (cpm,) = info.controller_packet_metadata
    # p4c 1.2.5 names it after the annotation but hashes the header type's name for its id
    assert cpm.preamble.name == "packet_in" and cpm.preamble.id == p4c_id(4, "packet_in_t")
    assert list(cpm.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in cpm.metadata] == [(1, "port", 9), (2, "pad", 7)]
    (dg,) = info.digests
    assert dg.preamble.name == "learn_t" and dg.type_spec.struct.name == "learn_t"
    members = info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("mac", 48), ("port", 9)]


def test_explicit_ids_and_aliases():
    info = build("""
        @id(0x01000042) action a1() { }
        action a2() { }
        table t1 { key = { hdr.eth.dst : exact; } actions = { a1; a2; } }
        apply { t1.apply(); }""")
    ids = {a.preamble.name: a.preamble.id for a in info.actions}
    assert ids["Ing.a1"] == 0x01000042
    assert {a.preamble.alias for a in info.actions} >= {"a1", "a2"}


def test_text_output_is_p4c_shaped():
    """p4c's header lines; `type_info` only where p4c converts a type (here: a table), so an
    empty program has none (p4c's text for it, byte for byte)."""
    text = compile_source(program("apply { }"), "p.p4").p4info_text()
    assert text == ("# proto-file: p4/config/v1/p4info.proto\n"
                    "# proto-message: p4.config.v1.P4Info\n\n"
                    'pkg_info {\n  arch: "v1model"\n}\n')
    with_table = compile_source(program("table t { actions = { NoAction; } }\n"
                                        "apply { t.apply(); }"), "p.p4").p4info_text()
    assert with_table.endswith("type_info {\n}\n")


def test_value_sets():
    from p4switch.compiler import compile_source
    text = program("apply { }").replace(
        "state start { pkt.extract(hdr.eth); transition accept; }",
        "value_set<bit<16>>(4) types;\n"
        "    state start { pkt.extract(hdr.eth);\n"
        "        transition select(hdr.eth.ether_type) { types: accept; default: reject; } }")
    info = compile_source(text, "p.p4").p4info
    (vs,) = info.value_sets
    assert vs.preamble.name == "P.types" and vs.preamble.id >> 24 == 0x03
    assert vs.size == 4 and [(m.id, m.bitwidth) for m in vs.match] == [(1, 16)]


def test_serializable_enums_in_type_info():
    info = build("""
        action set_kind(Kind k) { hdr.eth.ether_type = (bit<16>)k; }
        table t { key = { meta.kind : exact; } actions = { set_kind; } }
        apply { t.apply(); }""", decls="enum bit<16> Kind { IPV4 = 0x800, ARP = 0x806 }",
                 meta_fields="Kind kind;")
    (t,) = info.tables
    # as p4c 1.2.5: described in type_info, not named at the match field or parameter
    assert not t.match_fields[0].HasField("type_name") and t.match_fields[0].bitwidth == 16
    action = [a for a in info.actions if a.preamble.name == "Ing.set_kind"][0]
    assert not action.params[0].HasField("type_name")
    enum = info.type_info.serializable_enums["Kind"]
    assert enum.underlying_type.bitwidth == 16
    assert [(m.name, m.value) for m in enum.members] == [("IPV4", b"\x08\x00"), ("ARP", b"\x08\x06")]


def test_top_level_externs_and_idle_timeout():
    info = build("""
        action a() { top_counter.count(0); }
        table t { key = { hdr.eth.dst : exact; } actions = { a; } support_timeout = true; }
        apply { t.apply(); }""", decls="counter(4, CounterType.packets) top_counter;")
    assert [c.preamble.name for c in info.counters] == ["top_counter"]
    assert info.tables[0].idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL


NAMES_AND_VALUE_SETS = program("""
    action foo(@name("orange") bit<9> port) { sm.egress_spec = port; }
    @name("t\u25d5") table t { key = { hdr.eth.dst : exact; } actions = { foo; } }
    apply { t.apply(); }""", decls="struct pvs_t { @match(ternary) bit<16> a; @match(lpm) bit<8> b; }"
).replace("state start {", "value_set<pvs_t>(4) pvs;\n    state start {").replace(
    "pkt.extract(hdr.eth); transition accept;",
    "pkt.extract(hdr.eth); transition select(hdr.eth.ether_type, hdr.eth.dst[7:0]) "
    "{ pvs: accept; default: accept; }")


def test_parameter_names_value_set_match_kinds_and_escapes_as_p4c(tmp_path):
    """An action parameter's @name is its P4Info name; a value set's struct fields take the
    match kind of their @match; a non-ASCII name is written as octal bytes (session 58,
    from p4c's samples name_annotations_to_p4info, pvs-struct-3, nonstandard_table_names)."""
    import subprocess
    from pathlib import Path
    result = compile_source(NAMES_AND_VALUE_SETS, "p.p4")
    info = result.p4info
    (action,) = [a for a in info.actions if a.preamble.name.endswith("foo")]
    assert [p.name for p in action.params] == ["orange"]
    (vs,) = info.value_sets
    assert [m.match_type for m in vs.match] == [p4info_pb2.MatchField.TERNARY,
                                                p4info_pb2.MatchField.LPM]
    text = result.p4info_text()
    assert 'name: "Ing.t\\342\\227\\225"' in text
    p4c = Path("/opt/p4ref/bin/p4c-bm2-ss")
    if p4c.exists():   # and the whole text is p4c's
        source = tmp_path / "p.p4"
        source.write_text(NAMES_AND_VALUE_SETS)
        subprocess.run([str(p4c), "-I", "/opt/p4ref/share/p4c/p4include", "-o",
                        str(tmp_path / "p.json"), "--p4runtime-files",
                        str(tmp_path / "p.txtpb"), str(source)], check=True,
                       capture_output=True, timeout=120)
        assert text == (tmp_path / "p.txtpb").read_text()
