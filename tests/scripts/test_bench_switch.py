"""scripts/bench_switch.py's before/after options: `--tree-baseline` switch processes import
all of p4switch from the other tree (not this one), and `--fixed-rate` takes PROGRAM=KPPS."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

SCRIPTS = PROJECT_ROOT / "scripts"


def test_a_tree_baseline_process_imports_p4switch_from_that_tree(tmp_path: Path) -> None:
    package = tmp_path / "p4switch" / "ports"
    package.mkdir(parents=True)
    (tmp_path / "p4switch" / "__init__.py").write_text("TREE = 'other'\n")
    (package / "__init__.py").write_text("")
    (package / "rawsock.py").write_text("WHERE = 'other tree'\n")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(SCRIPTS)!r})
        import bench_switch                     # imports this tree's p4switch
        import p4switch
        assert not hasattr(p4switch, "TREE")
        bench_switch.import_p4switch_from({str(tmp_path)!r})
        from p4switch.ports import rawsock
        import p4switch
        print(p4switch.TREE, rawsock.WHERE)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert out.strip() == "other other tree"


def test_fixed_rates_must_be_program_equals_kpps() -> None:
    sys.path.insert(0, str(SCRIPTS))
    import bench_switch
    with pytest.raises(SystemExit):
        bench_switch.main(["--fixed-rate", "exact150", "--paths", "inproc",
                           "--programs", "exact"])
