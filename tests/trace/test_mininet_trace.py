"""`inaemu trace` on a real traced Mininet run (root): a star of three hosts around one
`inaemu switch` with per-port loss, ina.p4 (k = 4) pushed and the job installed with the
controller, three `hosts.agent` workers all-reducing a few chunks.

Checks: every loss the switch's port model injected (its exit summary) is in the trace, each
at the right port and direction; and the lifecycle of every slot round is what
docs/protocol.md §3 says: a contribution from each worker, one completion, a multicast to every
worker, a unicast answer for each duplicate that came after the completion and none before.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from inaemu.trace.events import LinkLoss
from inaemu.trace.lifecycle import COMPLETED, CONTRIBUTION, DUPLICATE, LOSS, build
from inaemu.trace.reader import read_run

pytestmark = pytest.mark.root

PROJECT = Path(__file__).resolve().parents[2]
K, POOL, JOB, WORKERS, LOSS_PERCENT = 4, 8, 5, 3, 8.0
LENGTH = 24 * K                      # 24 chunks per worker per call


def _compile(out_dir: Path) -> tuple[Path, Path]:
    from p4switch.compiler import compile_file
    build_ = compile_file(str(PROJECT / "p4src" / "ina.p4"), defines={"INA_K": str(K)})
    (out_dir / "ina.json").write_text(json.dumps(build_.bmv2))
    (out_dir / "ina.p4info.txtpb").write_text(build_.p4info_text())
    return out_dir / "ina.p4info.txtpb", out_dir / "ina.json"


@pytest.fixture(scope="module")
def traced_mininet_run(tmp_path_factory):
    from controller.fabric import Fabric
    from controller.ina_control import InaJobs
    from controller.ina_jobs import aggregator_mac
    from topologies.builders import star
    from topologies.mininet_net import MininetNetwork
    sys.path.insert(0, str(PROJECT / "tests" / "mininet"))
    from mn_helpers import relabel

    out = tmp_path_factory.mktemp("mntrace")
    p4info, config = _compile(out)
    topology = relabel(star(WORKERS, loss=LOSS_PERCENT), "tr", grpc_base=20830)
    hosts = [h.name for h in topology.hosts]
    run_dir = out / "net"
    with MininetNetwork(topology, run_dir=str(run_dir), trace=True, pcap=True, seed=4) as net:
        with Fabric(topology, timeout=20) as fabric:
            fabric.push_pipeline(p4info, config)
            fabric.install_routes()
            jobs = InaJobs(topology, fabric.clients, progress=lambda line: None)
            plan = jobs.install(JOB, hosts, topology.switches[0].name, k=K, pool_size=POOL)
            aggregator = plan.job.aggregator_ip
            agents = []
            for w, name in enumerate(hosts):
                node = net.host(name)
                node.cmd(f"ip neigh replace {aggregator} lladdr {aggregator_mac(aggregator)} "
                         f"dev {node.defaultIntf().name} nud permanent")
                config_path = out / f"w{w}.json"
                config_path.write_text(json.dumps({
                    "algo": "ina", "seed": 2, "length": LENGTH, "calls": 1,
                    "output": str(out / f"w{w}.record.json"), "job": JOB, "worker": w,
                    "n": WORKERS, "aggregator": aggregator, "k": K, "pool_size": POOL,
                    "window": POOL, "rto": 0.05, "rto_max": 0.2, "max_retx": 60,
                    "timeout": 30}))
                agents.append(node.popen([sys.executable, "-m", "hosts.agent", "--config",
                                          str(config_path)], cwd=str(PROJECT),
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            outputs = [agent.communicate(timeout=60)[0].decode(errors="replace")
                       for agent in agents]
            assert all(a.returncode == 0 for a in agents), outputs
    switch = topology.switches[0].name
    summary = (run_dir / f"{switch}.out").read_text()
    return run_dir, switch, summary


def _injected(summary: str) -> dict[tuple[int, str], int]:
    """(port, in|out) -> losses, from the switch's exit summary lines."""
    losses = {}
    for port, lost_in, lost_out in re.findall(
            r"port (\d+) \(\S+\): rx \d+ tx \d+ lost-in (\d+) lost-out (\d+)", summary):
        losses[(int(port), "in")] = int(lost_in)
        losses[(int(port), "out")] = int(lost_out)
    return losses


def test_every_injected_loss_is_in_the_trace(traced_mininet_run):
    run_dir, switch, summary = traced_mininet_run
    injected = _injected(summary)
    assert injected and sum(injected.values()) > 0, summary     # the run did lose packets
    trace = read_run(run_dir)
    logged: dict[tuple[int, str], int] = {}
    for event in trace.events:
        if isinstance(event, LinkLoss):
            logged[(event.port, event.direction)] = logged.get((event.port, event.direction), 0) + 1
    assert {k: v for k, v in logged.items() if v} == {k: v for k, v in injected.items() if v}
    lifecycles = build(trace.events, {switch})
    loss_steps = sum(1 for life in lifecycles for s in life.steps if s.what == LOSS)
    ina_losses = sum(1 for e in trace.events if isinstance(e, LinkLoss) and e.ina is not None)
    assert loss_steps == ina_losses


def test_slot_lifecycles_follow_the_protocol(traced_mininet_run):
    run_dir, switch, _ = traced_mininet_run
    trace = read_run(run_dir)
    lifecycles = [life for life in build(trace.events, {switch}) if life.key.job == JOB]
    data = [life for life in lifecycles if not life.key.max_round]
    assert len(data) == LENGTH // K                      # one round per chunk of the one call
    for life in lifecycles:
        accepted = [s for s in life.steps if s.what in (CONTRIBUTION, COMPLETED)]
        assert sorted(s.worker for s in accepted) == list(range(WORKERS)), life
        completions = [s for s in life.steps if s.what == COMPLETED]
        assert len(completions) == 1, life
        assert sorted(w for _, w in completions[0].outputs) == list(range(WORKERS))
        done_at = life.steps.index(completions[0])
        for position, step in enumerate(life.steps):
            if step.what != DUPLICATE:
                continue
            if position > done_at:
                assert step.outputs == ((step.port, step.worker),), step   # unicast back
            else:
                assert step.outputs == (), step                            # still aggregating


def test_cli_summary_and_plots_on_the_run(traced_mininet_run, tmp_path):
    run_dir, switch, _ = traced_mininet_run
    result = subprocess.run([str(Path(sys.executable).with_name("inaemu")), "trace",
                             str(run_dir.parent), "--summary", "--plots", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    counts = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1)
                  for line in result.stdout.splitlines() if re.search(r"\S\s{2,}\d+$", line))
    assert counts.get("completions") == str(LENGTH // K + 1), result.stdout   # data + MAX round
    assert (tmp_path / "occupancy.png").stat().st_size > 0
    assert (tmp_path / "link_bytes.png").stat().st_size > 0
