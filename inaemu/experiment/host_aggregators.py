"""Host aggregators (`python -m hosts.fallback_udp`) on Mininet hosts: their command lines,
the neighbour entries their hosts need, starting and stopping them. One definition for
`inaemu run --net mininet` (inaemu/experiment/mininet_run.py), which starts them for the
whole run, and the Mininet scenario's jobs (inaemu/scenario/mininet_job.py), which start
them with each placement of a job and stop them when it ends.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from controller.ina_jobs import aggregator_mac
from inaemu.experiment.config import PROJECT_ROOT


@dataclass(frozen=True)
class HostAggregatorSpec:
    """One host aggregator: where it runs, its command line, the aggregator addresses its host
    must reach without ARP, and whether it completes sums (a flat job's, or a tree's root's:
    its `results_multicast` counts chunks it completed) or sends partial sums up."""

    host: str
    argv: tuple[str, ...]
    learn: tuple[str, ...]
    stats: Path
    switch: str | None = None      # a tree's: the switch it stands in for
    completes: bool = True


def flat_aggregator(*, job: int, host: str, k: int, first_slot: int, pool_size: int,
                    worker_ips: list[str], port: int, via_switch: str, hashed: bool,
                    stats: Path) -> HostAggregatorSpec:
    """A job's one host aggregator at a single switch: the slots from `first_slot` on
    (--fallback), or with `hashed` the chunks whose cell of the shared pool is taken; its
    sums go to `via_switch` (the job's aggregator address), which multicasts them."""
    argv = [sys.executable, "-m", "hosts.fallback_udp", "--job", str(job), "--k", str(k),
            "--first-slot", str(first_slot), "--pool", str(pool_size),
            "--workers", ",".join(worker_ips), "--port", str(port),
            "--via-switch", via_switch, "--stats", str(stats)] + (["--hashed"] if hashed else [])
    return HostAggregatorSpec(host, tuple(argv), (via_switch,), stats)


def tier_aggregators(topology, job: int, tree: dict, *, k: int, pool_size: int,
                     stats_prefix: Path) -> list[HostAggregatorSpec]:
    """A hashed tree's host aggregators (docs/protocol.md §3.3, "Tiers"), one per tree switch
    of `tree` (a `TreePlan.summary()`), on the host its plan names: the root's completes sums
    (counting the whole tree), a child's sends partial sums up to its parent as its member
    there. Counters: `<stats_prefix>-<switch>.json`."""
    workers = sum(1 for node in tree.values() for m in node["members"] if m not in tree)
    specs = []
    for switch, node in tree.items():
        members = ",".join(tree[m]["address"] if m in tree else topology.host(m).ip
                           for m in node["members"])
        host = topology.host_by_ip(node["fallback_address"]).name
        # it sends to its switch, its parent and its child switches (its answers to them:
        # without the entry, ARP for an aggregator address fails and they were lost)
        up = None if node["parent"] is None else tree[node["parent"]]["address"]
        children = [tree[m]["address"] for m in node["members"] if m in tree]
        role = ["--result-count", str(workers)] if node["parent"] is None else \
            ["--parent", up, "--member", str(node["child_index"])]
        stats = Path(f"{stats_prefix}-{switch}.json")
        argv = [sys.executable, "-m", "hosts.fallback_udp", "--job", str(job), "--k", str(k),
                "--first-slot", "0", "--pool", str(pool_size), "--workers", members,
                "--port", str(node["fallback_port"]), "--via-switch", node["address"],
                "--hashed", *role, "--stats", str(stats)]
        specs.append(HostAggregatorSpec(host, tuple(argv),
                                        tuple(filter(None, (node["address"], up, *children))),
                                        stats, switch, node["parent"] is None))
    return specs


def start_aggregator(net, spec: HostAggregatorSpec, log: Path, *,
                     stdout=None) -> subprocess.Popen:
    """`spec` on its Mininet host, its host first taught the addresses it sends to; its output
    to `log` (stdout: to `stdout` instead when given, e.g. a pipe to read its start line)."""
    node = net.host(spec.host)
    for address in spec.learn:
        learn_aggregator(node, address)
    with log.open("wb") as handle:
        return node.popen(list(spec.argv), stdout=handle if stdout is None else stdout,
                          stderr=subprocess.STDOUT if stdout is None else handle,
                          cwd=str(PROJECT_ROOT))


LISTENING_LINE = b"fallback: job"      # hosts/fallback_udp.py's first line, once it is bound


class AggregatorNotListening(RuntimeError):
    """A host aggregator exited, or did not bind its socket in time (the message says which,
    and where its log is)."""


def wait_until_listening(processes: list[subprocess.Popen], logs: list[Path], *,
                         timeout_s: float = 30.0, poll_s: float = 0.02) -> float:
    """Block until every host aggregator has printed its listening line to its log (started by
    `start_aggregator` without `stdout`): a contribution sent to one not yet bound is lost and
    costs its worker a timer. Returns the seconds waited."""
    start = time.monotonic()
    waiting = dict(zip(logs, processes))
    while waiting:
        for log, process in list(waiting.items()):
            try:
                if log.read_bytes().startswith(LISTENING_LINE):
                    del waiting[log]
                    continue
            except OSError:
                pass
            if process.poll() is not None:
                raise AggregatorNotListening(
                    f"a host aggregator exited with status {process.returncode} before "
                    f"listening (log: {log})")
        if waiting and time.monotonic() - start > timeout_s:
            raise AggregatorNotListening(
                f"{len(waiting)} host aggregator(s) not listening after {timeout_s:.0f} s "
                f"(logs: {', '.join(str(log) for log in waiting)})")
        if waiting:
            time.sleep(poll_s)
    return time.monotonic() - start


def stop_aggregators(processes: list[subprocess.Popen],
                     say: Callable[[str], None] = lambda _line: None) -> None:
    """SIGTERM (they write their counters to their --stats file), then wait; one that does
    not stop within 5 s is killed (and said)."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            say("a host aggregator did not stop on SIGTERM; killed")


def learn_aggregator(node, address: str) -> None:
    """A permanent neighbour entry for an aggregator address on a Mininet host: the address
    answers no ARP; its first switch routes the frame on by IP."""
    node.cmd(f"ip neigh replace {address} lladdr {aggregator_mac(address)} "
             f"dev {node.defaultIntf().name} nud permanent")
