"""The life of one scenario job as the controller sees it, the same on both engines.

A job arrives on hosts no other job holds, is placed (INA: a tree or a switch under a fresh
P4 job id), runs, and ends done or failed, giving its hosts back and its placement up. When a
failure hits its placement it is re-planned: its calls are stopped, the old placement removed,
a new one placed (or the job moves to the ring when no tree is left), and its calls restarted;
when its workers are cut off from each other it waits for a repair, at most
`options.repair_wait_s` (docs/protocol.md §8). What "calls" are differs: simulated apps on the
virtual clock (inaemu/scenario/sim_engine.py) or agent processes (mininet_job.py); each
engine's job class derives from `JobLife` and fills in the hooks below.

The engine gives: `now()`, `at(time, action, *args)` (a handle with `cancel()`), `stamp(time)`
(a time for progress lines), `control` (FabricControl), `busy_hosts`, `say`, `options`,
`scenario`, `job_ended(job)`.
"""

from __future__ import annotations

from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import Placement, PlacementRefused
from inaemu.scenario.results import IterationRecord, JobRecord


class JobLife:
    def __init__(self, engine, job: m.Job, index: int):
        self.engine = engine
        self.job = job
        self.index = index
        self.algo = job.algo              # what it runs now (INA may move to the ring)
        self.state = "waiting"            # running, done, failed
        self.arrived_s: float | None = None
        self.ended_s: float | None = None
        self.error: str | None = None
        self.placement: Placement | None = None
        self.placements: list[dict] = []
        self.suspended = None             # the give-up timer while cut off by a failure
        self.iterations: list[IterationRecord] = []
        self.retransmissions = 0
        # recovery: per time an event was acted on, the progress units then, until the job
        # progresses past them (then the time it did); O(events), not O(samples)
        self._watching: dict[float, float] = {}
        self._recovered: dict[float, float] = {}
        self._current: IterationRecord | None = None
        self._units_at_start = 0.0
        self._correct = True
        self.switch_chunks: int | None = None   # hashed: chunks its root switches completed
        self._switch_chunks_lost = False        # a root's counters went (it crashed) first

    # -- hooks (each engine's job class) ----------------------------------------------------------

    def _start_work(self) -> None:
        """Arrived and placed: begin the first iteration or call."""
        raise NotImplementedError

    def _stop_calls(self) -> None:
        """Stop every call in progress (a re-plan or the end); what they received stays
        counted in the progress."""
        raise NotImplementedError

    def _restart_calls(self) -> None:
        """After a re-plan: the current call again, on the new placement, from its start."""
        raise NotImplementedError

    def _placed(self, placement: Placement) -> None:
        """A new placement is installed (per-placement state starts over here)."""

    def _release(self) -> None:
        """The job has ended: drop what only its calls needed (vectors, sessions), so a long
        scenario's memory does not grow with the jobs it has run."""

    def progress_units(self) -> float:
        raise NotImplementedError

    def calls_planned(self) -> int:
        return self.job.workload.iterations

    def workload_summary(self) -> dict | None:
        return None

    def host_chunks(self) -> int | None:
        """Hashed sharing: the chunks its host aggregators (a tree's: the roots') completed,
        over all its placements (None: it had none)."""
        return None

    # -- arrival and end --------------------------------------------------------------------------

    def arrive(self) -> None:
        engine = self.engine
        taken = [h for h in self.job.workers if h in engine.busy_hosts]
        if taken:
            self._fail(f"its hosts {', '.join(taken)} still run job "
                       f"{engine.busy_hosts[taken[0]]} (one job per host at a time)")
            return
        for host in self.job.workers:
            engine.busy_hosts[host] = self.job.name
        self.state = "running"
        self.arrived_s = engine.now()
        engine.say(f"{engine.stamp(self.arrived_s)}  job {self.job.name} arrives ({self.algo}, "
                   f"{len(self.job.workers)} workers)")
        if self.algo == "ina":
            try:
                self._place()
            except PlacementRefused as refused:
                self._fail(f"cannot be placed: {refused}")
                return
        self._start_work()

    def _place(self) -> None:
        tree = self.engine.scenario.network.kind != "star" and \
            self.engine.options.aggregation == "tree"
        self.placement = self.engine.control.place(self.job.workers, root=self.job.root,
                                                   tree=tree)
        self.placements.append({"at_s": self.engine.now(), "p4_job": self.placement.p4_job,
                                "switches": list(self.placement.switches)})
        self._placed(self.placement)

    def _count_chunks(self, placement: Placement) -> None:
        """Before a hashed placement goes: the chunks its root switch completed itself (the
        rest, its host aggregator's, `host_chunks`)."""
        if placement.sharing != "hashed":
            return
        counted = self.engine.control.switch_chunks(placement)
        if counted is None:
            self._switch_chunks_lost = True
        else:
            self.switch_chunks = (self.switch_chunks or 0) + counted

    def _finish(self) -> None:
        self.state = "done"
        self._leave()

    def _fail(self, error: str) -> None:
        self.error = f"job {self.job.name}: {error}"
        self.engine.say(f"{self.engine.stamp(self.engine.now())}  {self.error}")
        was_running = self.state == "running"
        self.state = "failed"
        if was_running:
            self._stop_calls()
        if self._current is not None and self._current.ended_s is None:
            self._current.error = error
            self._current.correct = False
        self._leave()

    def _leave(self) -> None:
        engine = self.engine
        self.ended_s = engine.now()
        for host in self.job.workers:
            if engine.busy_hosts.get(host) == self.job.name:
                del engine.busy_hosts[host]
        if self.placement is not None and engine.control is not None:
            self._count_chunks(self.placement)
            engine.control.remove(self.placement)
        self.placement = None         # its plan (entries, groups) is gone from the switches too
        self._release()
        engine.job_ended(self)

    def give_up(self, reason: str) -> None:
        """The scenario ends (its time limit) with this job not done."""
        if self.state == "running":
            self._fail(reason)
        elif self.state == "waiting":
            self.error = f"job {self.job.name}: never started: {reason}"
            self.state = "failed"

    # -- failures ---------------------------------------------------------------------------------

    def replan(self, why: str) -> str:
        """The controller's answer to a failure on this job's placement; what it did."""
        from inaemu.scenario.fabric_control import connected
        engine = self.engine
        self._stop_calls()
        if self.placement is not None:
            self._count_chunks(self.placement)
            engine.control.remove(self.placement)
            self.placement = None
        if self._current is not None:
            self._current.restarts += 1
        self._units_at_start = self.progress_units()     # the call starts over
        try:
            self._place()
            action = (f"job {self.job.name}: re-planned on {', '.join(self.placement.switches)} "
                      f"(P4 job {self.placement.p4_job})")
        except PlacementRefused as refused:
            if not connected(engine.control.topology_now(), self.job.workers):
                return self._suspend(why, str(refused))
            self.algo = "ring"
            action = f"job {self.job.name}: no tree left ({refused}); moved to the ring"
        self.suspended = None
        engine.say(f"{engine.stamp(engine.now())}  {action}")
        self._restart_calls()
        return action

    def _suspend(self, why: str, reason: str) -> str:
        """Workers cut off from each other: wait for a repair, at most repair_wait_s."""
        engine = self.engine
        wait = engine.options.repair_wait_s
        if self.suspended is None:
            self.suspended = engine.at(engine.now() + wait, self._fail,
                                       f"its workers stayed cut off from each other for "
                                       f"{wait:g} s after {why} ({reason})")
        action = (f"job {self.job.name}: workers cut off from each other; waiting up to "
                  f"{wait:g} s for a repair")
        engine.say(f"{engine.stamp(engine.now())}  {action}")
        return action

    def repaired(self, why: str) -> str | None:
        """A repair was learnt: a job waiting for one is placed again."""
        if self.suspended is None or self.state != "running":
            return None
        self.suspended.cancel()
        self.suspended = None
        return self.replan(why)

    # -- progress and the record ------------------------------------------------------------------

    def _close_record(self, at: float) -> IterationRecord:
        """The call in progress ended at every worker at `at`: its record, completed (with the
        algorithm it ended on) and kept."""
        current = self._current
        current.ended_s = at
        current.allreduce_s = at - current.compute_done_s
        current.algo = self.algo
        self.iterations.append(current)
        self._current = None
        return current

    def watch_recovery(self, acted: float) -> None:
        """An event was acted on at `acted`: note when the job next makes progress."""
        self._watching.setdefault(acted, self.progress_units())

    def note_progress(self, at: float, units: float) -> None:
        """The job's progress units at `at` (the engines' samples)."""
        if self._watching:
            for acted, before in list(self._watching.items()):
                if at > acted and units > before:
                    self._recovered[acted] = at
                    del self._watching[acted]

    def first_progress_after(self, when: float) -> float | None:
        """The first sample after `when` (a time passed to `watch_recovery`) at which the job
        had progressed (None: never)."""
        return self._recovered.get(when)

    def record(self) -> JobRecord:
        return JobRecord(
            name=self.job.name, algo=self.job.algo, workers=self.job.workers,
            arrived_s=self.arrived_s, ended_s=self.ended_s,
            iterations_done=len(self.iterations), iterations=self.calls_planned(),
            correct=self._correct and self.error is None
            and len(self.iterations) == self.calls_planned(),
            error=self.error, retransmissions=self.retransmissions,
            placements=self.placements, final_algo=self.algo,
            workload=self.workload_summary(),
            switch_chunks=None if self._switch_chunks_lost else self.switch_chunks,
            host_chunks=self.host_chunks())
