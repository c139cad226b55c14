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
