"""The contract with `python -m hosts.agent`: the config it is given, and its record (or its
absence) turned into the run's worker record."""

from __future__ import annotations

import json

import pytest

from inaemu.experiment.agents import (CALLS, RING_PORT, WorkerSpec, agent_config, max_retx,
                                      read_record, rto_max)


def spec(tmp_path, worker: int = 1) -> WorkerSpec:
    return WorkerSpec(algo="ina", job=1, worker=worker, host=f"h{worker + 1}",
                      config_path=tmp_path / "c.json", record_path=tmp_path / "r.json",
                      log_path=tmp_path / "log")


def test_configs_name_the_agent_keys() -> None:
    ips = ["10.0.0.1", "10.0.0.2"]
    ina = agent_config(algo="ina", job=1, worker=1, workers=2, host_ips=ips, length=100, seed=3,
                       timeout=30, record="r.json", k=32, pool_size=64, window=16, rto=0.1,
                       aggregator="10.0.0.254")
    assert ina == {"algo": "ina", "seed": 3, "length": 100, "calls": CALLS, "output": "r.json",
                   "job": 1, "worker": 1, "rank": 1, "n": 2, "timeout": 30,
                   "aggregator": "10.0.0.254", "k": 32, "pool_size": 64, "window": 16,
                   "rto": 0.1, "rto_max": 0.4, "max_retx": max_retx(0.1, 30)}
    tree_member = agent_config(algo="ina", job=1, worker=3, workers=4, host_ips=ips * 2,
                               length=100, seed=3, timeout=30, record="r.json", k=32,
                               pool_size=64, window=16, rto=0.1, aggregator="10.0.0.253",
                               wire_id=1)
    assert (tree_member["worker"], tree_member["rank"]) == (1, 3)   # wire id, gradient index
    ring = agent_config(algo="ring", job=1, worker=0, workers=2, host_ips=ips, length=100,
                        seed=3, timeout=30, record="r.json", k=32, pool_size=64, window=16,
                        rto=0.1, aggregator=None)
    assert ring["peers"] == [f"10.0.0.1:{RING_PORT}", f"10.0.0.2:{RING_PORT}"]
    assert ring["idle_timeout"] == 15 and "aggregator" not in ring
    assert ring["worker"] == ring["rank"] == 0


def test_retransmissions_span_a_third_of_the_timeout() -> None:
    assert rto_max(0.1) == pytest.approx(0.4)
    # 0.1 + 0.2 + 0.4 * 24 = 9.9 <= 10 < 9.9 + 0.4
    assert max_retx(0.1, 30) == 26
    assert max_retx(1.0, 1) == 3             # never fewer than three tries


def test_an_agent_record_becomes_a_worker_record(tmp_path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({
        "ok": True, "algo": "ina", "job": 1, "worker": 1, "n": 2, "calls": 2,
        "seconds": [0.9, 0.25], "bytes_sent": 2000, "bytes_received": 4000,
        "packets_sent": 20, "packets_received": 40, "retransmissions": 3,
        "max_abs_error": 1e-7, "mean_abs_error": 1e-8, "error_bound": 2e-7, "correct": True}))
    record = read_record(spec(tmp_path), exit_status=0, killed_by_us=None)
    assert record == {"algo": "ina", "job": 1, "worker": 1, "host": "h2", "time_s": 0.25,
                      "bytes_sent": 1000, "bytes_received": 2000, "packets_sent": 10,
                      "packets_received": 20, "retransmissions": 3, "max_abs_err": 1e-7,
                      "mean_abs_err": 1e-8, "err_bound": 2e-7, "correct": True, "error": None}


def test_a_failed_agent_reports_its_error(tmp_path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"ok": False, "error": "PeerUnreachable: x"}))
    record = read_record(spec(tmp_path), exit_status=1, killed_by_us=None)
    assert (record["error"], record["correct"], record["time_s"]) == ("PeerUnreachable: x",
                                                                      False, None)


def test_no_record_takes_the_last_line_of_the_output(tmp_path) -> None:
    (tmp_path / "log").write_text("starting\nagent: error: ConfigError: config.k: bad\n\n")
    record = read_record(spec(tmp_path), exit_status=1, killed_by_us=None)
    assert record["error"] == "exited with status 1: agent: error: ConfigError: config.k: bad"
    killed = read_record(spec(tmp_path), exit_status=-9, killed_by_us="killed on purpose")
    assert killed["error"] == "killed on purpose" and not killed["correct"]


def test_a_garbled_record_is_an_error(tmp_path) -> None:
    (tmp_path / "r.json").write_text("[1, 2")
    record = read_record(spec(tmp_path), exit_status=0, killed_by_us=None)
    assert record["error"].startswith("unreadable record r.json:") and not record["correct"]


def test_the_agent_rank_seeds_the_gradient_and_defaults_to_the_worker_id() -> None:
    from hosts.agent import gradient, parse_config
    from hosts.api import ConfigError
    base = {"algo": "ina", "job": 2, "worker": 1, "n": 4, "aggregator": "10.0.0.254"}
    assert parse_config(base)[0]["rank"] == 1
    agent, config = parse_config({**base, "rank": 3})
    assert (agent["rank"], config.worker) == (3, 1)
    for bad in (4, -1, "1", True):
        with pytest.raises(ConfigError, match="config.rank"):
            parse_config({**base, "rank": bad})
    # per job: two jobs of the same seed sum different inputs; without a job, the old seeding
    assert not (gradient(1, 0, 8, job=1) == gradient(1, 0, 8, job=2)).all()
    assert (gradient(1, 0, 8) == gradient(1, 0, 8, 1.0, None)).all()
