"""Error reports: file:line:col, the source line and a caret; the CLI exits 1 and writes nothing."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from p4switch.compiler import CompileError, compile_file, compile_source
from p4switch.compiler import cli

from .helpers import program


def test_report_has_location_source_line_and_caret():
    text = program("apply { meta.x = undefined_name; }", meta_fields="bit<8> x;")
    with pytest.raises(CompileError) as info:
        compile_source(text, "prog.p4")
    report = str(info.value).splitlines()
    line_no = next(i for i, l in enumerate(text.splitlines(), 1) if "undefined_name" in l)
    col = text.splitlines()[line_no - 1].index("undefined_name") + 1
    assert report[0] == f"prog.p4:{line_no}:{col}: error: 'undefined_name' is not declared"
    assert report[1] == text.splitlines()[line_no - 1]
    assert report[2] == " " * (col - 1) + "^"
    assert info.value.diagnostics == [("prog.p4", line_no, col, "'undefined_name' is not declared")]


def test_errors_in_included_files_point_into_them(tmp_path):
    (tmp_path / "defs.p4").write_text("header h_t {\n    bit<8> f\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <core.p4>\n#include "defs.p4"\n')
    with pytest.raises(CompileError) as info:
        compile_file(main)
    file, line, col, message = info.value.diagnostics[0]
    assert file.endswith("defs.p4") and line == 2 and col == 13
    assert message == "expected ';' after 'f'"


def test_several_table_applies_in_one_condition_compile():
    # BMv2 applies one table per condition; the front end splits the condition (one if per
    # apply, in short-circuit order: tests/p4/multi_apply_condition checks it on packets)
    text = program("""
        table t1 { key = { hdr.eth.dst : exact; } actions = { NoAction; } }
        table t2 { key = { hdr.eth.src : exact; } actions = { NoAction; } }
        apply { if ((t1.apply().hit ? 8w1 : 8w2) == (t2.apply().hit ? 8w1 : 8w2)) {
            sm.egress_spec = 1; } }""")
    tables = compile_source(text, "p.p4").bmv2["pipelines"][0]["tables"]
    assert {"Ing.t1", "Ing.t2"} <= {t["name"] for t in tables}


def test_deparser_conditional_names_the_construct():
    text = program("apply { }").replace(
        "apply { pkt.emit(hdr.eth); }",
        "apply { if (hdr.eth.ether_type == 1) { pkt.emit(hdr.eth); } }")
    with pytest.raises(CompileError) as info:
        compile_source(text, "p.p4")
    (_, line, col, message) = info.value.diagnostics[0]
    assert "an 'if' in the deparser is not supported" in message
    assert "if (h.isValid()) { pkt.emit(h); }" in message
    assert text.splitlines()[line - 1][col - 1:].startswith("if (hdr.eth.ether_type")


def test_deparser_assignment_is_named():
    # an unused declaration is dropped (as p4c does); one that is used is refused
    text = program("apply { }").replace("apply { pkt.emit(hdr.eth); }",
                                        "apply { bit<8> x = 1; x = 2; pkt.emit(hdr.eth); }")
    with pytest.raises(CompileError) as info:
        compile_source(text, "p.p4")
    assert "only emit() calls are supported in the deparser, not a declaration" in str(info.value)


def test_table_applied_twice_is_rejected():
    text = program("""
        table t { key = { hdr.eth.dst : exact; } actions = { NoAction; } }
        apply { t.apply(); t.apply(); }""")
    with pytest.raises(CompileError) as info:
        compile_source(text, "p.p4")
    assert "applied more than once" in info.value.diagnostics[0][3]


def test_missing_main_is_reported():
    with pytest.raises(CompileError) as info:
        compile_source("#include <core.p4>\n#include <v1model.p4>\n", "p.p4")
    assert "no 'main' package instance" in info.value.diagnostics[0][3]


def _run_cli(argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_success_writes_json_and_p4info(tmp_path, capsys):
    src = tmp_path / "ok.p4"
    src.write_text(program("apply { sm.egress_spec = 1; }"))
    out, info = tmp_path / "ok.json", tmp_path / "ok.p4info.txtpb"
    assert _run_cli([str(src), "-o", str(out), "--p4runtime-files", str(info),
                     "--p4runtime-format", "text"]) == 0
    assert out.read_text().lstrip().startswith("{")
    assert 'arch: "v1model"' in info.read_text()
    assert "compiled" in capsys.readouterr().out


def test_cli_failure_exits_1_with_report_and_no_output(tmp_path, capsys):
    src = tmp_path / "bad.p4"
    src.write_text(program("apply { nope = 1; }"))
    out = tmp_path / "bad.json"
    assert _run_cli([str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "bad.p4:" in err and "error: 'nope' is not declared" in err and "^" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


def test_cli_failure_keeps_an_existing_output_untouched(tmp_path):
    src = tmp_path / "bad.p4"
    src.write_text("garbage")
    out = tmp_path / "bad.json"
    out.write_text("previous")
    assert _run_cli([str(src), "-o", str(out)]) == 1
    assert out.read_text() == "previous"


def test_cli_defines_and_includes(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "port.p4").write_text("const bit<9> PORT = 3;\n")
    src = tmp_path / "d.p4"
    src.write_text('#include "port.p4"\n' + program("""
        apply {
        #ifdef FORWARD
            sm.egress_spec = PORT;
        #else
            mark_to_drop(sm);
        #endif
        }"""))
    out = tmp_path / "d.json"
    assert _run_cli([str(src), "-o", str(out), "-I", str(tmp_path / "inc"), "-D", "FORWARD"]) == 0
    assert '"egress_spec"' in out.read_text() and "mark_to_drop" not in out.read_text()


def test_cli_missing_file_is_an_error_not_a_traceback(tmp_path, capsys):
    assert _run_cli([str(tmp_path / "none.p4")]) == 1
    err = capsys.readouterr().err
    assert "cannot read" in err and "Traceback" not in err


def test_inaemu_compile_subcommand(tmp_path):
    src = tmp_path / "x.p4"
    src.write_text(program("apply { }"))
    proc = subprocess.run([sys.executable, "-m", "inaemu", "compile", str(src), "-o",
                           str(tmp_path / "x.json")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "x.json").exists()


def test_independent_errors_in_several_blocks_are_all_reported():
    text = program("apply { meta.nope = 1; }").replace(
        "control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }",
        "control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {"
        " apply { sm.egress_spec = missing; } }")
    with pytest.raises(CompileError) as info:
        compile_source(text, "p.p4")
    messages = [d[3] for d in info.value.diagnostics]
    assert messages == ["struct meta_t has no field 'nope'", "'missing' is not declared"]
    assert str(info.value).count("error:") == 2


def test_cli_p4info_formats(tmp_path):
    from google.protobuf import json_format, text_format
    from p4.config.v1 import p4info_pb2
    src = tmp_path / "f.p4"
    src.write_text(program("""
        table t { key = { hdr.eth.dst : exact; } actions = { NoAction; } }
        apply { t.apply(); }"""))
    files = [tmp_path / n for n in ("f.p4info.txtpb", "f.p4info.json", "f.p4info.bin")]
    assert _run_cli([str(src), "-o", str(tmp_path / "f.json"),
                     "--p4runtime-files", ",".join(map(str, files))]) == 0
    text = text_format.Parse(files[0].read_text(), p4info_pb2.P4Info())
    js = json_format.Parse(files[1].read_text(), p4info_pb2.P4Info())
    binary = p4info_pb2.P4Info.FromString(files[2].read_bytes())
    assert text == js == binary and text.tables[0].preamble.name == "Ing.t"
    forced = tmp_path / "forced.json"
    assert _run_cli([str(src), "-o", str(tmp_path / "g.json"), "--p4runtime-files", str(forced),
                     "--p4runtime-format", "text"]) == 0
    assert forced.read_text().startswith("# proto-file")


def test_cli_rejects_bad_flags(tmp_path, capsys):
    src = tmp_path / "f.p4"
    src.write_text(program("apply { }"))
    assert _run_cli([str(src), "-I", str(tmp_path / "nope")]) == 2
    assert _run_cli([str(src), "-D", "9bad"]) == 2
    assert "not a macro name" in capsys.readouterr().err
