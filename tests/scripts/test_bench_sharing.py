"""scripts/bench_sharing.py: bad arguments are refused with the reason, and a small run of
every mode reports every job correct, static slices with nothing on the hosts, the hashed pool
with chunks on them, and the ratios measured in that run."""

from __future__ import annotations


import pytest

from tests.conftest import load_script


@pytest.mark.parametrize("args, why", [
    (["--modes", "static,atp"], "unknown atp"),
    (["--window", "4", "--pool-ratio", "8"], "static slice of at least 1"),
    (["--jobs", "0"], "--jobs must be at least 1"),
])
def test_bad_arguments_say_why(args, why, capsys) -> None:
    with pytest.raises(SystemExit):
        load_script("bench_sharing").parse_args(args)
    assert why in capsys.readouterr().err


def test_a_small_run_of_every_mode(tmp_path, capsys) -> None:
    script = load_script("bench_sharing")
    code = script.main(["--jobs", "2", "--workers", "2", "--leaves", "2", "--hosts-per-leaf",
                        "2", "--window", "8", "--pool-ratio", "2", "--size-kib", "16",
                        "--iterations", "2", "--arrival-ms", "1", "--csv", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = {line.split()[0]: line for line in out.splitlines()[1:4]}
    assert all("correct True" in lines[mode] for mode in ("static", "hashed", "ring"))
    assert "chunks on hosts 0.0 %" in lines["static"]
    assert "chunks on hosts 0.0 %" not in lines["hashed"]
    assert "hashed / static: mean JCT" in out
    assert (tmp_path / "jct.csv").read_text().count("\n") == 1 + 3 * 2
    assert (tmp_path / "occupancy.csv").read_text().count("\nhashed,") > 0
