"""scripts/bench_sim_cores.py: both cores' records agree on a small command and the table has
each core's frames per CPU second and per wall second (the wall is what the gradients drawn on
another core shorten; hosts/draw_ahead.py)."""

from __future__ import annotations


from tests.conftest import load_script


def test_a_small_command_gives_the_same_records_on_both_cores(capsys):
    bench = load_script("bench_sim_cores")
    code = bench.main(["--size-mib", "0.02", "--workers", "4", "--k", "4", "--repeat", "1",
                       "--only", "ina"])
    out = capsys.readouterr().out
    assert code == 0, out
    row = next(line for line in out.splitlines() if line.startswith("ina "))
    cells = row.split()
    assert cells[-1] == "yes"
    assert len(cells) == 9          # name, frames, 2 x (python, native, ratio), same
    assert int(cells[1].replace(",", "")) > 0


def test_run_times_cpu_and_wall_inside_simulate():
    bench = load_script("bench_sim_cores")
    records, cpu, wall, frames = bench.run(["--topo", "star", "--workers", "3",
                                            "--size-mib", "0.01", "--algo", "ina"])
    assert records and all(record["correct"] for record in records)
    assert cpu > 0 and wall > 0 and frames > 0


def test_a_baseline_tree_is_measured_in_a_child_as_in_this_process():
    """`run_at` runs the simulator of a tree (here this one) in a child process: the same
    frames and records as `run` in this process, so a ratio to an old commit's run compares
    the same measurement."""
    from tests.conftest import PROJECT_ROOT
    bench = load_script("bench_sim_cores")
    argv = ["--topo", "star", "--workers", "3", "--size-mib", "0.01", "--algo", "ina"]
    here, _cpu, _wall, frames_here = bench.run(argv)
    there, cpu, wall, frames_there = bench.run_at(PROJECT_ROOT, argv)
    assert frames_there == frames_here > 0 and cpu > 0 and wall > 0
    keys = ("time_s", "bytes_sent", "packets_sent", "correct")
    assert [{k: r[k] for k in keys} for r in there] == [{k: r[k] for k in keys} for r in here]


def test_a_baseline_commit_is_written_out_and_an_unknown_one_refused(tmp_path):
    import subprocess
    import pytest
    bench = load_script("bench_sim_cores")
    repo = tmp_path / "repo"
    (repo / "inaemu").mkdir(parents=True)
    (repo / "inaemu" / "marker.py").write_text("OLD = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "old"], check=True)
    (repo / "inaemu" / "marker.py").write_text("OLD = 2\n")
    subprocess.run(git + ["commit", "-qam", "new"], check=True)
    into = tmp_path / "tree"
    into.mkdir()
    short = bench.checkout("HEAD~1", into, repo)
    assert (into / "inaemu" / "marker.py").read_text() == "OLD = 1\n"
    assert short and not (into / ".git").exists()
    with pytest.raises(SystemExit, match="'nosuch' is not a commit"):
        bench.checkout("nosuch", tmp_path, repo)
