"""`inaemu stf` as a user runs it: exit 0 pass, 1 fail (with the report), 2 unusable input."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

from .helpers import inaemu_stf as inaemu

DATA = Path(__file__).resolve().parent / "data"
BMV2 = PROJECT_ROOT / "tests" / "bmv2"
HIT_MISS_JSON = BMV2 / "hit_miss" / "hit_miss.json"
HIT_MISS_STF = BMV2 / "hit_miss" / "hit_miss.stf"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pass_with_json() -> None:
    done = inaemu("--json", HIT_MISS_JSON, HIT_MISS_STF)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "PASS: 5 packets, 5 expects"


def test_a_json_program_is_recognised_without_the_flag() -> None:
    assert inaemu(HIT_MISS_JSON, HIT_MISS_STF).returncode == 0


def test_failure_prints_a_diff_and_exits_1(tmp_path: Path) -> None:
    stf = HIT_MISS_STF.read_text().replace(
        "expect 1 000000000002 0000000000FF 88B6 01 01 11 B1 01 $",
        "expect 1 000000000002 0000000000FF 88B6 01 01 11 B2 01 $\nexpect 3 00")
    done = inaemu("--json", HIT_MISS_JSON, write(tmp_path, "t.stf", stf))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    differs = next(i for i, line in enumerate(lines) if "differs" in line)
    assert "expected: 0000000000020000000000FF88B6010111B201" in lines[differs + 1]
    assert "actual:   0000000000020000000000FF88B6010111B101" in lines[differs + 2]
    marks = lines[differs + 3]
    assert marks.count("^") == 1 and marks.index("^") == lines[differs + 2].index("B101") + 1
    assert any(line.startswith("missing packet on port 3") for line in lines)
    assert lines[-1] == "FAIL: 5 packets, 6 expects: 1 differing, 1 missing"


def test_unexpected_packet_fails(tmp_path: Path) -> None:
    stf = "\n".join(line for line in HIT_MISS_STF.read_text().splitlines()
                    if not line.startswith("expect") or " 03 03 " not in line)
    done = inaemu("--json", HIT_MISS_JSON, write(tmp_path, "t.stf", stf))
    assert done.returncode == 1
    assert "unexpected packet on port 1 (out of the packet at" in done.stdout


@pytest.mark.parametrize("stf, words", [
    ("packet 0 0G\n", "t.stf:1:11: error: expected hex digits, found 'G'"),
    ("\nadd nosuch k:1 a()\n", "t.stf:2: error: no table 'nosuch'"),
    ("add t1 hdr.k.a:1 b1()\n", "no action of table 'Ingress.t1' 'b1'"),
    ("add t1 hdr.k.a:0x100 a1()\n", "does not fit in 8 bits"),
    ("add t1 hdr.k.a:1 a1()\nadd t1 hdr.k.a:1 a2()\n", "t.stf:2: error:"),
])
def test_bad_test_files_exit_2_with_a_located_message(tmp_path: Path, stf: str,
                                                      words: str) -> None:
    done = inaemu("--json", HIT_MISS_JSON, write(tmp_path, "t.stf", stf))
    assert done.returncode == 2, done.stdout + done.stderr
    assert words in done.stderr
    assert "Traceback" not in done.stderr


def test_writing_a_const_table_is_refused(tmp_path: Path) -> None:
    json_path = BMV2 / "const_entries" / "const_entries.json"
    done = inaemu("--json", json_path,
                  write(tmp_path, "t.stf", "add t_port hdr.k.a:5 fwd(port:1)\n"))
    assert done.returncode == 2
    assert done.stderr.startswith("inaemu stf: ") and "t.stf:1: error:" in done.stderr


@pytest.mark.parametrize("content, words", [
    ("{not json", ":1:2: error: not valid JSON"),
    ("[1, 2]", "a BMv2 JSON program is an object"),
    ('{"pipelines": 7}', "not a usable BMv2 program"),
])
def test_bad_programs_exit_2(tmp_path: Path, content: str, words: str) -> None:
    done = inaemu("--json", write(tmp_path, "p.json", content), HIT_MISS_STF)
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args, words", [
    (["--json", "x.json"], "the following arguments are required"),
    (["--json", "x.json", "a.stf", "b.stf"], "give exactly one more file"),
    (["only.p4"], "give PROGRAM.p4 TEST.stf"),
    (["--json", "missing.json", str(HIT_MISS_STF)], "cannot read the program"),
    ([str(HIT_MISS_JSON), "missing.stf"], "cannot read the test file"),
    (["missing.p4", str(HIT_MISS_STF)], "no such P4 file"),
    (["-D", "1X=2", str(DATA / "forward.p4"), str(DATA / "forward.stf")], "-D 1X=2"),
])
def test_bad_arguments_exit_2(args: list[str], words: str) -> None:
    done = inaemu(*args)
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr


def test_p4_program_is_compiled_first_with_defines() -> None:
    done = inaemu(DATA / "forward.p4", DATA / "forward.stf")
    assert done.returncode == 0, done.stdout + done.stderr
    done = inaemu("-D", "PORT_OFFSET=4", DATA / "forward.p4", DATA / "forward_offset.stf")
    assert done.returncode == 0, done.stdout + done.stderr


def test_include_dirs_reach_the_compiler(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "offset.p4").write_text("#define PORT_OFFSET 4\n")
    source = (DATA / "forward.p4").read_text().replace(
        "#include <v1model.p4>\n", '#include <v1model.p4>\n#include "offset.p4"\n')
    program = write(tmp_path, "fwd.p4", source)
    failing = inaemu(program, DATA / "forward_offset.stf")
    assert failing.returncode == 2 and "offset.p4" in failing.stderr
    done = inaemu("-I", tmp_path / "inc", program, DATA / "forward_offset.stf")
    assert done.returncode == 0, done.stdout + done.stderr


def test_compile_errors_exit_2_with_the_compiler_report(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.p4", (DATA / "forward.p4").read_text().replace(
        "smeta.egress_spec = port + PORT_OFFSET;", "smeta.egress_spec = nosuch;"))
    done = inaemu(broken, DATA / "forward.stf")
    assert done.returncode == 2
    assert "broken.p4:" in done.stderr and "error" in done.stderr
    assert "Traceback" not in done.stderr


def test_verbose_and_log_file(tmp_path: Path) -> None:
    log = tmp_path / "switch.log"
    done = inaemu("-v", "--log-file", log, DATA / "forward.p4", DATA / "forward.stf")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "-> out on port 1: 0000000000020000000000010800DEADBEEF" in done.stdout
    assert "-> no packet out (dropped)" in done.stdout
    trace = log.read_text()
    assert "port_map" in trace and trace.count("\n") > 10


def test_shared_style_fixture_copied_elsewhere_still_runs(tmp_path: Path) -> None:
    """Paths are taken as given: a copy in another folder runs the same."""
    shutil.copy(HIT_MISS_JSON, tmp_path / "p.json")
    shutil.copy(HIT_MISS_STF, tmp_path / "p.stf")
    assert inaemu("--json", tmp_path / "p.json", tmp_path / "p.stf").returncode == 0


@pytest.mark.parametrize("module, args, words", [
    ("p4switch.compiler", [str(DATA / "forward.p4"), str(DATA / "forward.stf")],
     "the P4 front end is not available"),
    ("p4switch.runtime", [str(HIT_MISS_JSON), str(HIT_MISS_STF)],
     "the switch runtime is not available"),
])
def test_missing_parts_are_reported_not_raised(monkeypatch, capsys, module: str,
                                               args: list[str], words: str) -> None:
    import argparse

    from p4switch.stf import cli
    monkeypatch.setitem(sys.modules, module, None)        # makes `import module` fail
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(args)) == 2
    assert words in capsys.readouterr().err
