"""One worker of a scenario's job on a Mininet host: many calls, each when the engine says go.

`python -m hosts.scenario_agent --config FILE` opens its `Allreducer` (INA or a host
algorithm), says `{"ready": ...}` on stdout, then for each `{"go": i, "compute_s": c}` line on
stdin sleeps `c` seconds (the iteration's compute), all-reduces iteration i's seeded gradient,
checks the sum against the float64 reference within the algorithm's bound, and says
`{"done": i, ...}`. While a call runs it says `{"progress": bytes, "t": ...}` when the bytes
it received grew (every few ms at most). `{"stop": true}` or the end of stdin ends it. A failed
call says `{"error": ..., "iteration": i}` and exits 1. One JSON object per line; times are
wall-clock seconds (`time.time()`, shared by every host of one machine).

The engine (inaemu/scenario/mininet_engine.py) holds the barrier between iterations and,
when a job is re-planned, kills this process and starts another on the new placement.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from hosts.agent import gradient, verify_result
from hosts.api import Allreducer, AllreduceConfig
from hosts.errors import HostError

PROGRESS_EVERY_S = 0.002
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
    last = -1
    while not stop.wait(PROGRESS_EVERY_S):
        now = worker.bytes_received_so_far()
        if now != last:
            last = now
            out.say(progress=now, t=time.time())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hosts.scenario_agent")
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    with open(args.config) as f:
        data = json.load(f)
    agent = {key: data.pop(key) for key in AGENT_KEYS if key in data}
    config = AllreduceConfig.from_dict(data)
    out = _Out()
    algo, rank, length = agent["algo"], agent["rank"], agent["length"]
    magnitude = agent.get("magnitude", 1.0)
    iteration = None
    try:
        with Allreducer(config, algo=algo) as worker:
            out.say(ready=True, t=time.time())
            for line in sys.stdin:
                command = json.loads(line)
                if command.get("stop"):
                    break
                iteration = command["go"]
                time.sleep(command.get("compute_s", 0.0))
                seed = iteration_seed(agent["seed_base"], iteration)
                x = gradient(seed, rank, length, magnitude)
                started = time.time()
                out.say(started=iteration, t=started)
                stop = threading.Event()
                watcher = threading.Thread(target=_watch, args=(worker, out, stop), daemon=True)
                watcher.start()
                try:
                    result = worker.allreduce(x)
                finally:
                    stop.set()
                    watcher.join()
                ended = time.time()
                errors = verify_result(algo, seed, rank, length, magnitude, config, x, result,
                                       worker.stats, None)
                out.say(done=iteration, t=ended, started_t=started,
                        seconds=worker.stats.seconds,
                        retransmissions=worker.stats.retransmissions, **errors)
    except (HostError, OSError) as error:
        out.say(error=str(error), iteration=iteration, t=time.time())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
