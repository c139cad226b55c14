"""scripts/p4c_acceptance.py: which programs it takes from a p4c checkout, and that it reports
a program inaemu accepts and real p4c refuses (exit status 1). A fake checkout of four files
stands in for p4c's; real p4c (/opt/p4ref) is the oracle the script needs."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from .helpers import program

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("p4c_acceptance",
                                              ROOT / "scripts" / "p4c_acceptance.py")
acceptance = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("p4c_acceptance", acceptance)   # dataclasses look their module up there
SPEC.loader.exec_module(acceptance)

GOOD = program("apply { sm.egress_spec = 2; }")
BAD = program("apply { sm.egress_spec = nosuch; }")
# p4c refuses `exit` in a function, as inaemu does; the test below stands in a lenient compiler
# for inaemu that takes it, to show the disagreement the script exists to report
EXIT_IN_FUNCTION = program("apply { f(); }", decls="void f() { exit; }")

@pytest.fixture
def checkout(tmp_path) -> Path:
    samples = tmp_path / "p4c" / "testdata" / "p4_16_samples"
    errors = tmp_path / "p4c" / "testdata" / "p4_16_errors"
    samples.mkdir(parents=True)
    errors.mkdir(parents=True)
    (samples / "good.p4").write_text(GOOD)
    (samples / "not-v1model.p4").write_text("#include <core.p4>\n")
    (errors / "bad.p4").write_text(BAD)
    (errors / "exit-in-function.p4").write_text(EXIT_IN_FUNCTION)
    return tmp_path / "p4c"


def test_the_v1model_programs_of_both_folders_are_taken(checkout) -> None:
    names = [p.name for p in acceptance.select_programs(acceptance.testdata(checkout, checkout))]
    assert names == ["good.p4", "bad.p4", "exit-in-function.p4"]


def test_the_report_names_the_disagreements() -> None:
    verdicts = [acceptance.Verdict("s/a.p4", "accept", "accept", "", "differs"),
                acceptance.Verdict("s/e.p4", "accept", "accept", "", "same"),
                acceptance.Verdict("e/b.p4", "refuse", "accept", "p4c: b.p4(3): error: no"),
                acceptance.Verdict("s/c.p4", "accept", "refuse", "c.p4:1:1: error: unsupported"),
                acceptance.Verdict("e/d.p4", "refuse", "internal", "d.p4: internal")]
    out = io.StringIO()
    assert acceptance.report(verdicts, out) == 1
    text = out.getvalue()
    assert "accepted by inaemu, refused by p4c:\n  e/b.p4: p4c: b.p4(3): error: no" in text
    assert "accepted by p4c, refused by inaemu:\n  s/c.p4 (refuse): c.p4:1:1" in text
    assert "with another P4Info than p4c's:\n  s/a.p4\n" in text
    assert text.rstrip().endswith("5 v1model programs: the compilers agree on 3 (p4c accepts "
                                  "3); inaemu accepts 1 that p4c refuses and refuses 1 that p4c "
                                  "accepts; P4Info byte for byte p4c's for 1 of the 2 both "
                                  "accept")


@pytest.mark.skipif(not acceptance.P4C_BM2_SS.exists(), reason="reference p4c not installed")
def test_real_p4c_judges_a_fake_checkout(checkout, tmp_path, capsys, monkeypatch) -> None:
    import p4switch.compiler as compiler
    strict = compiler.compile_file

    def lenient(path, *args, **kwargs):
        if Path(path).name == "exit-in-function.p4":
            return None
        return strict(path, *args, **kwargs)

    monkeypatch.setattr(compiler, "compile_file", lenient)   # -j 1 judges in this process
    assert acceptance.main([str(checkout), "-j", "1", "--json", str(tmp_path / "v.json")]) == 1
    verdicts = {v["program"]: (v["p4c"], v["inaemu"])
                for v in json.loads((tmp_path / "v.json").read_text())}
    assert verdicts == {"p4_16_samples/good.p4": ("accept", "accept"),
                        "p4_16_errors/bad.p4": ("refuse", "refuse"),
                        "p4_16_errors/exit-in-function.p4": ("refuse", "accept")}
    out = capsys.readouterr().out
    assert "p4_16_errors/exit-in-function.p4: p4c:" in out and "'exit'" in out


@pytest.mark.skipif(not acceptance.P4C_BM2_SS.exists(), reason="reference p4c not installed")
def test_inaemu_itself_refuses_exit_in_a_function(checkout) -> None:
    verdict = acceptance.judge(checkout / "testdata" / "p4_16_errors" / "exit-in-function.p4")
    assert verdict.inaemu == "refuse" and "exit" in verdict.message


@pytest.mark.skipif(not acceptance.P4C_BM2_SS.exists(), reason="reference p4c not installed")
def test_a_tree_is_searched_at_any_depth_and_named_by_path(tmp_path) -> None:
    """`--tree DIR`: every program under DIR that includes v1model.p4, at any depth, named by
    its path there (a file of declarations only, not a program, is judged too: both refuse)."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "good.p4").write_text(GOOD)
    (tmp_path / "a" / "core_only.p4").write_text("#include <core.p4>\n")
    found = [str(p.relative_to(tmp_path)) for p in acceptance.select_tree(tmp_path)]
    assert found == ["a/b/good.p4"]
    verdict = acceptance.judge((tmp_path / "a" / "b" / "good.p4", "a/b/good.p4"))
    assert verdict.program == "a/b/good.p4" and verdict.inaemu == "accept"
    assert verdict.p4info == "same"   # both accept it: their P4Info compared, byte for byte


def test_a_git_directory_is_read_with_its_symbolic_links(tmp_path) -> None:
    """`--tree` on a fetched git directory: its files, a symbolic link (a shared include
    folder, as p4-guide has) kept as a link."""
    import subprocess
    repo = tmp_path / "repo"
    (repo / "common").mkdir(parents=True)
    (repo / "common" / "defs.p4").write_text("#include <v1model.p4>\n")
    (repo / "prog").mkdir()
    (repo / "prog" / "lib").symlink_to("../common")
    (repo / "prog" / "good.p4").write_text(GOOD)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    out = tmp_path / "out"
    out.mkdir()
    root = acceptance.extract_tree(repo / ".git", out)
    assert (root / "prog" / "lib").is_symlink()
    assert (root / "prog" / "lib" / "defs.p4").read_text() == "#include <v1model.p4>\n"
    assert (root / "prog" / "good.p4").read_text() == GOOD
