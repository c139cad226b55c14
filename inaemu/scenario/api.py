"""Scripting experiments: build a network, add jobs and events, run, read results.

Shaped like a Mininet script (make the network, use it, read what happened), over the scenario
model, so a script and a scenario file are the same thing (`Experiment.scenario()` is the
file's content; `Experiment.from_file` reads one):

    from inaemu.scenario import Experiment

    exp = Experiment.fat_tree(k=4, bw_mbps=1000)
    exp.add_job("train", algo="ina", workers=exp.hosts[:16], size="8MiB", iterations=3)
    exp.link_down("a0_0", "c0", at="3ms")
    exp.link_up("a0_0", "c0", at="40ms")
    result = exp.run(net="sim", out="results/link-failure")
    print(result.job("train").correct, result.events[0].recovery_s)

Sizes take bytes or strings ("8MiB", "512KiB"); times take seconds or strings ("3ms").
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from inaemu.scenario import model as m
from inaemu.scenario.units import duration_s, size_bytes


class Experiment:
    """A scenario under construction. Every `add_*`/event method checks its own arguments at
    once; names that refer to each other are checked when the scenario is built (`run`)."""

    def __init__(self, network: m.Network, *, name: str = "experiment",
                 options: m.Options | None = None):
        self.network = network
        self.name = name
        self.options = options or m.Options()
        self.jobs: list[m.Job] = []
        self.events: list[m.Event] = []
        self.hosts = [h.name for h in network.topology().hosts]
        self.switches = [s.name for s in network.topology().switches]

    # -- networks ---------------------------------------------------------------------------------

    @classmethod
    def star(cls, hosts: int, **link) -> "Experiment":
        return cls(m.Network("star", hosts=hosts, **_link(link)))

    @classmethod
    def leaf_spine(cls, leaves: int, spines: int, hosts_per_leaf: int, **link) -> "Experiment":
        return cls(m.Network("leaf-spine", leaves=leaves, spines=spines,
                             hosts_per_leaf=hosts_per_leaf, **_link(link)))

    @classmethod
    def fat_tree(cls, k: int, **link) -> "Experiment":
        return cls(m.Network("fat-tree", k=k, **_link(link)))

    @classmethod
    def from_file(cls, path: str | Path) -> "Experiment":
        from inaemu.scenario.parse import load_scenario
        scenario = load_scenario(path)
        exp = cls(scenario.network, name=scenario.name, options=scenario.options)
        exp.jobs, exp.events = list(scenario.jobs), list(scenario.events)
        return exp

    def set_options(self, **options) -> "Experiment":
        """seed, elems_k, pool_size, detection (a duration), time_limit, switch_pps, sharing,
        shared_pairs, aggregation, sim_core."""
        fields = dict(self.options.__dict__)
        for key, value in options.items():
            if key in ("detection", "time_limit"):
                fields[f"{key}_s"] = duration_s(value, f"options.{key}")
            elif key in fields:
                fields[key] = value
            else:
                raise m.ScenarioError("options", f"unknown option {key!r} "
                                                 f"(known: {', '.join(fields)})")
        self.options = m.Options(**fields)
        return self

    # -- jobs -------------------------------------------------------------------------------------

    def add_job(self, name: str, *, algo: str, workers: Iterable[str], size, iterations: int = 1,
                compute=0.0, start=0.0, after: str | None = None,
                root: str | None = None) -> m.Job:
        job = m.Job(name, algo, tuple(workers),
                    m.Workload(size_bytes(size, f"jobs[{name}].size"), iterations,
                               duration_s(compute, f"jobs[{name}].compute")),
                    duration_s(start, f"jobs[{name}].start"), after, root)
        self.jobs.append(job)
        return job

    def add_model_job(self, name: str, *, model: str, algo: str, workers: Iterable[str],
                      iterations: int = 1, bucket_cap=25 * 1024 * 1024,
                      compute_speedup: float = 1.0, start=0.0, after: str | None = None,
                      root: str | None = None) -> m.Job:
        """DDP iterations of a built-in model (inaemu/workload/models.py, docs/workloads.md)."""
        from inaemu.workload.models import model_workload
        workers = tuple(workers)
        graph = model_workload(model, len(workers),
                               bucket_cap_bytes=size_bytes(bucket_cap, f"jobs[{name}].bucket_cap"),
                               compute_speedup=compute_speedup, iterations=iterations)
        return self.add_graph_job(name, graph, algo=algo, workers=workers, start=start,
                                  after=after, root=root)

    def add_chakra_job(self, name: str, prefix, *, algo: str, workers: Iterable[str],
                       start=0.0, after: str | None = None, root: str | None = None) -> m.Job:
        """Per-rank Chakra ET files PREFIX.<rank>.et as the job's workload."""
        from inaemu.workload.chakra import read_chakra
        return self.add_graph_job(name, read_chakra(prefix), algo=algo, workers=workers,
                                  start=start, after=after, root=root)

    def add_graph_job(self, name: str, graph, *, algo: str, workers: Iterable[str], start=0.0,
                      after: str | None = None, root: str | None = None) -> m.Job:
        """Any workload graph (inaemu.workload.graph.Workload) as a job."""
        job = m.Job(name, algo, tuple(workers), graph, duration_s(start, f"jobs[{name}].start"),
                    after, root)
        self.jobs.append(job)
        return job

    # -- events -----------------------------------------------------------------------------------

    def _event(self, event: m.Event) -> m.Event:
        self.events.append(event)
        return event

    def link_down(self, a: str, b: str, *, at) -> m.Event:
        return self._event(m.LinkDown(duration_s(at, "link_down.at"), a, b))

    def link_up(self, a: str, b: str, *, at) -> m.Event:
        return self._event(m.LinkUp(duration_s(at, "link_up.at"), a, b))

    def link_change(self, a: str, b: str, *, at, loss_percent=None, delay=None,
                    bw_mbps=None) -> m.Event:
        delay_ms = None if delay is None else duration_s(delay, "link_change.delay") * 1e3
        return self._event(m.LinkChange(duration_s(at, "link_change.at"), a, b, loss_percent,
                                        delay_ms, bw_mbps))

    def switch_crash(self, switch: str, *, at) -> m.Event:
        return self._event(m.SwitchCrash(duration_s(at, "switch_crash.at"), switch))

    def switch_restart(self, switch: str, *, at) -> m.Event:
        return self._event(m.SwitchRestart(duration_s(at, "switch_restart.at"), switch))

    def slow_worker(self, host: str, *, at=0.0, compute_factor: float = 1.0,
                    nic_factor: float = 1.0) -> m.Event:
        return self._event(m.SlowWorker(duration_s(at, "slow_worker.at"), host,
                                        compute_factor, nic_factor))

    def tcp_flow(self, name: str, source: str, destination: str, *, at=0.0,
                 size=None) -> m.Event:
        return self._event(m.FlowStart(duration_s(at, "flow_start.at"), name, "tcp", (source,),
                                       destination, None,
                                       None if size is None else size_bytes(size, "size")))

    def udp_flow(self, name: str, source: str, destination: str, *, rate_mbps: float,
                 at=0.0) -> m.Event:
        return self._event(m.FlowStart(duration_s(at, "flow_start.at"), name, "udp", (source,),
                                       destination, rate_mbps))

    def incast(self, name: str, sources: Iterable[str], destination: str, *, at=0.0,
               size=None) -> m.Event:
        return self._event(m.FlowStart(duration_s(at, "flow_start.at"), name, "incast",
                                       tuple(sources), destination, None,
                                       None if size is None else size_bytes(size, "size")))

    def stop_flow(self, name: str, *, at) -> m.Event:
        return self._event(m.FlowStop(duration_s(at, "flow_stop.at"), name))

    # -- running ----------------------------------------------------------------------------------

    def scenario(self) -> m.Scenario:
        """The scenario built so far (checked as a whole: ScenarioError says what is wrong)."""
        return m.Scenario(self.network, tuple(self.jobs), tuple(self.events), self.options,
                          self.name)

    def save(self, path: str | Path) -> None:
        """Write the scenario as a file (`inaemu scenario FILE` runs it)."""
        from inaemu.scenario.parse import dump_scenario
        dump_scenario(self.scenario(), path)

    def run(self, *, net: str = "sim", out: str | Path | None = None, seed: int | None = None,
            progress: Callable[[str], None] | None = None, bar: bool | None = None, tls=None):
        """Run it; with `out`, also write summary.json, the CSVs and timeline.png there. `tls`:
        P4Runtime over TLS on Mininet, a `RunTLS` (as `run_scenario`)."""
        return run_scenario(self.scenario(), net=net, out=out, seed=seed, progress=progress,
                            bar=bar, tls=tls)


