"""The cost of one RESULT at an INA worker: `python scripts/bench_ina_result.py [--chunks N]`.

One worker (n = 1: the switch's RESULT of a chunk is its CONTRIB with the kind and count
changed, so no network is needed) on a native-core host whose uplink only collects the frames;
the harness turns each frame sent into its RESULT and hands it to the host's UDP 48879
listener: the worker's Python `_on_datagram` (InaSession.receive, `_apply`) or the native
core's C listener (inaemu/sim/native/inaworker.c). Prints the microseconds per RESULT of
each (CPU time of the listener calls alone, best of --repeat) and their ratio, and with
`--profile` where the Python path's time goes (cProfile, by function).
Numbers, not assertions (docs/sim-native.md, "The INA worker's per-packet path in C").
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

from hosts.ina_session import InaSession
from hosts.ina_wire import INA_UDP_PORT
from inaemu.sim.frames import PROTO_UDP, Addressing, Datagram, parse
from inaemu.sim.ina_worker import InaWorker
from inaemu.sim.native import native_classes, why_not

HOST_IP, AGGREGATOR_IP = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 254])


class Collector:
    """An uplink that keeps the frames sent."""

    def __init__(self):
        self.frames: list[bytes] = []

    def send(self, frame, on_left=None):
        self.frames.append(frame)


def result_of(frame: bytes) -> Datagram:
    """The RESULT an n = 1 switch returns for the CONTRIB in `frame`."""
    payload = parse(frame).payload
    kind = 3 if payload[0] == 2 else 1        # MAX_CONTRIB -> MAX_RESULT, CONTRIB -> RESULT
    result = bytes((kind,)) + payload[1:12] + b"\x00\x01" + payload[14:]
    return Datagram(PROTO_UDP, AGGREGATOR_IP, HOST_IP, INA_UDP_PORT, INA_UDP_PORT, result)


def one_call(chunks: int, fast: bool,
             profiler: cProfile.Profile | None = None) -> tuple[float, int]:
    """CPU seconds of the RESULTs of one call of `chunks` chunks, and how many there were."""
    classes = native_classes()
    loop = classes.loop()
    node = classes.host(loop, "h1", Addressing(b"\x02" * 6, HOST_IP, b"\x04" * 6))
    uplink = node.uplink = Collector()
    if not fast:
        node.ina_listener = None                  # the worker's Python _on_datagram
    session = InaSession(job=1, worker=0, n=1, k=32, pool_size=256, window=256, rto=0.01,
                         rto_max=0.1, max_retx=5)
    vector = np.random.default_rng(0).standard_normal(chunks * 32).astype(np.float32)
    worker = InaWorker(node, session, AGGREGATOR_IP, vector, lambda _w: None)
    worker.start()
    listener = node.handlers[(PROTO_UDP, INA_UDP_PORT)]
    assert (listener == worker._on_datagram) != fast
    results, elapsed = 0, 0.0
    while uplink.frames and not worker.outcome.finished:
        batch = [result_of(frame) for frame in uplink.frames]
        uplink.frames.clear()
        start = time.process_time()
        if profiler is not None:
            profiler.enable()
        for datagram in batch:
            listener(datagram)
        if profiler is not None:
            profiler.disable()
        elapsed += time.process_time() - start
        results += len(batch)
    assert worker.outcome.finished, "the call did not end"
    return elapsed, results


def main() -> int:
    parser = argparse.ArgumentParser(prog="python scripts/bench_ina_result.py")
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if native_classes() is None:
        print(f"no native core: {why_not()}")
        return 1
    best = {}
    for fast in (False, True):
        runs = [one_call(args.chunks, fast) for _ in range(args.repeat)]
        seconds, results = min(runs)
        best[fast] = seconds / results * 1e6
        print(f"{'C listener' if fast else 'Python _on_datagram':<22} {results:,} RESULTs "
              f"{best[fast]:6.2f} us each (CPU, best of {args.repeat})")
    print(f"ratio {best[False] / best[True]:.1f}x")
    if args.profile:
        profiler = cProfile.Profile()
        one_call(args.chunks, False, profiler)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
