"""`inaemu run` on the command line: bad arguments and a missing privilege are one line, exit 2,
and nothing is started or written."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inaemu.cli import main

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def argparse_invalid_choice(value: str, choices: list[str]) -> str:
    """argparse's own words for a value outside `choices`, from the running Python: 3.12.8 and
    3.13 stopped quoting the choices, so a fixed string passes on one Debian and fails on the
    next."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    action = parser.add_argument("--x", choices=choices)
    try:
        parser.parse_args(["--x", value])
    except argparse.ArgumentError as error:
        assert error.argument_name == "--x" and action.choices == choices
        return error.message
    raise AssertionError(f"argparse took {value!r} among {choices}")


def run_cli(*args: str, user: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "inaemu", "run", *args]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--",
                   *command]
    return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, message", [
    (["--workers", "1"], "inaemu run: error: workers: expected 2..65535, got 1"),
    (["--workers", "65"], "inaemu run: error: workers: single-switch aggregation holds 64 "
                          "workers per job (the switch's worker bitmap), got 65; a tree "
                          "(leaf-spine, fat-tree) takes more"),
    (["--jobs", "65"], "inaemu run: error: jobs: expected 1..64, got 65"),
    (["--topo", "fat-tree", "--k", "42"], "inaemu run: error: k: expected an even fat-tree "
                                          "arity 2..40, got 42"),
    (["--elems", "6"], "inaemu run: error: elems: k must be a multiple of 4 from 4 to 364, got 6"),
    (["--loss", "100"], "inaemu run: error: loss: expected a percentage in [0, 100), got 100"),
    (["--size-mib", "0"], "inaemu run: error: size-mib: expected a positive size, got 0"),
    (["--size-mib", "inf"], "inaemu run: error: size-mib: expected a positive size, got inf"),
    (["--seed", "-1"], "inaemu run: error: seed: expected a non-negative integer, got -1"),
    (["--window", "129"], "inaemu run: error: window: expected 1..pool size (128), got 129"),
    (["--kill-worker", "1@nan"], "inaemu run: error: kill: worker 1 at nan s is not a worker of "
                                 "this run (0..3) at a time >= 0"),
    (["--bw", "-5"], "inaemu run: error: bw: expected Mbit/s in (0, 100000], got -5"),
    (["--timeout", "0"], "inaemu run: error: timeout: expected seconds > 0, got 0"),
    (["--algo", "tree"], "inaemu run: error: argument --algo: " + argparse_invalid_choice(
        "tree", ["ina", "ring", "ps", "hring", "dbtree", "rhd", "torus", "both", "all"])),
    (["--workers", "four"], "inaemu run: error: argument --workers: invalid int value: 'four'"),
    (["--kill-worker", "x"], "inaemu run: error: argument --kill-worker: expected WORKER@SECONDS "
                             "(e.g. 1@0.5), got 'x'"),
    (["--kill-worker", "4@1"], "inaemu run: error: kill: worker 4 at 1 s is not a worker of this "
                               "run (0..3) at a time >= 0"),
])
def test_a_bad_argument_is_one_line_and_exit_2(args, message, tmp_path) -> None:
    out = tmp_path / "out"
    done = run_cli("--net", "sim", "--out", str(out), *args)
    assert done.returncode == 2
    assert done.stderr == message + "\n"
    assert done.stdout == ""
    assert not out.exists()


def test_without_root_mininet_is_refused_in_process(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    out = tmp_path / "out"
    assert main(["run", "--workers", "2", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err == "inaemu run: Mininet needs root; try --net sim\n"
    assert captured.out == ""
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="switching to an unprivileged user needs root and setpriv")
def test_an_unprivileged_user_gets_the_no_root_message(tmp_path) -> None:
    out = tmp_path / "out"
    done = run_cli("--out", str(out), user="65534")
    assert (done.returncode, done.stderr, done.stdout) == (
        2, "inaemu run: Mininet needs root; try --net sim\n", "")
    assert not out.exists()


def _config(*argv: str):
    import argparse

    from inaemu import run as run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    return run_command.config_from(parser.parse_args(list(argv)))


def test_links_are_shaped_by_default_and_bw_0_unshapes_them() -> None:
    assert _config().bw_mbps == 60.0
    assert _config("--bw", "100").bw_mbps == 100.0
    assert _config("--bw", "0").bw_mbps is None
    star = _config("--bw", "0").topology()
    assert all(link.bw_mbps is None for link in star.links)
    assert all(link.bw_mbps == 60.0 for link in _config().topology().links)


def test_the_window_keeps_about_1024_contributions_in_flight_at_a_switch() -> None:
    """Small jobs keep their whole pool in flight (SwitchML keeps every slot in flight: the
    Python switch on Mininet does more per wake-up); all workers of all jobs share about 1024,
    at least 16 each, so a flat job's contributions do not overflow the simulated switch's
    input queue of 1024 frames (docs/experiments.md)."""
    assert _config().window == _config().pool_size == 128             # 4 workers
    assert _config("--workers", "8").window == 128
    assert _config("--workers", "16").window == 64
    assert _config("--workers", "32").window == 32
    assert _config("--workers", "64").window == 16
    assert _config("--workers", "64", "--net", "sim").window == 16
    assert _config("--jobs", "4").window == 64                        # 16 workers in all
    assert _config("--pool", "32").window == 32
    assert _config("--pool", "8").window == 8                         # never beyond the pool
    assert _config("--pool", "32", "--window", "8").window == 8


def test_the_default_pool_is_the_largest_whose_cells_every_job_gets() -> None:
    """128 slots per job while every job's 2 x 128 + 2 cells fit ina.p4's INA_CELLS on one
    switch, then halved: a run of many jobs is never refused for cells it did not ask for."""
    from controller.ina_jobs import pool_cells as cells
    from inaemu.experiment.config import INA_CELLS, default_pool
    from inaemu.train.config import TrainConfig

    assert _config().pool_size == TrainConfig().pool_size == 128
    assert _config("--jobs", "7").pool_size == 128
    assert _config("--jobs", "8").pool_size == 64
    assert _config("--jobs", "16", "--net", "sim").pool_size == 32
    for jobs in range(1, 65):
        pool = default_pool(jobs)
        assert jobs * cells(pool) <= INA_CELLS, jobs
        assert pool == 128 or jobs * cells(2 * pool) > INA_CELLS, jobs
    assert _config("--jobs", "8", "--pool", "100").pool_size == 100   # asked for: kept


def test_the_run_s_cell_count_is_ina_p4_s() -> None:
    """INA_CELLS, which sizes the default pool, is the default ina.p4 defines."""
    import re

    from inaemu.experiment.config import INA_CELLS, INA_P4

    defined = re.search(r"#define INA_CELLS (\d+)", INA_P4.read_text())
    assert defined is not None and int(defined.group(1)) == INA_CELLS


def test_a_packet_of_the_default_k_fills_a_1500_byte_mtu() -> None:
    """`inaemu run` and `inaemu train` send as many values per packet as a 1500-byte IP packet
    holds (the ring's TCP segments are MTU-sized too): IPv4 20 + UDP 8 + header 16 + 4k."""
    from hosts.ina_wire import HEADER_BYTES, MAX_K
    from inaemu.train.config import TrainConfig

    k = _config().elems_k
    assert k == MAX_K == TrainConfig().elems_k
    assert 20 + 8 + HEADER_BYTES + 4 * k == 1500
    assert _config("--elems", "64").elems_k == 64
