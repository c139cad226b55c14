"""The points of a sweep as tasks on a Dask distributed cluster (the optional `cluster` extra).

A sweep is many independent runs; `map_points` hands each one to a Dask worker and gives the
results back in the points' order, so whatever is written from them is what a serial run writes
(simulator runs are deterministic: same seeds, same numbers). Mininet points must not share a
machine — one Mininet per server — so they ask for the "mininet" resource (a server's worker
offers 1: `dask worker ADDRESS --nthreads 1 --resources mininet=1`) and, in case two workers on
one server offer it, also take a cluster-wide lock named after the worker's host.

`--dask` values: `local` (a LocalCluster of one process per core), `local:N` (N processes), or a
scheduler address (`tcp://host:8786`, `host:8786`).
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

MININET_RESOURCE = "mininet"
EXTRA_HINT = "pip install 'inaemu[cluster]' (dask[distributed])"


class DaskError(Exception):
    """A bad --dask value, Dask not installed, or a cluster that cannot run the sweep."""


@dataclass(frozen=True)
class DaskTarget:
    """Where the tasks run: a scheduler `address`, or a LocalCluster of `processes` (address
    None)."""
    address: str | None = None
    processes: int = 1

    @property
    def local(self) -> bool:
        return self.address is None

    def describe(self) -> str:
        return f"a LocalCluster of {self.processes} processes" if self.local \
            else f"the Dask scheduler at {self.address}"


def parse_target(text: str) -> DaskTarget:
    """`local`, `local:N` or a scheduler address."""
    text = text.strip()
    if text == "local":
        return DaskTarget(processes=max(os.cpu_count() or 1, 1))
    if text.startswith("local:"):
        count = text[len("local:"):]
        if not count.isdigit() or int(count) < 1:
            raise DaskError(f"--dask {text}: expected local:N with N >= 1 processes")
        return DaskTarget(processes=int(count))
    host = text.split("://", 1)[-1]
    if not host or ":" not in host or not host.rsplit(":", 1)[1].isdigit():
        raise DaskError(f"--dask {text!r}: expected local, local:N or a scheduler address "
                        f"such as tcp://HOST:8786")
    return DaskTarget(address=text)


def target_from(dask: str | None, parallel: int) -> DaskTarget | None:
    """The target of `--dask`/`--parallel`: None means serial, in this process. `--parallel N`
    with N > 1 and no `--dask` is a LocalCluster of N processes."""
    if parallel < 1:
        raise DaskError(f"--parallel {parallel}: expected 1 or more processes")
    if dask is not None:
        target = parse_target(dask)
        if target.local and parallel > 1:
            target = DaskTarget(processes=parallel)
        return target
    return DaskTarget(processes=parallel) if parallel > 1 else None


def require_distributed():
    try:
        import distributed
    except ImportError:
        raise DaskError(f"--dask needs Dask distributed, which is not installed: "
                        f"{EXTRA_HINT}") from None
    return distributed


def call_pickled(function_blob: bytes, point_blob: bytes, one_per_host: bool) -> bytes:
    """The task each worker runs: function and point arrive pickled by cloudpickle (so a script's
    own classes travel by value; Dask's plain pickle would send them by a module name the worker
    cannot import), and so does the result."""
    import cloudpickle
    function = cloudpickle.loads(function_blob)
    if one_per_host:
        function = OneMininetPerHost(function)
    return cloudpickle.dumps(function(cloudpickle.loads(point_blob)))


class OneMininetPerHost:
    """Runs `function` holding a cluster-wide lock named after this worker's host, so two
    Mininet networks never run on one server at once (picklable: a plain class)."""

    def __init__(self, function: Callable):
        self.function = function

    def __call__(self, point):
        from distributed import Lock
        with Lock(f"inaemu-mininet-{socket.gethostname()}"):
            return self.function(point)


def _client(target: DaskTarget, mininet: bool):
    distributed = require_distributed()
    import logging
    if target.local:
        cluster = distributed.LocalCluster(
            n_workers=target.processes, threads_per_worker=1, processes=True,
            resources={MININET_RESOURCE: 1}, dashboard_address=None,
            silence_logs=logging.ERROR)
        return distributed.Client(cluster), cluster
    try:
        client = distributed.Client(target.address, timeout=30)
    except OSError as error:
        raise DaskError(f"--dask {target.address}: no scheduler answered: {error}") from None
    if mininet:
        workers = client.scheduler_info(n_workers=-1)["workers"].values()
        if not any(w.get("resources", {}).get(MININET_RESOURCE) for w in workers):
            client.close()
            raise DaskError(f"--dask {target.address}: no worker offers the '{MININET_RESOURCE}' "
                            f"resource; start one worker per server as root with "
                            f"`dask worker {target.address} --nthreads 1 "
                            f"--resources {MININET_RESOURCE}=1`")
    return client, None


def map_points(function: Callable, points: Sequence, target: DaskTarget, *,
               mininet: bool = False,
               done: Callable[[int, object], None] | None = None) -> list:
    """`[function(p) for p in points]`, each call a Dask task; `done(index, result)` as each
    finishes (in completion order). A task's exception is raised here, as a serial run would."""
    distributed = require_distributed()
    client, cluster = _client(target, mininet)
    try:
        import cloudpickle
        blob = cloudpickle.dumps(function)
        resources = {MININET_RESOURCE: 1} if mininet else None
        futures = [client.submit(call_pickled, blob, cloudpickle.dumps(point), mininet,
                                 pure=False, resources=resources) for point in points]
        where = {future.key: index for index, future in enumerate(futures)}
        results: list = [None] * len(points)
        for future in distributed.as_completed(futures):
            index = where[future.key]
            results[index] = cloudpickle.loads(future.result())
            if done is not None:
                done(index, results[index])
        return results
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def pickle_module_by_value(module_name: str) -> None:
    """Ship a script's own functions to the workers with the task (a script such as
    scripts/sweep.py is not importable there); `__main__` already travels by value."""
    module = sys.modules.get(module_name)
    if module is None or module_name == "__main__":
        return
    import cloudpickle
    cloudpickle.register_pickle_by_value(module)
