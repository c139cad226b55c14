"""A run says in one line when its inaemu switches run Python packet code instead of the default
C (a fresh machine without a compiler used to fall back silently), and says nothing otherwise."""

from __future__ import annotations

import pytest

from inaemu.cli import main
from inaemu.experiment.config import RunConfig
from inaemu.experiment.runner import packet_code_note

SMALL = ["--net", "sim", "--size-mib", "0.004", "--elems", "8", "--pool", "16", "--workers", "2",
         "--algo", "ina"]


def test_nothing_is_said_for_the_default_c_code_or_for_real_bmv2(monkeypatch) -> None:
    monkeypatch.delenv("INAEMU_NATIVE", raising=False)
    assert packet_code_note(RunConfig()) is None       # this machine has gcc and python3-dev
    assert packet_code_note(RunConfig(target="bmv2")) is None


def test_turned_off_traced_or_no_compiler_is_one_line(monkeypatch) -> None:
    monkeypatch.setenv("INAEMU_NATIVE", "0")
    assert packet_code_note(RunConfig()) == "run: packet code: Python (INAEMU_NATIVE=0)"
    monkeypatch.delenv("INAEMU_NATIVE")
    assert packet_code_note(RunConfig(trace=True)) == (
        "run: packet code: Python (a traced run's switches run the traced Python code)")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CC", raising=False)
    assert packet_code_note(RunConfig()) == (
        "run: packet code: Python, not C (no C compiler (cc, gcc or clang) on PATH; "
        "./bootstrap.sh setup installs gcc and python3-dev)")


@pytest.mark.parametrize("native, said", [("1", False), ("0", True)])
def test_the_run_prints_it(native, said, monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("INAEMU_NATIVE", native)
    assert main(["run", *SMALL, "--out", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr()
    lines = [line for line in (printed.out + printed.err).splitlines() if "packet code" in line]
    assert lines == (["run: packet code: Python (INAEMU_NATIVE=0)"] if said else [])
