"""The native switch port's entry into the runtime: `python scripts/bench_native_entry.py [P4]`.

Frames into one port of a native-core switch (inaemu/sim/native/switchports.c) running a P4
program that needs no control plane (default tests/ports/backpressure.p4), out of another port
over an unshaped link; CPU microseconds per frame for the whole loop (event, port, runtime,
link), once with the direct entry into the runtime's fast path (`Switch.direct_entry`) and once
through `Switch.receive` and `queue_next_due` (a Switch whose `direct_entry` says None), in
alternation in one process, best of `--repeat`. Numbers, not assertions (docs/sim-native.md, "The
switch runtime's entry").
"""

from __future__ import annotations

import argparse
import random
import struct
import time
from pathlib import Path

from p4switch.compiler import compile_file
from p4switch.runtime import Switch

from inaemu.sim.cores import core_classes
from inaemu.sim.switch_node import SwitchCost

DEFAULT_PROGRAM = Path(__file__).parents[1] / "tests" / "ports" / "backpressure.p4"


class ViaReceive(Switch):
    """Every frame through `receive` (and `queue_next_due`), as before the direct entry."""

    def direct_entry(self):
        return None


def udp_frame(sport: int, size: int) -> bytes:
    """A UDP frame of `size` bytes from 10.7.0.1 to 10.7.0.2 port 7777."""
    payload = bytes(size - 14 - 20 - 8)
    udp = struct.pack("!HHHH", sport, 7777, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 7, 0, 1]), bytes([10, 7, 0, 2]))
    return bytes.fromhex("0000000700020000000700010800") + ip + udp


def per_frame_us(program: dict, runtime_class: type, frames: int) -> float:
    classes = core_classes("native")
    loop = classes.loop()
    runtime = runtime_class(None)
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(1e-6, 0, 0), queue_packets=frames,
                          switch=runtime)
    runtime.load_config(program)
    link = classes.link(loop, "s1:2", "h2:1", bw_bps=None, delay_s=1e-6, loss=0.0,
                        rng=random.Random(1), deliver=lambda _frame: None)
    node.attach_egress(2, link)
    sample = [udp_frame(1000 + i % 7, 200 + 13 * i) for i in range(64)]
    ingress = node.ingress(1)
    for i in range(frames):
        loop.post(i * 2e-6, ingress, sample[i % 64])
    started = time.process_time()
    loop.run(until=1e9)
    spent = time.process_time() - started
    if node.processed != frames:
        raise SystemExit(f"only {node.processed} of {frames} frames were served")
    return spent / frames * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/bench_native_entry.py")
    parser.add_argument("program", nargs="?", default=str(DEFAULT_PROGRAM))
    parser.add_argument("--frames", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    core_classes("native")              # CoreUnavailable, saying why, if there is none
    program = compile_file(args.program).bmv2
    receive, direct = float("inf"), float("inf")
    for _ in range(args.repeat):
        receive = min(receive, per_frame_us(program, ViaReceive, args.frames))
        direct = min(direct, per_frame_us(program, Switch, args.frames))
    print(f"{Path(args.program).name}: CPU us per frame, best of {args.repeat}: "
          f"through Switch.receive {receive:.2f}, direct entry {direct:.2f} "
          f"({receive / direct:.2f}x, {receive - direct:.2f} us less)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
