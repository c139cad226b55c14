"""The native simulator core against the pure-Python one, event for event (inaemu/sim/cores.py,
docs/sim.md "Cores"): the same scenario with the same seed gives the same per-link trace (every
send with its frame's CRC, loss, queue drop, kill, at its virtual time) and the same records,
over seeds, loss rates, topologies, aggregation shapes and algorithms, and a switch that
drops at its input queue. tests/sim/test_native_net.py drives the links and switch ports
directly (full queues, refusing sockets, on_left, crashes, back-pressure)."""

import pytest

from inaemu.sim import InaOptions, SimError, SimJob, simulate
from inaemu.sim.switch_node import SwitchCost
from inaemu.sim.native import native_loop_class, why_not
from topologies.builders import fat_tree, leaf_spine, star

pytestmark = pytest.mark.skipif(native_loop_class() is None,
                                reason=f"no native core here: {why_not()}")


def _both(topology, jobs, **kwargs):
    runs = []
    for core in ("python", "native"):
        trace = []
        result = simulate(topology, jobs, trace=trace, core=core, **kwargs)
        runs.append((trace, [r.as_dict() for r in result.records],
                     [None if r.result is None else r.result.tobytes() for r in result.records],
                     result.virtual_s, result.events, result.frames, result.links))
    return runs


def _hosts(topology, count=None):
    return tuple(h.name for h in topology.hosts)[:count]


CASES = [
    # (name, topology, jobs, algo, extra arguments)
    ("star ina", lambda: star(4), lambda t: [SimJob(1, _hosts(t))], "ina", {}),
    ("star ring", lambda: star(4), lambda t: [SimJob(1, _hosts(t))], "ring", {}),
    ("fat-tree tree ina", lambda: fat_tree(4),
     lambda t: [SimJob(3, _hosts(t, 8), switch="c0", hierarchical=True)], "ina", {}),
    ("leaf-spine flat ina, two jobs", lambda: leaf_spine(2, 2, 3),
     lambda t: [SimJob(1, _hosts(t)[:3]), SimJob(2, _hosts(t)[3:6])], "ina", {}),
    ("fat-tree ring", lambda: fat_tree(4), lambda t: [SimJob(1, _hosts(t, 8))], "ring", {}),
    ("star ps", lambda: star(4), lambda t: [SimJob(1, _hosts(t))], "ps", {}),
    ("star ina, a worker dies", lambda: star(4), lambda t: [SimJob(1, _hosts(t))], "ina",
     {"deaths": {"h2": 0.0004}, "ina": InaOptions(rto=0.002, rto_max=0.004, max_retx=2)}),
    # streamed (the native core keeps each block's RESULT lanes once for the job: JobLanes)
    ("fat-tree tree ina, streamed", lambda: fat_tree(4),
     lambda t: [SimJob(3, _hosts(t, 8), switch="c0", hierarchical=True)], "ina",
     {"keep_results": False, "size_bytes": 4 * 70_001}),
    ("star ina, streamed, a worker dies", lambda: star(4), lambda t: [SimJob(1, _hosts(t))],
     "ina", {"keep_results": False, "deaths": {"h2": 0.0004},
             "ina": InaOptions(rto=0.002, rto_max=0.004, max_retx=2)}),
    ("star ring, a slow switch drops at its input", lambda: star(4),
     lambda t: [SimJob(1, _hosts(t))], "ring",
     {"switch_cost": SwitchCost.from_pps(40_000), "switch_queue_packets": 4}),
]


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("loss", [0.0, 2.0])
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_native_core_runs_the_same_events(case, loss, seed):
    _name, topology_of, jobs_of, algo, extra = case
    topology = topology_of()
    extra = {"size_bytes": 4 * 3001, **extra}
    python, native = _both(topology, jobs_of(topology), algo=algo, seed=seed, loss=loss,
                           bw=1000, elems_k=32, **extra)
    assert python[0], "no trace recorded"
    if "drops at its input" in _name:
        assert any(" input-drop " in line for line in python[0])
    assert native[0] == python[0]
    assert native[1:] == python[1:]


def test_an_unknown_core_is_refused():
    topology = star(2)
    with pytest.raises(SimError, match="core must be one of python, native"):
        simulate(topology, [SimJob(1, _hosts(topology))], algo="ina", size_bytes=64,
                 core="fortran")


