"""The per-worker panel of `inaemu run`'s plot labels every worker only while they fit: a
16,000-worker run spent ~90 s of its wall time laying out 16,000 tick labels."""

from inaemu.experiment.output import MAX_WORKER_TICKS, plot, worker_ticks


def test_a_tick_per_worker_only_while_they_fit():
    assert worker_ticks({3, 1, 2}) == [1, 2, 3]
    assert worker_ticks(range(MAX_WORKER_TICKS)) == list(range(MAX_WORKER_TICKS))
    assert worker_ticks(range(MAX_WORKER_TICKS + 1)) is None


def test_many_workers_plot(tmp_path):
    summary = {"algo": "ina", "job": 1, "jobs": 1, "time_s": 0.1, "busbw_gbps": 1.0,
               "size_bytes": 4, "topo": "fat-tree", "net": "sim", "loss": 0}
    records = [{"algo": "ina", "job": 1, "worker": w, "time_s": 0.1} for w in range(500)]
    plot([summary], records, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
