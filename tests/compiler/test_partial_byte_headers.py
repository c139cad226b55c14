"""Header types that are not whole bytes are refused, as p4c's BMv2 back end refuses them.

BMv2 keeps headers as byte strings, so p4c-bm2-ss rejects (a target error) every header type
the program instantiates whose fields, a varbit counted at its maximum width, do not add up to
a multiple of 8 bits, wherever the instance lives: in the headers or the metadata struct, in a
stack, as a local variable, extracted or not. A type that is only declared is fine. inaemu
used to accept them and produce JSON its own runtime refused (fuzzer finding 5, `frontend`).
Where the reference p4c is installed, each case is shown to get the same verdict from it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program

P4C = Path("/opt/p4ref/bin/p4c-bm2-ss")
NIBBLE = "header nib_t { bit<4> a; }"

# name -> (source, width in the refusal, or None when accepted)
CASES = {
    "declared_only": (program("apply { }", decls=NIBBLE), None),
    "in_the_headers_struct": (program("apply { }", decls=NIBBLE, header_fields="nib_t n;"), 4),
    "in_the_metadata_struct": (program("apply { }", decls=NIBBLE, meta_fields="nib_t n;"), 4),
    "in_a_stack": (program("apply { }", decls=NIBBLE, header_fields="nib_t[2] n;"), 4),
    "a_local_variable": (program("apply { nib_t x; x.setValid(); x.a = 1; "
                                 "sm.egress_spec = (bit<9>)x.a; }", decls=NIBBLE), 4),
    "a_varbit_at_its_maximum": (
        program("apply { }", decls="header v_t { bit<4> a; varbit<16> b; }",
                header_fields="v_t v;"), 20),
    "a_varbit_making_whole_bytes": (
        program("apply { }", decls="header v_t { bit<4> a; varbit<12> b; }",
                header_fields="v_t v;"), None),
    "whole_bytes_from_sub_byte_fields": (
        program("apply { }", decls="header w_t { bit<4> a; bit<3> b; bit<1> c; }",
                header_fields="w_t w;"), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inaemu_verdict(name):
    source, width = CASES[name]
    if width is None:
        compile_source(source, "p.p4")
        return
    with pytest.raises(CompileError) as info:
        compile_source(source, "p.p4")
    file, line, col, message = info.value.diagnostics[0]
    assert (file, line, col) == ("p.p4", 4, 8)       # the header's name in its declaration
    assert f"its fields total {width} bits" in message and "multiple of 8 bits" in message


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_real_p4c_gives_the_same_verdict(name, tmp_path):
    source, width = CASES[name]
    path = tmp_path / "p.p4"
    path.write_text(source)
    done = subprocess.run([str(P4C), "-o", str(tmp_path / "p.json"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == (width is None), done.stderr
    if width is not None:
        assert f"fields totaling {width} bits" in done.stderr
