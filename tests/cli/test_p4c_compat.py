"""`inaemu compile` takes p4c-bm2-ss's command line as build scripts (the p4lang tutorials'
Makefile) write it, refuses P4_14 clearly, and writes outputs with the umask's mode."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
BASIC = PROJECT / "tests" / "p4" / "basic.p4"


def compile_(*argv: str, cwd: Path, umask: int = 0o022) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inaemu", "compile", *argv], cwd=cwd,
                          capture_output=True, text=True, umask=umask)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_tutorials_command_line_and_umask_mode(tmp_path):
    # the tutorials' rule: $(P4C) --p4v 16 --p4runtime-files build/X.p4.p4info.txtpb -o build/X.json
    done = compile_("--p4v", "16", "--p4runtime-files", "basic.p4.p4info.txtpb",
                    "-o", "basic.json", str(BASIC), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "basic.json") == 0o644
    assert mode(tmp_path / "basic.p4.p4info.txtpb") == 0o644
    assert (tmp_path / "basic.p4.p4info.txtpb").read_text().startswith("# proto-file")
    done = compile_("--std", "p4-16", "--target", "bmv2", "--arch", "v1model", "-o", "g.json",
                    str(BASIC), cwd=tmp_path, umask=0o027)
    assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "g.json") == 0o640
    assert compile_("--std", "16", "-o", "h.json", str(BASIC), cwd=tmp_path).returncode == 0


def test_deprecated_single_p4runtime_file_is_binary_unless_a_format_is_given(tmp_path):
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2
    done = compile_("--p4runtime-file", "b.p4info", "-o", "b.json", str(BASIC), cwd=tmp_path)
    assert done.returncode == 0 and "deprecated" in done.stderr
    binary = p4info_pb2.P4Info.FromString((tmp_path / "b.p4info").read_bytes())
    done = compile_("--p4runtime-file", "t.p4info", "--p4runtime-format", "text", "-o", "t.json",
                    str(BASIC), cwd=tmp_path)
    assert done.returncode == 0
    text = text_format.Parse((tmp_path / "t.p4info").read_text(), p4info_pb2.P4Info())
    assert text == binary and len(binary.tables) == 1


@pytest.mark.parametrize("argv, message", [
    (["--p4v", "14"], "--p4v 14: P4_14 is not supported; inaemu compiles P4_16 only"),
    (["--std", "p4-14"], "--std p4-14: P4_14 is not supported"),
    (["--p4v", "15"], "--p4v 15: not supported (only 16)"),
    (["--std", "p4_16"], "--std p4_16: not supported (only p4-16 or 16)"),
    (["--target", "tofino"], "--target tofino: not supported (only bmv2)"),
    (["--arch", "psa"], "--arch psa: not supported (only v1model)"),
    (["-o", "."], "-o .: is a directory"),
])
def test_refusals_are_one_line_and_write_nothing(tmp_path, argv, message):
    done = compile_(*argv, str(BASIC), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"inaemu compile: error: {message}" or \
        done.stderr.strip().startswith(f"inaemu compile: error: {message}")
    assert len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
