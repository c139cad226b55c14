"""How many aggregation packets per second the runtime processes in-process for p4src/ina.p4.

    .venv/bin/python scripts/bench_ina_switch.py [--k 32 256] [--workers 4] [--rounds 2000]

For each k, compiles ina.p4 with -D INA_K=k, configures one job of `--workers` workers, and
feeds the switch contributions in protocol order (every slot of the pool, alternating versions,
every worker once per slot) through `Switch.receive`, so the mix is (n-1) absorbed
contributions and one completing contribution with an n-way multicast per cell. It also times
plain routed UDP on the same program for scale. Prints packets/s and per-packet microseconds;
no assertion is timed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from p4switch.compiler import compile_file  # noqa: E402
from p4switch.runtime import ExactKey, LpmKey, Switch  # noqa: E402
from tests.ina.packets import CONTRIB, Endpoint, eth_ipv4_udp, ina_packet, ip  # noqa: E402

SWITCH_MAC = 0x000000000100
AGGREGATOR = Endpoint(SWITCH_MAC, ip("10.0.0.254"))
JOB, POOL = 1, 64


def host(w: int) -> Endpoint:
    return Endpoint(0x080000000000 | (w + 1), ip(f"10.0.{w + 1}.1"))


def control_plane(n: int) -> list[tuple]:
    """One root job of n workers (ports 1..n), as operations any switch can apply:
    ("table", table, keys, action, params) with keys ExactKey/LpmKey, ("mcast", mgid, members)."""
    ops: list[tuple] = [
        ("table", "ina_aggregator_addresses", [ExactKey(AGGREGATOR.addr)], "ina_aggregate_here",
         ()),
        ("table", "ina_jobs", [ExactKey(AGGREGATOR.addr), ExactKey(JOB)], "ina_root_job",
         (0, POOL, n, JOB, n))]
    for w in range(n):
        ops += [("table", "ina_workers", [ExactKey(JOB), ExactKey(w)], "ina_worker_port",
                 (w + 1,)),
                ("table", "ina_result_addresses", [ExactKey(JOB), ExactKey(w)],
                 "ina_address_result", (host(w).mac, host(w).addr)),
                ("table", "ipv4_lpm", [LpmKey(host(w).addr & 0xFFFFFF00, 24)], "ipv4_forward",
                 (host(w).mac, w + 1))]
    ops.append(("mcast", JOB, [(w + 1, w) for w in range(n)]))
    return ops


def apply_control_plane(sw, ops: list[tuple]) -> None:
    """Install `ops` (control_plane) through the runtime's API."""
    for op in ops:
        if op[0] == "table":
            sw.table_add(op[1], op[2], op[3], op[4])
        else:
            sw.mc_group_set(op[1], op[2])


def ina_bmv2_json(k: int) -> dict:
    """inaemu's BMv2 JSON of ina.p4 with INA_K=k."""
    return compile_file(str(ROOT / "p4src" / "ina.p4"), defines={"INA_K": str(k)}).bmv2


def configured_switch(k: int, n: int, program=None) -> Switch:
    """A runtime switch of ina.p4 (inaemu's JSON, or `program`) with one job of n workers."""
    sw = Switch(program if program is not None else ina_bmv2_json(k))
    apply_control_plane(sw, control_plane(n))
    return sw


def contributions(k: int, n: int, cells: int) -> list[tuple[int, bytes]]:
    """`cells` rounds in protocol order: chunk c uses slot c mod POOL, version (c div POOL) mod 2."""
    packets = []
    for chunk in range(cells):
        slot, ver = chunk % POOL, (chunk // POOL) % 2
        for w in range(n):
            values = [(chunk * 31 + w * 7 + i) - 1000 for i in range(k)]
            packets.append((w + 1, ina_packet(host(w), AGGREGATOR, kind=CONTRIB, job=JOB,
                                              worker=w, slot=slot, ver=ver, chunk=chunk,
                                              values=values)))
    return packets


def rate(sw: Switch, packets: list[tuple[int, bytes]]) -> tuple[float, int]:
    """(packets per second, packets out) for receiving `packets` one by one."""
    out = 0
    start = time.perf_counter()
    for port, data in packets:
        out += len(sw.receive(port, data))
    return len(packets) / (time.perf_counter() - start), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2000, help="cells completed per k")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per k on a fresh switch; the best is shown (shared machines)")
    args = parser.parse_args(argv)
    n = args.workers
    print(f"{'k':>4} {'aggregation pkt/s':>18} {'us/pkt':>8} {'values/s':>12} "
          f"{'routed pkt/s':>13} {'ratio':>6}")
    for k in args.k:
        packets = contributions(k, n, args.rounds)
        plain = eth_ipv4_udp(host(0), Endpoint(SWITCH_MAC, host(1).addr), bytes(16 + 4 * k),
                             sport=5000, dport=5000)
        agg_pps = routed_pps = 0.0
        for _ in range(args.repeat):
            sw = configured_switch(k, n)
            rate(sw, [(1, plain)] * 200)                 # warm up
            pps, out = rate(sw, packets)
            if out != args.rounds * n:                   # every cell multicasts to n workers
                print(f"k={k}: expected {args.rounds * n} results, got {out}", file=sys.stderr)
                return 1
            agg_pps = max(agg_pps, pps)
            routed_pps = max(routed_pps, rate(sw, [(1, plain)] * len(packets))[0])
        print(f"{k:>4} {agg_pps:>18,.0f} {1e6 / agg_pps:>8.1f} {agg_pps * k:>12,.0f} "
              f"{routed_pps:>13,.0f} {routed_pps / agg_pps:>6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
