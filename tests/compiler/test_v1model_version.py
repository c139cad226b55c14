"""v1model.p4 follows V1MODEL_VERSION as p4c's does, so redeclaring `PortId_t` works like p4c.

p4c's v1model.p4 declares `typedef bit<9> PortId_t` (and indexes counters, meters and registers
with a type parameter `I`) only when V1MODEL_VERSION >= 20200408; the default is 20180101. So a
program that declares its own `PortId_t` (as the p4lang tutorials' flowcache solution does) is
accepted by p4c, whatever the type, and refused as a duplicate under the newer version; a name
declared twice by the program itself is always refused. Where the reference p4c is installed,
each case is also shown to get the same verdict from it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program

P4C = Path("/opt/p4ref/bin/p4c-bm2-ss")
NEW = "#define V1MODEL_VERSION 20200408\n"

PORT_APPLY = "apply { PortId_t p = 1; sm.egress_spec = p; }"
INDEXED = """
    register<bit<8>, bit<4>>(16) r;
    counter<bit<4>>(16, CounterType.packets) c;
    meter<bit<4>>(16, MeterType.packets) m;
    apply {
        bit<8> v;
        r.read(v, hdr.eth.ether_type[3:0]);
        r.write(hdr.eth.ether_type[3:0], v + 1);
        c.count(hdr.eth.ether_type[3:0]);
        m.execute_meter(hdr.eth.ether_type[3:0], v);
    }"""

# name -> (source, refusal message or None when accepted)
CASES = {
    "own_port_type_same_width": (program(PORT_APPLY, decls="typedef bit<9> PortId_t;"), None),
    "own_port_type_other_width": (
        program("apply { PortId_t p = 1; sm.egress_spec = (bit<9>)p; }",
                decls="typedef bit<16> PortId_t;"), None),
    "v1model_port_type_under_the_new_version": (NEW + program(PORT_APPLY), None),
    "own_port_type_under_the_new_version": (
        NEW + program(PORT_APPLY, decls="typedef bit<9> PortId_t;"),
        "'PortId_t' is declared twice (first at "),
    "no_port_type_under_the_old_version": (program(PORT_APPLY), "PortId_t"),
    "own_typedef_twice_with_the_same_type": (
        program("apply { }", decls="typedef bit<8> T;\ntypedef bit<8> T;"),
        "'T' is declared twice (first at p.p4:4:"),
    "index_type_parameter_under_the_new_version": (NEW + program(INDEXED), None),
    "index_type_parameter_under_the_old_version": (
        program(INDEXED), "'register' takes 1 type argument(s), not 2"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inaemu_verdict(name):
    source, refusal = CASES[name]
    if refusal is None:
        compile_source(source, "p.p4")
        return
    with pytest.raises(CompileError) as info:
        compile_source(source, "p.p4")
    assert refusal in str(info.value)


def test_the_duplicate_is_reported_at_the_program_and_names_v1model():
    source, _ = CASES["own_port_type_under_the_new_version"]
    with pytest.raises(CompileError) as info:
        compile_source(source, "p.p4")
    file, line, _, message = info.value.diagnostics[0]
    assert (file, line) == ("p.p4", 5) and "v1model.p4" in message


def test_the_old_version_uses_bit9_ports_and_bit32_indexes():
    """The JSON of a default-version program has the same standard_metadata either way."""
    old = compile_source(program(PORT_APPLY.replace("PortId_t", "bit<9>")), "p.p4").bmv2
    new = compile_source(NEW + program(PORT_APPLY), "p.p4").bmv2
    standard = [t for t in old["header_types"] if t["name"] == "standard_metadata"]
    assert standard == [t for t in new["header_types"] if t["name"] == "standard_metadata"]


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_real_p4c_gives_the_same_verdict(name, tmp_path):
    source, refusal = CASES[name]
    path = tmp_path / "p.p4"
    path.write_text(source)
    done = subprocess.run([str(P4C), "-o", str(tmp_path / "p.json"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == (refusal is None), done.stderr
