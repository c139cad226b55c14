"""How fast one INA worker's protocol core runs alone: `python -m hosts.bench [--elems K] ...`.

One `InaSession` (n = 1) against an echo aggregator that turns each contribution into its
result by rewriting two header bytes, so the time measured is the session's own: quantizing,
encoding every chunk, decoding every result, placing it, timers. Prints packets (sent and
received) per second of wall time and microseconds per chunk, the best of `--repeat` runs
(the machine is shared). Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import time
from collections import deque

import numpy as np

from .ina_session import InaSession
from .ina_wire import Kind

_RESULT_OF = {Kind.CONTRIB: Kind.RESULT, Kind.MAX_CONTRIB: Kind.MAX_RESULT}


def echo(payload: bytes) -> bytes:
    """The aggregator's answer for a job of one worker: same values, kind RESULT, count 1."""
    kind = _RESULT_OF[payload[0]]
    return bytes((kind, payload[1] & 1)) + payload[2:12] + b"\x00\x01" + payload[14:]


def run_session(length: int, k: int, calls: int, adaptive: bool) -> tuple[float, int]:
    """(wall seconds, packets sent + received) for `calls` all-reduces of `length` floats."""
    session = InaSession(job=1, worker=0, n=1, k=k, pool_size=64, window=64, rto=0.02,
                         rto_max=0.5, max_retx=12, adaptive=adaptive)
    vector = np.random.default_rng(0).standard_normal(length).astype(np.float32)
    now = 0.0
    started = time.perf_counter()
    for _ in range(calls):
        pending = deque(session.start(vector, now).send)
        while pending:
            now += 1e-6
            pending.extend(session.receive(echo(pending.popleft()), now).send)
        if not (session.done and np.all(np.abs(session.result - vector) <= session.error_bound())):
            raise AssertionError("the echo all-reduce did not return the input")
    wall = time.perf_counter() - started
    counters = session.counters
    return wall, counters.packets_sent + counters.packets_received


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hosts.bench")
    parser.add_argument("--elems", type=int, default=32, help="values per packet (k)")
    parser.add_argument("--length", type=int, default=1 << 18, help="floats per call")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    chunks = -(-args.length // args.elems) * args.calls
    for adaptive in (True, False):
        wall, packets = min(run_session(args.length, args.elems, args.calls, adaptive)
                            for _ in range(max(1, args.repeat)))
        print(f"session (k={args.elems}, {'adaptive' if adaptive else 'fixed'} rto): "
              f"{packets / wall:,.0f} packets/s, {1e6 * wall / chunks:.1f} us per chunk "
              f"({chunks} chunks in {wall:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
