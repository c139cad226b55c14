"""One worker of a scenario's job on a Mininet host: many calls, each when the engine says go.

`python -m hosts.scenario_agent --config FILE` opens its `Allreducer` (INA or a host
algorithm), says `{"ready": ...}` on stdout, then for each `{"go": i, "compute_s": c}` line on
stdin sleeps `c` seconds (the iteration's compute), all-reduces iteration i's seeded gradient,
checks the sum against the float64 reference within the algorithm's bound, and says
`{"done": i, ...}`. While a call runs it says `{"progress": bytes, "t": ...}` when the bytes
it received grew (within 2 ms after a pause, every 50 ms while they flow). `{"stop": true}`
or the end of stdin ends it. A failed call says `{"error": ..., "iteration": i}` and exits 1.
One JSON object per line; times are wall-clock seconds (`time.time()`, shared by every host
of one machine).

The job's driver (inaemu/scenario/mininet_job.py) holds the barrier between iterations and,
when a job is re-planned, kills this process and starts another on the new placement.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import zlib

from hosts.agent import gradient, verify_result
from hosts.api import Allreducer, AllreduceConfig
from hosts.errors import HostError

STALL_POLL_S = 0.002         # how often the bytes received are looked at while they stall
REPORT_EVERY_S = 0.05        # and while they flow
AGENT_KEYS = ("algo", "rank", "length", "seed_base", "magnitude")


class _Out:
    """Lines to the engine, one writer at a time (the call and the progress thread)."""

    def __init__(self):
        self.lock = threading.Lock()

    def say(self, **fields) -> None:
        line = json.dumps(fields)
        with self.lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def iteration_seed(seed_base: int, iteration: int) -> int:
    """The seed of an iteration's gradients (inaemu/scenario/sim_engine.py uses the same)."""
    return seed_base * 1_000_003 + iteration


def _watch(worker: Allreducer, out: _Out, stop: threading.Event) -> None:
    """Says `progress` when the bytes received grew. While they flow it looks every
    REPORT_EVERY_S; once they did not grow between two looks it looks every STALL_POLL_S, so
    the first progress after a pause (what the engine times recoveries from) is reported
    within a few ms. (Looking every 2 ms throughout woke this thread 500 times a second to
    compete for the GIL with the call's own thread: ResNet-50's ring over 16 ranks at
    10 Mbit/s took 5 % longer on Mininet.)"""
    last, interval = -1, STALL_POLL_S
    while not stop.wait(interval):
        received = worker.bytes_received_so_far()
        if received == last:
            interval = STALL_POLL_S
            continue
        out.say(progress=received, t=time.time())
        last, interval = received, REPORT_EVERY_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hosts.scenario_agent")
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    with open(args.config) as f:
        data = json.load(f)
    agent = {key: data.pop(key) for key in AGENT_KEYS if key in data}
    config = AllreduceConfig.from_dict(data)
    out = _Out()
    algo, length = agent["algo"], agent["length"]
    iteration = None
    try:
        with Allreducer(config, algo=algo) as worker:
            out.say(ready=True, t=time.time())
            for line in sys.stdin:
                command = json.loads(line)
                if command.get("stop"):
                    break
                if "graph" in command:
                    _run_graph(worker, command, agent, config, out)
                    continue
                iteration = command["go"]
                time.sleep(command.get("compute_s", 0.0))
                fields = _call(worker, iteration, length, agent, config, out)
                out.say(done=iteration, **fields)
    except (HostError, OSError) as error:
        out.say(error=str(error), iteration=iteration, t=time.time())
        return 1
    return 0


def _input(agent: dict, index: int, length: int):
    """Call `index`'s seeded gradient of this rank."""
    return gradient(iteration_seed(agent["seed_base"], index), agent["rank"], length,
                    agent.get("magnitude", 1.0))


def _check(agent: dict, config, index: int, x, result, stats) -> dict:
    """Call `index`'s result against the float64 sum of every rank's seeded gradient, within
    the algorithm's bound: the error fields."""
    return verify_result(agent["algo"], iteration_seed(agent["seed_base"], index),
                         agent["rank"], x.size, agent.get("magnitude", 1.0), config, x, result,
                         stats, None)


def _call(worker: Allreducer, index: int, length: int, agent: dict, config, out: _Out) -> dict:
    """One all-reduce of call `index`'s seeded gradient, checked; the fields to report."""
    x = _input(agent, index, length)
    result, fields = _timed_call(worker, index, x, out)
    return {**fields, **_check(agent, config, index, x, result, worker.stats)}


def _timed_call(worker: Allreducer, index: int, x, out: _Out):
    """All-reduce `x` as call `index`, reporting progress: (result, timing fields)."""
    started = time.time()
    out.say(started=index, t=started)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(worker, out, stop), daemon=True)
    watcher.start()
    try:
        result = worker.allreduce(x)
    finally:
        stop.set()
        watcher.join()
    ended = time.time()
    return result, {"t": ended, "started_t": started, "seconds": worker.stats.seconds,
                    "retransmissions": worker.stats.retransmissions}


