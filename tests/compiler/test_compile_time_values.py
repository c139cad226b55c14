"""Values the front end computes while compiling: string constants and their concatenation
(P4_16 1.2.5), the size methods (`minSizeInBits` and its siblings, 8.23), a cast to a value's
own type (1.2.4). What packets get from the sizes is tests/p4/size_methods.stf's job."""

from __future__ import annotations

import json

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program

DECLS = """
header e_t { bit<8> v; varbit<16> rest; }
const string PREFIX = "ing: ";
extern thing { thing(); }
"""


def build(body: str, decls: str = DECLS):
    return compile_source(program("apply {\n" + body + "\n}", decls=decls,
                                  header_fields="e_t e;"), "ct.p4")


def _log_texts(config: dict) -> list[str]:
    found = []
    for action in config["bmv2"]["actions"]:
        for prim in action["primitives"]:
            if prim["op"] == "log_msg":
                found.append(prim["parameters"][0]["value"])
    return found


def test_string_constants_concatenate_into_one_log_format():
    out = build('log_msg(PREFIX ++ "v=" ++ "{}", {hdr.e.v});')
    assert _log_texts({"bmv2": out.bmv2}) == ["ing: v={}"]


def test_a_concatenation_of_a_run_time_value_is_refused():
    with pytest.raises(CompileError, match="two string literals"):
        build('log_msg(PREFIX ++ hdr.e.v);')


@pytest.mark.parametrize("expr, value", [
    ("hdr.e.minSizeInBits()", 8), ("hdr.e.maxSizeInBits()", 24),
    ("hdr.e.minSizeInBytes()", 1), ("hdr.e.maxSizeInBytes()", 3),
    ("e_t.maxSizeInBits()", 24), ("hdr.eth.minSizeInBytes()", 14),
])
def test_size_methods_are_compile_time_ints(expr, value):
    out = build(f"const int k = {expr}; static_assert(k == {value});")
    assert out.bmv2


def test_a_size_of_something_without_one_is_refused():
    with pytest.raises(CompileError, match="has no size in bits"):
        build("bit<8> x = (bit<8>)PREFIX.minSizeInBits();")


def test_a_cast_to_its_own_type_leaves_the_value_alone():
    plain = build("hdr.eth.ether_type = hdr.eth.ether_type + 1;").bmv2
    cast = build("hdr.eth.ether_type = (bit<16>)hdr.eth.ether_type + 1; "
                 "hdr.eth = (ethernet_t)hdr.eth;").bmv2
    prims = lambda cfg: [p for a in cfg["actions"] for p in a["primitives"]]  # noqa: E731
    assert json.dumps(prims(plain)[0]["parameters"]) == json.dumps(prims(cast)[0]["parameters"])
