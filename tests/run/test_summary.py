"""Records -> summaries -> files: exact fields, nccl-tests' algbw/busbw arithmetic, CSV and plot."""

from __future__ import annotations

import csv
import json

import pytest

from inaemu.experiment.output import write_results
from inaemu.experiment.summary import (SUMMARY_FIELDS, RunSetting, algbw_gbps, all_correct,
                                       busbw_gbps, summarize, table)

SETTING = RunSetting(net="sim", topo="star4", jobs=1, size_bytes=1_000_000, elems_k=32,
                     loss=1.0, bw_mbps=100.0, seed=3)


def record(algo: str, worker: int, time_s, **extra) -> dict:
    base = {"algo": algo, "job": 1, "worker": worker, "host": f"h{worker + 1}", "time_s": time_s,
            "bytes_sent": 1000 * (worker + 1), "bytes_received": 2000, "packets_sent": 10,
            "packets_received": 20, "retransmissions": worker, "max_abs_err": 1e-7 * worker,
            "mean_abs_err": 1e-8 * worker, "err_bound": 5e-7, "correct": True, "error": None}
    base.update(extra)
    return base


def test_bandwidths_follow_nccl_tests() -> None:
    assert algbw_gbps(1_000_000, 0.004) == pytest.approx(2.0)        # 8e6 bits / 4 ms
    assert busbw_gbps(2.0, 4) == pytest.approx(3.0)                   # · 2·3/4
    assert busbw_gbps(2.0, 2) == pytest.approx(2.0)
    assert busbw_gbps(2.0, 8) == pytest.approx(3.5)
    assert algbw_gbps(1_000_000, None) is None and busbw_gbps(None, 4) is None


def test_summary_per_algorithm_has_the_promised_fields() -> None:
    records = [record("ina", w, 0.002 + w * 0.001) for w in range(4)]
    records += [record("ring", w, 0.008) for w in range(4)]
    ina, ring = summarize(records, SETTING)
    assert tuple(ina) == SUMMARY_FIELDS
    assert ina["algo"] == "ina" and ring["algo"] == "ring"
    assert ina["time_s"] == pytest.approx(0.005)                     # the slowest worker
    assert ina["algbw_gbps"] == pytest.approx(1.6)                   # 8e6 bits / 5 ms
    assert ina["busbw_gbps"] == pytest.approx(2.4)
    assert ring["algbw_gbps"] == pytest.approx(1.0)
    assert ina["bytes_sent_per_host"] == pytest.approx(2500)          # mean of 1000..4000
    assert ina["retransmissions"] == 0 + 1 + 2 + 3
    assert ina["max_abs_err"] == pytest.approx(3e-7)
    assert ina["mean_abs_err"] == pytest.approx(1.5e-8)
    assert (ina["workers"], ina["jobs"], ina["net"], ina["topo"], ina["loss"]) == (
        4, 1, "sim", "star4", 1.0)
    assert ina["correct"] and ina["finished"] == 4 and ina["error"] is None
    assert all_correct([ina, ring])


def test_a_failed_or_missing_worker_makes_the_job_incorrect() -> None:
    records = [record("ina", 0, 0.01), record("ina", 1, None, correct=False,
                                              error="job 1: no result for chunk 3")]
    (ina,) = summarize(records, SETTING, expected={("ina", 1): 3})
    assert not ina["correct"]
    assert ina["time_s"] is None and ina["algbw_gbps"] is None and ina["busbw_gbps"] is None
    assert ina["finished"] == 1 and ina["workers"] == 3
    assert ina["error"] == ("h2: job 1: no result for chunk 3; 1 of 3 workers left no record")
    (ring,) = summarize([], SETTING, expected={("ring", 1): 2})
    assert not ring["correct"] and ring["finished"] == 0
    assert not all_correct([ina]) and not all_correct([])


def test_an_error_above_the_bound_is_not_correct() -> None:
    records = [record("ina", w, 0.01) for w in range(2)]
    records[1]["correct"] = False
    (ina,) = summarize(records, SETTING)
    assert not ina["correct"] and ina["finished"] == 2
    assert ina["error"] == "h2: result outside the error bound (max error 1e-07, bound 5e-07)"


def test_files_are_written(tmp_path) -> None:
    records = [record("ina", w, 0.004) for w in range(4)] + [record("ring", w, 0.01)
                                                             for w in range(4)]
    summaries = summarize(records, SETTING)
    files = write_results(tmp_path, summaries, records)
    assert [f.name for f in files] == ["summary.json", "summary.csv", "workers.csv",
                                       "workers.json", "allreduce.png"]
    assert json.loads((tmp_path / "summary.json").read_text()) == summaries
    with (tmp_path / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["algo"] for r in rows] == ["ina", "ring"]
    assert float(rows[0]["busbw_gbps"]) == pytest.approx(3.0)
    assert rows[0]["error"] == "" and rows[0]["correct"] == "True"
    with (tmp_path / "workers.csv").open() as f:
        workers = list(csv.DictReader(f))
    assert len(workers) == 8 and workers[5]["host"] == "h2" and workers[5]["bytes_sent"] == "2000"
    assert (tmp_path / "allreduce.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_has_one_row_per_summary_and_names_errors() -> None:
    records = [record("ina", 0, 0.004), record("ina", 1, None, error="boom", correct=False)]
    text = table(summarize(records, SETTING))
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["algo", "job", "n"]
    assert lines[1].split()[0] == "ina" and lines[1].split()[-1] == "NO"
    assert lines[2] == "ina job 1: h2: boom"


def test_a_tcp_timeout_under_loss_gets_a_hint_and_other_errors_do_not() -> None:
    timeout = "AllreduceTimeout: rank 0: no progress for 37.5 s (left neighbour rank 7 silent)"
    records = [record("ring", 0, None, error=timeout, correct=False)]
    lines = table(summarize(records, SETTING)).splitlines()
    assert lines[2] == f"ring job 1: h1: {timeout}"
    assert "at 1 % loss per link" in lines[3] and "--timeout" in lines[3]
    lossless = RunSetting(**{**vars(SETTING), "loss": 0.0})
    assert len(table(summarize(records, lossless)).splitlines()) == 3
    ina = [record("ina", 0, None, error=timeout, correct=False)]
    assert len(table(summarize(ina, SETTING)).splitlines()) == 3