def test_inaemu_run_passes_its_sim_core(tmp_path):
    """`inaemu run --net sim --sim-core native` reaches simulate (the same records)."""
    import argparse

    from inaemu.experiment.sim_run import run_sim
    from inaemu.run import add_arguments, config_from
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    records = {}
    for core in ("python", "native"):
        cfg = config_from(parser.parse_args(["--net", "sim", "--algo", "both", "--workers", "3",
                                             "--size-mib", "0.01", "--loss", "1",
                                             "--sim-core", core]))
        assert cfg.sim_core == core
        (tmp_path / core).mkdir()
        records[core] = run_sim(cfg, tmp_path / core, lambda _line: None)
    assert records["native"] == records["python"] and len(records["python"]) == 6


def test_inaemu_run_takes_the_native_core_by_default_and_says_which(tmp_path, monkeypatch):
    """`--sim-core auto` (the default): the native core where it builds (here: CI and
    bootstrap.sh install cc and Python's headers), else the Python one with the reason; the
    progress says which and sim_report.json records it."""
    import argparse
    import json

    import inaemu.sim.native as native
    from inaemu.experiment.sim_run import run_sim
    from inaemu.run import add_arguments, config_from
    from inaemu.sim.cores import chosen_core
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = config_from(parser.parse_args(["--net", "sim", "--algo", "ina", "--workers", "3",
                                         "--size-mib", "0.01"]))
    assert cfg.sim_core == "auto"
    assert chosen_core("auto") == ("native", None)
    lines: list[str] = []
    (tmp_path / "auto").mkdir()
    run_sim(cfg, tmp_path / "auto", lines.append)
    assert "run: sim: the native core" in lines
    assert json.loads((tmp_path / "auto" / "sim_report.json").read_text())["core"] == "native"
    monkeypatch.setattr(native, "native_classes", lambda: None)
    monkeypatch.setattr(native, "why_not", lambda: "INAEMU_NATIVE=0")
    assert chosen_core("auto") == ("python", "INAEMU_NATIVE=0")
    lines.clear()
    (tmp_path / "fallback").mkdir()
    records = run_sim(cfg, tmp_path / "fallback", lines.append)
    assert all(record["correct"] for record in records)
    assert ("run: sim: the python core (the native one is not available here: "
            "INAEMU_NATIVE=0)") in lines
    report = json.loads((tmp_path / "fallback" / "sim_report.json").read_text())
    assert report["core"] == "python"


def test_a_captured_run_writes_the_same_files_on_both_cores(tmp_path):
    """Packet capture (the recorders' arrived/departed/lost hooks, called from the C links
    and switch ports on the native core): the same per-switch log and pcaps, byte for byte."""
    topology = star(3)
    files = {}
    for core in ("python", "native"):
        out = tmp_path / core
        simulate(topology, [SimJob(1, _hosts(topology))], algo="ina", size_bytes=4 * 3001,
                 loss=2.0, seed=3, capture_dir=out, core=core)
        files[core] = {path.relative_to(out): path.read_bytes()
                       for path in sorted(out.rglob("*")) if path.is_file()}
    assert files["native"] == files["python"]
    assert any(name.suffix == ".pcap" and len(data) > 1000
               for name, data in files["python"].items())
    assert b"link loss:" in files["python"][next(n for n in files["python"] if n.suffix == ".log")]


@pytest.mark.parametrize("core", ["python", "native"])
def test_the_runtimes_wall_time_is_measured_when_asked(core):
    """`time_runtime=True`: the switches' time inside the runtime, some of the run's wall;
    by default it is not measured (None), and the run is the same run."""
    if core == "native" and native_loop_class() is None:
        pytest.skip(f"no native core here: {why_not()}")
    topology = star(3)
    jobs = [SimJob(1, _hosts(topology))]
    runs = [simulate(topology, jobs, algo="ina", size_bytes=4096, seed=1, core=core,
                     time_runtime=timed) for timed in (False, True)]
    assert runs[0].runtime_wall_s is None
    assert 0 < runs[1].runtime_wall_s < runs[1].wall_s
    assert [r.as_dict() for r in runs[0].records] == [r.as_dict() for r in runs[1].records]