def _tx_bytes() -> int:
    """Bytes this host's interfaces sent (Ethernet frames), from this network namespace's
    /proc/net/dev; 0 where it cannot be read."""
    try:
        lines = open("/proc/net/dev").read().splitlines()[2:]
    except OSError:
        return 0
    total = 0
    for line in lines:
        name, _, counters = line.partition(":")
        fields = counters.split()
        if name.strip() != "lo" and len(fields) > 8:
            total += int(fields[8])
    return total


def _digest(result) -> str:
    """A checksum of a call's result: every rank of a correct all-reduce holds the same bytes
    (DDP's replicas must stay identical), so the engine compares these across ranks."""
    return f"{zlib.crc32(memoryview(result).cast('B')):08x}:{result.size}"


def _run_graph(worker: Allreducer, command: dict, agent: dict, config, out: _Out) -> None:
    """This rank's workload graph (inaemu/workload/graph.py, as JSON nodes): compute nodes one
    at a time in dependency order (ties by id) on this thread, collectives one at a time in
    issue order on another, overlapping it (the simulator's schedule, inaemu/scenario/
    graph_run.py).

    Untimed work stays off the timeline, as a GPU's backward pass makes the gradients the
    network moves: before it, the calls' inputs are drawn (up to `prefetch_bytes`; the rest
    just before their call), then `prepared` is said and the graph starts at `begin`; after
    it, this rank checks against the float64 sum the calls whose index is its rank modulo the
    ranks (the check needs every rank's gradient: done by all ranks for all calls it took
    O(n^2) work between the calls). Each call reports `call_done` with its result's digest,
    then `graph_done` carries the timeline, the bytes sent and this rank's checks."""
    import heapq
    import queue as queues
    nodes = {n["id"]: n for n in command["graph"]}
    factor = command.get("compute_factor", 1.0)
    calls = command["calls"]                      # collective node ids in issue order
    rank, n = agent["rank"], config.n
    inputs, budget = {}, command.get("prefetch_bytes", 0)
    for index, node_id in enumerate(calls):
        size = nodes[node_id]["size_bytes"]
        if size > budget:
            break
        inputs[index], budget = _input(agent, index, size // 4), budget - size
    out.say(prepared=True, t=time.time())
    line = sys.stdin.readline()
    if not line or not json.loads(line).get("begin"):
        raise HostError("the engine did not say begin")
    waiting = {i: set(n["deps"]) for i, n in nodes.items()}
    users: dict[int, list[int]] = {}
    for i, node in nodes.items():
        for d in node["deps"]:
            users.setdefault(d, []).append(i)
    done: set[int] = set()
    changed = threading.Condition()
    ready_compute = [i for i, w in waiting.items() if not w and nodes[i]["kind"] == "compute"]
    heapq.heapify(ready_compute)
    ready_calls = {i for i, w in waiting.items() if not w and nodes[i]["kind"] != "compute"}
    to_comm: queues.Queue = queues.Queue()
    timeline: list = []
    failure: list = []
    to_check: dict[int, tuple] = {}               # call index -> (input, result, stats)
    compute_s = 0.0
    sent_before = _tx_bytes()
    began = time.time()

    def finish(node_id: int) -> None:            # under `changed`
        done.add(node_id)
        for user in users.get(node_id, ()):
            waiting[user].discard(node_id)
            if not waiting[user]:
                if nodes[user]["kind"] == "compute":
                    heapq.heappush(ready_compute, user)
                else:
                    ready_calls.add(user)
        changed.notify_all()

    def communicate() -> None:
        for index in range(len(calls)):
            node_id = to_comm.get()
            if node_id is None:
                return
            try:
                x = inputs.pop(index, None)
                if x is None:
                    x = _input(agent, index, nodes[node_id]["size_bytes"] // 4)
                result, fields = _timed_call(worker, index, x, out)
            except (HostError, OSError) as error:
                failure.append(f"call {index}: {error}")
                with changed:
                    changed.notify_all()
                return
            if index % n == rank:
                to_check[index] = (x, result, worker.stats)
            out.say(call_done=index, digest=_digest(result), **fields)
            timeline.append(("all_reduce", f"bucket {index}", fields["started_t"] - began,
                             fields["t"] - began))
            with changed:
                finish(node_id)

    comm = threading.Thread(target=communicate, daemon=True)
    comm.start()
    issued = 0
    with changed:
        while len(done) < len(nodes) and not failure:
            while issued < len(calls) and calls[issued] in ready_calls:
                ready_calls.discard(calls[issued])
                to_comm.put(calls[issued])
                issued += 1
            if ready_compute:
                node_id = heapq.heappop(ready_compute)
                seconds = nodes[node_id]["duration_s"] * factor
                start = time.time()
                changed.release()
                try:
                    time.sleep(seconds)
                finally:
                    changed.acquire()
                compute_s += seconds
                timeline.append(("compute", nodes[node_id].get("name", ""), start - began,
                                 time.time() - began))
                finish(node_id)
                continue
            changed.wait(0.5)
    ended = time.time()
    bytes_sent = _tx_bytes() - sent_before
    to_comm.put(None)
    if failure:
        raise HostError(failure[0])
    comm.join()
    checks = {index: _check(agent, config, index, *checked)
              for index, checked in sorted(to_check.items())}
    out.say(graph_done=True, t=ended, began_t=began, compute_s=compute_s, timeline=timeline,
            bytes_sent=bytes_sent, checks=checks)


if __name__ == "__main__":
    sys.exit(main())