def run_scenario(scenario: m.Scenario, *, net: str = "sim", out: str | Path | None = None,
                 seed: int | None = None, progress: Callable[[str], None] | None = None,
                 bar: bool | None = None, tls=None):
    """Run a scenario on the simulator (`net="sim"`) or Mininet (`"mininet"`, root). `tls`: a
    `inaemu.experiment.tls.RunTLS` (Mininet only): the switches serve P4Runtime over TLS, or
    mutual TLS when it has the controller's certificate; its files are checked first."""
    import dataclasses
    _check_tls(tls, net)
    if seed is not None:
        scenario = dataclasses.replace(
            scenario, options=dataclasses.replace(scenario.options, seed=seed))
    say = progress or (lambda _line: None)
    if net == "sim":
        from inaemu.scenario.sim_engine import run_sim
        result = run_sim(scenario, say=say, bar=bar)
    elif net == "mininet":
        from inaemu.scenario.mininet_engine import run_mininet
        result = run_mininet(scenario, say=say, bar=bar, tls=tls)
    else:
        raise m.ScenarioError("net", f"expected sim or mininet, got {net!r}")
    if out is not None:
        from inaemu.scenario.report import write_results
        write_results(result, out)
    return result


def _check_tls(tls, net: str) -> None:
    """A usable `RunTLS` for Mininet, or None; ScenarioError("tls", why) otherwise, before any
    network is built."""
    if tls is None:
        return
    from inaemu.experiment.tls import RunTLS, RunTLSError
    if not isinstance(tls, RunTLS):
        raise m.ScenarioError("tls", f"expected a RunTLS (inaemu.experiment.tls.RunTLS."
                                     f"from_options(cacert, cert, key[, client_cert, "
                                     f"client_key])), got {type(tls).__name__}")
    if net != "mininet":
        raise m.ScenarioError("tls", "P4Runtime over TLS needs net='mininet' (the simulator's "
                                     "switches are served inside its own process)")
    try:
        tls.check()                  # the files may have changed since it was made
    except RunTLSError as error:
        raise m.ScenarioError("tls", str(error)) from None


def _link(settings: dict) -> dict:
    known = {"bw_mbps", "delay_ms", "loss_percent"}
    unknown = set(settings) - known
    if unknown:
        raise m.ScenarioError("network", f"unknown link setting {sorted(unknown)[0]!r} "
                                         f"(known: {', '.join(sorted(known))})")
    return settings
