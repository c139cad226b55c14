"""`...` (default values) and `{#}` (an invalid header): where they take a type, what they
become, and the places p4c refuses them, refused the same way (each verdict probed on p4c
1.2.5). What packets get is tests/p4/default_values.stf's and invalid_headers.stf's job, on
inaemu and on real simple_switch."""

from __future__ import annotations

import json

import pytest

from p4switch.compiler import CompileError, compile_source
from p4switch.runtime import Switch

from .helpers import program

DECLS = """
header e_t { bit<8> v; }
struct hw_t { e_t e; bit<8> k; }
type bit<8> Tag_t;
bit<8> count_valid(in e_t x) { return x.isValid() ? 8w1 : 8w0; }
"""


def build(body: str):
    return compile_source(program("apply {\n" + body + "\n}", decls=DECLS,
                                  header_fields="e_t e;"), "dv.p4")


@pytest.mark.parametrize("body", [
    "hdr.e.v = count_valid(...);",
    "hw_t w = { e = ..., k = 1 }; hdr.e.v = w.k;",
    "bool b = hdr.e == {#}; if (b) { hdr.e.v = 1; }",
    "bool b = {#} == hdr.e; if (b) { hdr.e.v = 1; }",
    "bit<8> q = ...; hdr.e.v = q;",
    "tuple<bit<8>, e_t> tp = {1, ...}; hdr.e.v = tp[0];",
    "hdr.e = {v = 1, ...};",
    "hdr.e = { ... };",
    "hdr.e = ...;",
    "hw_t w = ...; hdr.e.v = w.k;",
    "const bit<8> z = ...; hdr.e.v = z;",
    "hdr.e = (e_t){...};",
    "e_t z = (e_t){#}; hdr.e = z;",
    "hdr.e.v = count_valid((e_t){#});",
    "e_t[2] z = { (e_t){#}, {1} }; hdr.e.v = z[1].v;",
])
def test_accepted_where_p4c_accepts(body):
    build(body)


@pytest.mark.parametrize("body, message", [
    ("hdr.e.v = count_valid({#});", "'{#}' here needs a cast to say its type"),
    ("e_t[2] z = { {#}, {1} }; hdr.e.v = z[1].v;", "'{#}' in a list needs a cast"),
    ("hw_t w = { e = {#}, k = 1 }; hdr.e.v = w.k;", "'{#}' here needs a cast"),
    ("hw_t w = { {#}, 1 }; hdr.e.v = w.k;", "'{#}' here needs a cast"),
    ("if (hdr.e.v == ...) { hdr.e.v = 3; }", "'...' cannot be an operand of '=='"),
    ("hdr.e.v = (bit<8>)...;", "'...' cannot be cast"),
    ("hdr.e = (e_t)...;", "'...' cannot be cast"),
    ("bit<8> z = {#};", "the type here is bit<8>"),
    ('log_msg("v={}", {...});', "cannot tell which type's default value"),
    ("Tag_t t = ...; hdr.e.v = (bit<8>)t;", "has no default value"),
    ("const e_t z = {#}; hdr.e = z;", "'{#}'"),
    ("tuple<bit<8>, bit<8>, bit<8>> t = {1, ..., 2}; hdr.e.v = t[0];", "must be the last"),
])
def test_refused_where_p4c_refuses(body, message):
    with pytest.raises(CompileError) as err:
        build(body)
    assert message in str(err.value)


def _run(body: str, frame: bytes) -> bytes:
    switch = Switch(json.dumps(build("sm.egress_spec = 1;\n" + body).bmv2))
    ((port, out),) = switch.receive(0, frame)
    assert port == 1
    return out


ETH = bytes(6) + bytes(6) + b"\x88\xb5"


def test_an_assigned_invalid_header_is_not_emitted():
    # the skeleton's deparser emits only eth: copy e's validity into eth to see it
    out = _run("e_t z = {#}; if (z.isValid()) { hdr.eth.ether_type = 1; } "
               "else { hdr.eth.ether_type = 2; }", ETH)
    assert out[12:14] == b"\x00\x02"


def test_a_header_given_by_a_list_with_dots_is_valid_and_zero():
    out = _run("e_t z = {...}; hdr.eth.ether_type = z.isValid() ? 16w7 : 16w9; "
               "hdr.eth.dst[7:0] = z.v;", ETH)
    assert out[12:14] == b"\x00\x07" and out[5] == 0


def test_the_rest_of_a_struct_takes_defaults_and_given_fields_stay():
    out = _run("hw_t w = { k = 5, ... }; hdr.eth.dst[7:0] = w.k; "
               "hdr.eth.ether_type = w.e.isValid() ? 16w7 : 16w9;", ETH)
    assert out[5] == 5 and out[12:14] == b"\x00\x09"
