"""Shared helpers for the compiler tests: run single stages on inline source."""

from __future__ import annotations

import textwrap

from p4switch.compiler.checker import check
from p4switch.compiler.errors import Reporter, SourceLines
from p4switch.compiler.lexer import tokenize
from p4switch.compiler.parser import parse
from p4switch.compiler.preprocess import Preprocessor

V1MODEL_PRELUDE = "#include <core.p4>\n#include <v1model.p4>\n"

# A complete v1model program with holes for the parts a test cares about.
SKELETON = """#include <core.p4>
#include <v1model.p4>
header ethernet_t {{ bit<48> dst; bit<48> src; bit<16> ether_type; }}
{decls}
struct headers_t {{ ethernet_t eth; {header_fields} }}
struct meta_t {{ {meta_fields} }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{ingress}
}}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Dep(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.eth); }} }}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def program(ingress: str, decls: str = "", meta_fields: str = "", header_fields: str = "") -> str:
    return SKELETON.format(ingress=textwrap.dedent(ingress), decls=decls,
                           meta_fields=meta_fields, header_fields=header_fields)


def preprocess(text: str, defines=None, include_dirs=()):
    reporter = Reporter(SourceLines())
    return Preprocessor(reporter, include_dirs, defines).run_text(text, "test.p4")


def parse_text(text: str):
    reporter = Reporter(SourceLines())
    source = Preprocessor(reporter).run_text(text, "test.p4")
    return parse(tokenize(source, reporter), reporter)


def check_text(text: str):
    reporter = Reporter(SourceLines())
    source = Preprocessor(reporter).run_text(text, "test.p4")
    prog = parse(tokenize(source, reporter), reporter)
    return prog, check(prog, reporter)
