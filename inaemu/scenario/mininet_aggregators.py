"""A Mininet scenario job's host aggregators under hashed sharing (docs/protocol.md §3.3): one
set per placement of the job (`hosts.fallback_udp`, one, or one per tree switch), started with
the placement and told to stop (SIGTERM: they write their counters and exit) when it goes.
This keeps their processes, which of them listen, which are still stopping, and every one the
job had (their counters, read at the end); the job's life (inaemu/scenario/mininet_job.py)
decides what their messages mean for it."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

from inaemu.experiment.host_aggregators import (LISTENING_LINE, HostAggregatorSpec,
                                                flat_aggregator, start_aggregator,
                                                tier_aggregators)


class PlacementAggregators:
    """The host aggregators of one job (`owner`), over its placements."""

    def __init__(self, owner):
        self.owner = owner
        self.processes: list[subprocess.Popen] = []      # the current placement's
        self.specs: list[HostAggregatorSpec] = []
        self.of: int | None = None                        # their placement's P4 job id
        self.listening: set[int] = set()
        self.stopping: dict[int, int] = {}        # P4 job id -> its aggregators still running
        self.every_spec: list[HostAggregatorSpec] = []
        self.listened: set[Path] = set()          # (their stats files) the ones that listened

    def start(self, net, topology, placement, *, k: int, pool_size: int, prefix: Path,
              messages: queue.Queue) -> None:
        """The placement's host aggregators: at a single switch one, on the worker host the
        controller chose; a tree's one per tree switch, on the job's worker host nearest it.
        Their readers put (owner, P4 job id, None, {"listening": index} | {"exited": index,
        "status": code}) on `messages`."""
        if placement.tree:
            specs = tier_aggregators(topology, placement.p4_job, placement.summary, k=k,
                                     pool_size=pool_size, stats_prefix=prefix)
        else:
            specs = [flat_aggregator(
                job=placement.p4_job, host=placement.fallback_host, k=k, first_slot=0,
                pool_size=pool_size, worker_ips=[topology.host(h).ip for h in placement.workers],
                port=placement.fallback_port, via_switch=placement.addresses[0], hashed=True,
                stats=prefix.with_suffix(".json"))]
        self.of, self.specs = placement.p4_job, specs
        for index, spec in enumerate(specs):
            process = start_aggregator(net, spec, spec.stats.with_suffix(".log"),
                                       stdout=subprocess.PIPE)
            self.processes.append(process)
            self.every_spec.append(spec)
            threading.Thread(target=_read_aggregator, daemon=True,
                             args=(messages, self.owner, placement.p4_job, index,
                                   process)).start()

    def stop(self, retired: list[subprocess.Popen]) -> None:
        """SIGTERM to the current placement's; they join `retired` (their readers reap them;
        the engine waits for any left at the end)."""
        retired[:] = [process for process in retired if process.poll() is None]
        if self.processes:
            self.stopping[self.of] = len(self.processes)
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
            retired.append(process)
        self.processes, self.specs, self.listening = [], [], set()

    def stopped_one(self, p4_job: int) -> bool | None:
        """An aggregator of placement `p4_job` told to stop has exited: True when it was the
        last of them, False if others are still stopping, None if none was told to stop."""
        if p4_job not in self.stopping:
            return None
        self.stopping[p4_job] -= 1
        if self.stopping[p4_job]:
            return False
        del self.stopping[p4_job]
        return True

    def listens(self, index: int) -> None:
        self.listening.add(index)
        self.listened.add(self.specs[index].stats)

    def all_listen(self) -> bool:
        return len(self.listening) >= len(self.processes)

    def host_chunks(self) -> int | None:
        """The chunks the flat ones and the trees' root ones completed, from the counters each
        wrote when it stopped (None: the job had none, or one that listened wrote none). One
        stopped before it listened (still starting: SIGTERM's default action ended it) was
        sent nothing and completed nothing."""
        completing = [spec for spec in self.every_spec if spec.completes]
        if not completing:
            return None
        total = 0
        for spec in completing:
            if spec.stats not in self.listened:
                continue
            try:
                total += json.loads(spec.stats.read_text())["results_multicast"]
            except (OSError, ValueError, KeyError):
                return None
        return total


def _read_aggregator(messages: queue.Queue, owner, p4_job: int, index: int,
                     process: subprocess.Popen) -> None:
    """A host aggregator's first line (printed once its socket is bound) as a `listening`
    message; its end as an `exited` one."""
    with process.stdout:
        if process.stdout.readline().startswith(LISTENING_LINE):
            messages.put((owner, p4_job, None, {"listening": index}))
        for _ in process.stdout:
            pass
    messages.put((owner, p4_job, None, {"exited": index, "status": process.wait()}))
