"""The `inaemu` entry point: every subcommand is reachable, bad commands are one-line errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inaemu import cli, selfcheck

ROOT = Path(__file__).resolve().parents[2]


def inaemu(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inaemu", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_help_lists_every_subcommand() -> None:
    done = inaemu("--help")
    assert done.returncode == 0
    for name in cli.SUBCOMMANDS:
        assert name in done.stdout


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMANDS))
def test_each_subcommand_module_loads_and_has_help(name: str) -> None:
    module = cli._load(name)
    assert callable(module.add_arguments) and callable(module.run)
    done = inaemu(name, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: inaemu " + name in done.stdout


def test_unknown_command_is_a_one_line_error() -> None:
    done = inaemu("frobnicate")
    assert done.returncode == 2
    assert "unknown command 'frobnicate'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args, expected", [
    (("compile",), "inaemu compile: error: the following arguments are required"),
    (("stf", "a.p4", "a.stf", "--bogus"), "inaemu stf: error: unrecognized arguments: --bogus"),
    (("stf", "t.stf", "--json"), "inaemu stf: error: argument --json: expected one argument"),
])
def test_argument_errors_are_one_line_naming_the_command(args, expected) -> None:
    done = inaemu(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(expected), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_no_command_prints_help_and_fails() -> None:
    done = inaemu()
    assert done.returncode == 2 and "usage: inaemu" in done.stdout


def test_selfcheck_passes_and_fails_per_program(tmp_path: Path, capsys) -> None:
    (tmp_path / "p4src").mkdir()
    for path in [*ROOT.glob("p4src/l3_forward.*"), *ROOT.glob("p4src/*.p4inc")]:
        shutil.copy(path, tmp_path / "p4src")
    parser = cli.build_parser(only="selfcheck")
    assert selfcheck.run(parser.parse_args(["selfcheck", "--root", str(tmp_path)])) == 0
    assert "1/1 programs pass" in capsys.readouterr().out
    # an expectation on the wrong port makes the same program fail, and the report says so
    stf = tmp_path / "p4src" / "l3_forward.stf"
    lines = stf.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("expect "))
    words = lines[index].split()
    words[1] = str(int(words[1]) + 100)
    lines[index] = " ".join(words)
    stf.write_text("\n".join(lines) + "\n")
    assert selfcheck.run(parser.parse_args(["selfcheck", "--root", str(tmp_path)])) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "0/1 programs pass" in out
