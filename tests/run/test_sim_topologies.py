"""`inaemu run --net sim` on multi-tier topologies: a leaf-spine and a fat-tree(4) with all their
hosts as workers, at 0% and 5% loss, aggregating along trees; two jobs on the fat-tree, rooted
apart; single-switch aggregation; `--trace` producing what `inaemu trace` reads; bad shapes
refused in one line. No root needed; vectors are small (k = 8, 2-4 KiB).
"""

from __future__ import annotations

import json

import pytest

from inaemu.cli import main
from inaemu.experiment.config import ConfigError, RunConfig

SMALL = ["--net", "sim", "--size-mib", "0.004", "--elems", "8", "--pool", "16"]
LEAF_SPINE = ["--topo", "leaf-spine", "--spines", "2", "--leaves", "2", "--hosts-per-leaf", "2"]
FAT_TREE = ["--topo", "fat-tree", "--k", "4"]


def run(out, *args: str) -> tuple[int, list[dict], dict]:
    status = main(["run", *SMALL, "--out", str(out), *args])
    summaries = json.loads((out / "summary.json").read_text())
    report = json.loads((out / "sim_report.json").read_text())
    return status, summaries, report


@pytest.mark.parametrize("shape, topo, workers, tree_switches", [
    (LEAF_SPINE, "leafspine2x2", 4, {"l1", "l2", "sp1"}),
    (FAT_TREE, "fattree4", 16, None)], ids=["leaf-spine", "fat-tree"])
@pytest.mark.parametrize("loss", [0, 5])
def test_multi_tier_sim_run_is_correct(shape, topo, workers, tree_switches, loss, tmp_path,
                                       capsys) -> None:
    status, summaries, report = run(tmp_path / "run", *shape, "--loss", str(loss),
                                    "--seed", str(loss + 3))
    assert status == 0, capsys.readouterr().out
    assert [(s["algo"], s["topo"], s["aggregation"], s["workers"], s["loss"]) for s in summaries] \
        == [("ina", topo, "tree", workers, loss), ("ring", topo, None, workers, loss)]
    for s in summaries:
        assert s["correct"] and s["finished"] == workers, s
        assert 0 <= s["max_abs_err"] <= s["err_bound"]
    if loss:
        assert summaries[0]["retransmissions"] > 0
    tree = report["ina"]["trees"]["1"]
    every_member = [m for node in tree.values() for m in node["members"]]
    assert sum(m.startswith("h") for m in every_member) == workers     # each worker once
    roots = [s for s, node in tree.items() if node["parent"] is None]
    assert len(roots) == 1
    if tree_switches:
        assert set(tree) == tree_switches
    else:                                   # edge -> aggregation -> core: 8 + 4 + 1 switches
        assert len(tree) == 13 and roots[0].startswith("c")


def test_two_jobs_on_a_fat_tree_are_correct_and_rooted_apart(tmp_path, capsys) -> None:
    status, summaries, report = run(tmp_path / "run", *FAT_TREE, "--jobs", "2", "--algo", "ina")
    assert status == 0, capsys.readouterr().out
    assert [(s["job"], s["jobs"], s["workers"], s["correct"]) for s in summaries] == [
        (1, 2, 8, True), (2, 2, 8, True)]
    trees = report["ina"]["trees"]
    roots = {job: [s for s, n in tree.items() if n["parent"] is None][0]
             for job, tree in trees.items()}
    assert roots["1"] != roots["2"]
    workers = [sorted(m for n in tree.values() for m in n["members"] if m.startswith("h"))
               for tree in trees.values()]
    assert not set(workers[0]) & set(workers[1])              # interleaved, disjoint
    assert "h1" in workers[0] and "h2" in workers[1]


def test_single_switch_aggregation_on_a_fat_tree(tmp_path, capsys) -> None:
    status, summaries, report = run(tmp_path / "run", *FAT_TREE, "--workers", "8",
                                    "--aggregation", "single", "--algo", "ina")
    assert status == 0, capsys.readouterr().out
    assert [(s["aggregation"], s["workers"], s["correct"]) for s in summaries] == [
        ("single", 8, True)]
    assert list(report["ina"]["trees"]["1"]) == ["root"]


def test_a_traced_sim_run_is_read_by_inaemu_trace(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    status = main(["run", *SMALL, *LEAF_SPINE, "--size-mib", "0.001", "--trace", "--out",
                   str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "7x slower" in printed
    assert {p.name for p in (out / "trace").iterdir()} >= {"l1.log", "sp1.log", "l1-pcap"}
    assert (out / "trace-ring" / "l1.log").exists()         # the ring's, kept apart
    assert main(["trace", str(out), "--summary"]) == 0
    summary = capsys.readouterr().out
    assert "l1 (log" in summary and "sp1 (log" in summary
    completions = int(next(line.split()[-1] for line in summary.splitlines()
                           if line.startswith("completions")))
    chunks = -(-1048 // 4 // 8) + 1                        # data chunks + the MAX round
    assert completions == 3 * chunks                       # at l1, l2 and the root sp1


def test_an_untraced_run_writes_no_capture(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", *SMALL, *LEAF_SPINE, "--algo", "ina", "--out", str(out)]) == 0
    assert not (out / "trace").exists() and not (out / "net").exists()


@pytest.mark.parametrize("args, message", [
    (["--topo", "fat-tree", "--k", "3"], "even"),
    (["--topo", "fat-tree", "--k", "42"], "k: expected"),
    (["--topo", "fat-tree", "--workers", "9", "--jobs", "2"], "need 18 hosts"),
    (["--topo", "leaf-spine", "--spines", "0"], "spines"),
    (["--topo", "leaf-spine", "--oversubscription", "0"], "oversubscription"),
    (["--topo", "ring"], "invalid choice"),
    (["--aggregation", "flat"], "invalid choice"),
])
def test_bad_shapes_are_one_line_and_exit_2(args, message, tmp_path, capsys) -> None:
    try:
        status = main(["run", *SMALL, *args, "--out", str(tmp_path / "run")])
    except SystemExit as stop:         # argparse's own refusals
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_multi_tier_workers_spread_over_the_hosts_and_jobs_interleave() -> None:
    cfg = RunConfig(topo="fat-tree", fat_k=4, workers=4, jobs=2, net="sim")
    assert cfg.job_hosts(cfg.topology()) == {1: ("h1", "h5", "h9", "h13"),
                                             2: ("h3", "h7", "h11", "h15")}
    star = RunConfig(workers=2, jobs=2, net="sim")
    assert star.job_hosts(star.topology()) == {1: ("h1", "h2"), 2: ("h3", "h4")}
    assert (star.tree, cfg.tree, cfg.with_(aggregation="single").tree) == (False, True, False)
    with pytest.raises(ConfigError, match="topo"):
        RunConfig(topo="torus")


def test_mininet_holds_the_whole_fat_tree_8_and_no_more_workers() -> None:
    """128 workers ran correctly on Mininet (docs/experiments.md); beyond, a clear refusal."""
    whole = RunConfig(topo="fat-tree", fat_k=8, workers=128, net="mininet")
    assert len(whole.job_hosts(whole.topology())[1]) == 128
    with pytest.raises(ConfigError, match="Mininet runs up to 128 workers in all"):
        RunConfig(topo="fat-tree", fat_k=8, workers=65, jobs=2, net="mininet")
