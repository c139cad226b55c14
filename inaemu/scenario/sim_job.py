"""One job's calls on the simulator: its workers' apps (INA sessions, ring or baseline ranks)
on the simulated hosts, iteration by iteration (docs/scenarios.md). The timeline around it is
inaemu/scenario/sim_engine.py; what the controller does with the job is JobLife's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hosts.agent import gradient
from hosts.errors import HostError
from hosts.ina_codec import FloatCodec
from hosts.ina_session import InaSession
from hosts.ring_session import RingSession
from hosts.scenario_agent import iteration_seed

from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import Placement
from inaemu.scenario.job_life import JobLife
from inaemu.scenario.results import IterationRecord
from inaemu.sim.collective_worker import plan_worker
from inaemu.sim.driver import InaOptions, SessionBound, judge_worker, reference_sums
from inaemu.sim.frames import ip_bytes
from inaemu.sim.ina_worker import InaWorker
from inaemu.sim.reliable import TransportConfig
from inaemu.sim.ring_worker import RingWorker
from inaemu.sim.streamed_check import StreamedCheck

STALL_TIMEOUT_S = 10.0
INA_DEFAULTS = InaOptions()      # hosts.api's defaults: the sessions' options and their blocks


@dataclass
class _Worker:
    host: str
    rank: int
    app: object = None
    computing: object = None          # the compute timer's event
    done: bool = False                # has this iteration's sum
    counted: float = 0.0              # progress of ended apps


class JobRun(JobLife):
    """One job on the simulator: its iterations and their all-reduces (apps on the hosts).

    INA calls are streamed (docs/sim.md, "Streamed runs"): each worker draws its seeded
    gradient a block at a time and its sum is checked a block at a time (`StreamedCheck`), so
    a call holds what is in flight, not n whole vectors, their float64 sum and n results
    (1,024 ranks x ResNet-50's 25 MiB bucket would be 25 GiB of inputs alone). The ring and
    the baselines keep whole vectors."""

    stream_ina = True                 # (tests compare the whole-vector calls with False)

    def __init__(self, engine, job: m.Job, index: int):
        super().__init__(engine, job, index)
        self.iteration = 0
        self.sessions: dict[str, InaSession] = {}
        self.workers = [_Worker(host, rank) for rank, host in enumerate(job.workers)]
        self.generation = 0               # apps of an older generation are abandoned
        self._inputs: list[np.ndarray] = []
        self._reference = None
        self._call_input: tuple[int, int] | None = None   # streamed: (seed, length) of the call
        self._check: StreamedCheck | None = None          # streamed: the call's check ...
        self._check_key = None                            # ... for (iteration, generation)
        self._ended_apps: list = []       # this call's apps that have their sum
        self.running_aggregators = None   # hashed sharing: the placement's host
                                          # aggregators (a tree: one per switch)
        self.host_aggregators: list = []  # every one it had (their counters, for reports)

    # -- JobLife's hooks --------------------------------------------------------------------------

    def _start_work(self) -> None:
        self._begin_iteration()

    def _placed(self, placement: Placement) -> None:
        self.sessions = {}                # positions start over with the new job id
        self._stop_host_aggregator()
        if placement.sharing == "hashed":
            self._start_host_aggregator(placement)

    def _start_host_aggregator(self, placement: Placement) -> None:
        """The job's host aggregator on one of its workers' hosts: the chunks that find their
        cell of the shared pool taken (docs/protocol.md §3.3); its sums go to the switch. A
        tree has one per tree switch, where the controller put it (`_start_tier_aggregators`)."""
        from hosts.fallback import FallbackAggregator
        from hosts.fallback_node import SimFallbackServer
        if placement.tree:
            self._start_tier_aggregators(placement)
            return
        net, n = self.engine.net, len(self.workers)
        aggregator = FallbackAggregator(job=placement.p4_job, n=n, k=self.engine.options.elems_k,
                                        first_slot=0, pool_size=self.engine.options.pool_size,
                                        via_switch=True, hashed=True)
        topology = net.topology
        self.running_aggregators = [SimFallbackServer(
            net.hosts[placement.fallback_host], aggregator,
            [ip_bytes(topology.host(h).ip) for h in placement.workers],
            port=placement.fallback_port, switch_ip=ip_bytes(placement.addresses[0]),
            **self._host_cost())]
        self.host_aggregators.extend(self.running_aggregators)

    def _start_tier_aggregators(self, placement: Placement) -> None:
        """A hashed tree's host aggregators (docs/protocol.md §3.3, "Tiers"), one per tree
        switch on the host in its summary: the root's completes sums for the root to
        multicast, a child's (hosts/fallback_tier.py) sends partial sums up."""
        from hosts.fallback import FallbackAggregator
        from hosts.fallback_node import SimFallbackServer
        from hosts.fallback_tier import TierAggregator
        net, options = self.engine.net, self.engine.options
        topology, tree = net.topology, placement.summary
        servers = []
        for node in tree.values():
            members = node["members"]
            ips = [ip_bytes(tree[m]["address"] if m in tree else topology.host(m).ip)
                   for m in members]
            if node["parent"] is None:
                aggregator = FallbackAggregator(
                    job=placement.p4_job, n=len(members), k=options.elems_k, first_slot=0,
                    pool_size=options.pool_size, via_switch=True, hashed=True,
                    result_count=len(placement.workers))
                parent_ip = None
            else:
                aggregator = TierAggregator(job=placement.p4_job, n=len(members),
                                            k=options.elems_k, pool_size=options.pool_size,
                                            parent_member=node["child_index"])
                parent_ip = ip_bytes(tree[node["parent"]]["address"])
            host = topology.host_by_ip(node["fallback_address"]).name
            servers.append(SimFallbackServer(
                net.hosts[host], aggregator, ips, port=node["fallback_port"],
                switch_ip=ip_bytes(node["address"]), parent_ip=parent_ip, **self._host_cost()))
        self.running_aggregators = servers
        self.host_aggregators.extend(servers)

    def host_chunks(self) -> int | None:
        """The chunks its flat host aggregators and its trees' root ones completed."""
        from hosts.fallback_tier import TierAggregator
        if not self.host_aggregators:
            return None
        return sum(server.aggregator.counters.results_multicast
                   for server in self.host_aggregators
                   if not isinstance(server.aggregator, TierAggregator))

    def _host_cost(self) -> dict:
        """A host aggregator's service time: options.host_pps, else the switches' packet rate,
        else inaemu's own."""
        options = self.engine.options
        pps = options.host_pps or options.switch_pps
        return {} if pps is None else {"per_packet_s": 1.0 / pps, "per_copy_s": 0.0}

    def _stop_host_aggregator(self) -> None:
        for server in getattr(self, "running_aggregators", None) or ():
            server.close()
        self.running_aggregators = None

    def _close_ended_apps(self) -> None:
        """Every worker has the call's sum: its apps answer nothing more, so they give their
        hosts' ports and timers back (and with them their vectors)."""
        for app in self._ended_apps:
            app.close()
        self._ended_apps = []

    def _release(self) -> None:
        self._stop_host_aggregator()
        self._close_ended_apps()
        self.sessions = {}
        self._inputs, self._reference = [], None
        self._drop_check()
        self._call_input = self._check_key = None

    def _stop_calls(self) -> None:
        self._abandon_apps()

    def _restart_calls(self) -> None:
        for worker in self.workers:
            worker.done = False
            if self._in_call(worker):
                self._start_allreduce(worker)
            elif self.algo != "ina" and self.state == "running":
                self._open_app(worker)

    # -- iterations -------------------------------------------------------------------------------

    def _open_call(self, size_bytes: int) -> None:
        """Call `self.iteration`: every worker's seeded gradient, their float64 sum, the
        call's record (started now)."""
        engine = self.engine
        now = engine.loop.now
        length = size_bytes // 4
        seed = iteration_seed(engine.options.seed * 1_000_003 + self.index, self.iteration)
        self._drop_check()
        if self.algo == "ina" and self.stream_ina:
            self._inputs, self._reference = [], None
            self._call_input = (seed, length)
        else:
            self._inputs = [gradient(seed, w, length) for w in range(len(self.workers))]
            self._reference = reference_sums({0: self._inputs})[0]
            self._call_input = None
        self._current = IterationRecord(self.job.name, self.iteration, self.algo, now, now,
                                        None, None, True, 0)
        self._units_at_start = self.progress_units()

    def _close_call(self) -> IterationRecord:
        """The call ended at every worker now: its record, completed and kept."""
        return self._close_record(self.engine.loop.now)

    def _begin_iteration(self) -> None:
        engine = self.engine
        now = engine.loop.now
        self._open_call(self.job.workload.size_bytes)
        for worker in self.workers:
            worker.done = False
            if self.algo != "ina":        # transports up before compute: see RingWorker.start
                self._open_app(worker)
            factor = engine.compute_factor.get(worker.host, 1.0)
            worker.computing = engine.loop.at(now + self.job.workload.compute_s * factor,
                                              self._computed, worker)

    def _computed(self, worker: _Worker) -> None:
        worker.computing = None
        self._current.compute_done_s = max(self._current.compute_done_s, self.engine.loop.now)
        if self.suspended is not None:      # cut off: it starts when the job is placed again
            return
        self._start_allreduce(worker)

    def _start_allreduce(self, worker: _Worker) -> None:
        if worker.app is None and not self._open_app(worker):
            return
        worker.app.start()

    def _open_app(self, worker: _Worker) -> bool:
        """The worker's app for this call, not started; False if the job failed."""
        engine = self.engine
        net = engine.net
        n = len(self.workers)
        vector = None if self._call_input is not None else self._inputs[worker.rank]
        generation = self.generation

        def ended(app, worker=worker, generation=generation) -> None:
            self._allreduce_ended(worker, app, generation)

        try:
            if self.algo == "ina":
                app = self._ina_app(worker, vector, ended)
            else:
                data_port, ack_port = self._ports_for_call()
                if self.algo == "ring":
                    topology = engine.topology
                    right = topology.host(self.job.workers[(worker.rank + 1) % n]).ip
                    left = topology.host(self.job.workers[(worker.rank - 1) % n]).ip
                    app = RingWorker(net.hosts[worker.host],
                                     RingSession(rank=worker.rank, n=n), ip_bytes(right),
                                     ip_bytes(left), vector, TransportConfig(), STALL_TIMEOUT_S,
                                     ended, data_port=data_port, ack_port=ack_port)
                else:
                    app = plan_worker(net, self.job.workers, worker.rank, self.algo, vector,
                                      TransportConfig(), STALL_TIMEOUT_S, "float32", ended,
                                      data_port=data_port, ack_port=ack_port)
        except HostError as error:
            self._fail(f"worker {worker.rank}: {error}")
            return False
        worker.app = app
        return True

    def _ports_for_call(self) -> tuple[int, int]:
        """All workers of one call share its port pair: the first to start takes it."""
        key = (self.iteration, self.generation)
        if getattr(self, "_call_key", None) != key:
            self._call_key = key
            self._call_ports = self.engine.call_ports()
        return self._call_ports

    def _streamed_check(self) -> StreamedCheck:
        """The open call's check: a new one when the call starts over (a re-plan abandons the
        apps of the older generation, and what they quantized with them)."""
        key = (self.iteration, self.generation)
        if self._check is None or self._check_key != key:
            self._drop_check()
            seed, length = self._call_input
            self._check = StreamedCheck(seed=seed, n=len(self.workers), length=length,
                                        ahead=self.engine.ahead,
                                        lanes=self.engine.net.job_lanes(len(self.workers)))
            self._check_key = key
            # the workers' max passes on the drawing threads while the first ones start
            self._check.sources_ahead(FloatCodec.block_values(self.engine.options.elems_k,
                                                              INA_DEFAULTS.fmt))
        return self._check

    def _drop_check(self) -> None:
        """The call's check is no longer the open one's: what it drew ahead is given back."""
        if self._check is not None:
            self._check.close()
        self._check = None

    def _ina_app(self, worker: _Worker, vector, ended) -> InaWorker:
        placement = self.placement
        session = self.sessions.get(worker.host)
        options = self.engine.options
        if session is None:
            ina = INA_DEFAULTS
            session = InaSession(job=placement.p4_job, worker=placement.worker_ids[worker.rank],
                                 n=len(self.workers), k=options.elems_k,
                                 pool_size=options.pool_size, window=options.pool_size,
                                 rto=ina.rto, rto_max=ina.rto_max, max_retx=ina.max_retx,
                                 fmt=ina.fmt, sharing=placement.sharing,
                                 timer_heap=self.engine.net.timer_heap)
            self.sessions[worker.host] = session
        sink = None
        if vector is None:                    # streamed
            check = self._streamed_check()
            vector, sink = check.source(worker.rank), check.sink(worker.rank,
                                                                 SessionBound(session))
        return InaWorker(self.engine.net.hosts[worker.host], session,
                         ip_bytes(placement.addresses[worker.rank]), vector, ended, sink=sink)

    def _allreduce_ended(self, worker: _Worker, app, generation: int) -> None:
        if generation != self.generation or self.state != "running":
            return                          # an abandoned call (re-planned or failed)
        worker.counted += _app_progress(app)
        worker.app = None
        self._ended_apps.append(app)
        outcome = app.outcome
        self.retransmissions += outcome.retransmissions
        self._current.retransmissions += outcome.retransmissions
        if outcome.error is not None:
            self._fail(f"iteration {self.iteration}, worker {worker.rank} ({worker.host}): "
                       f"{outcome.error}")
            return
        if getattr(app, "sink", None) is not None:    # streamed: checked as the blocks came
            check = self._streamed_check()
            check.end(worker.rank)
            verdict = check.verdict(worker.rank, True)
        else:
            verdict = judge_worker(self.algo, app, self._reference)
        if not verdict[3]:
            self._correct = False
            self._current.correct = False
        worker.done = True
        if all(w.done for w in self.workers):
            self._iteration_done()

    def _iteration_done(self) -> None:
        self._close_ended_apps()
        self._close_call()
        self.iteration += 1
        if self.iteration >= self.job.workload.iterations:
            self._finish()
        else:
            self._begin_iteration()

    # -- failures ---------------------------------------------------------------------------------

    def _in_call(self, worker: _Worker) -> bool:
        """Whether the worker has reached the current call (it restarts it after a re-plan);
        here: its compute for the iteration is over."""
        return worker.computing is None

    def _abandon_apps(self) -> None:
        self.generation += 1
        for worker in self.workers:
            app = worker.app
            if app is not None:
                worker.counted += _app_progress(app)
                self.retransmissions += _app_retransmissions(app)
                _silence(app)
                app.close()
                worker.app = None
            if worker.computing is not None and self.state == "failed":
                worker.computing.cancel()
                worker.computing = None

    # -- progress ---------------------------------------------------------------------------------

    def progress_units(self) -> float:
        return sum(w.counted + (_app_progress(w.app) if w.app is not None else 0.0)
                   for w in self.workers)

    def progress_fraction(self) -> float:
        """Iterations done, plus the share of the current all-reduce received so far (INA:
        every worker gets the whole vector back; ring: each gets 2(n-1)/n of it; other
        algorithms count finished workers)."""
        done = float(len(self.iterations))
        if self.state != "running" or self._current is None:
            return done
        n, size = len(self.workers), self.job.workload.size_bytes
        expected = {"ina": n * size / 1024, "ring": 2 * (n - 1) * size / 1024}.get(self.algo)
        if expected:
            share = (self.progress_units() - self._units_at_start) / expected
        else:
            share = sum(w.done for w in self.workers) / n
        return done + min(0.999, max(0.0, share))


def _app_progress(app) -> float:
    """What an all-reduce app has received so far: INA results accepted, or in-order stream
    bytes (ring, baselines), in units of 1 KiB so both weigh alike."""
    session = getattr(app, "session", None)
    if app.algo == "ina":
        c = session.counters
        accepted = (c.packets_received - c.duplicates_ignored - c.foreign_ignored
                    - c.malformed_ignored)
        return float(accepted) * session.k * 4 / 1024
    receiver = getattr(app, "receiver", None)
    if receiver is not None:
        return receiver.next_expected / 1024
    receivers = getattr(app, "receivers", None) or {}
    return sum(r.next_expected for r in receivers.values()) / 1024


def _app_retransmissions(app) -> int:
    session = getattr(app, "session", None)
    if app.algo == "ina":
        return session.counters.retransmissions
    if hasattr(app, "senders"):
        return app.retransmissions
    return app.sender.counters.retransmissions


def _silence(app) -> None:
    """Stop an abandoned app: its timers, and any further effect of its packets."""
    app.outcome.finished_at = app.node.loop.now
    for name in ("_timer", "_rto_timer", "_stall_timer"):
        timer = getattr(app, name, None)
        if timer is not None:
            timer.cancel()
    for timer in getattr(app, "_rto_timers", {}).values():
        timer.cancel()
    app.on_end = lambda _app: None
    if app.outcome.error is None and app.outcome.result is None:
        app.outcome.error = "abandoned (re-planned)"
