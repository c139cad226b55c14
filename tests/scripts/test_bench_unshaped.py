"""scripts/bench_unshaped.py: a `--baseline` tree's `inaemu` is the one that runs (regression:
`python -m inaemu` started in the project's directory imported the working tree's package
ahead of PYTHONPATH, so "baseline" rounds ran today's code), and a run's numbers are read from
its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, load_script

FAKE_MAIN = '''
import json, sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
row = dict(correct=True, retransmissions=3)
(out / "summary.json").write_text(json.dumps([dict(row, algo="ina", time_s=2.0),
                                              dict(row, algo="ring", time_s=1.0)]))
(out / "config.json").write_text(json.dumps({"window": 7, "tree": __file__}))
'''


def test_the_baseline_tree_is_what_runs(tmp_path, monkeypatch) -> None:
    script = load_script("bench_unshaped")
    monkeypatch.setattr(script, "LOCK", tmp_path / "no-such-dir" / "lock")   # no flock
    tree = tmp_path / "tree"
    (tree / "inaemu").mkdir(parents=True)
    (tree / "inaemu" / "__init__.py").write_text("")
    (tree / "inaemu" / "__main__.py").write_text(FAKE_MAIN)
    monkeypatch.chdir(PROJECT_ROOT)     # where the bug showed: the project's own inaemu first
    args = script.parse_args(["--workers", "4"])
    run = script.run_once(tree, 4, args, tmp_path / "out")
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert Path(config["tree"]).resolve() == (tree / "inaemu" / "__main__.py").resolve()
    assert run["ring_over_ina"] == pytest.approx(0.5)
    assert (run["ina_s"], run["ring_s"], run["ina_retx"], run["window"]) == (2.0, 1.0, 3, 7)


def test_bad_worker_counts_and_trees_are_refused(tmp_path) -> None:
    script = load_script("bench_unshaped")
    with pytest.raises(SystemExit):
        script.parse_args(["--workers", "4,x"])
    with pytest.raises(SystemExit):
        script.parse_args(["--baseline", str(tmp_path)])       # no inaemu/cli.py there
