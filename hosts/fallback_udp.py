"""The host aggregator (hosts/fallback.py) on a UDP socket: what a Mininet host runs.

    python -m hosts.fallback_udp --job 1 --k 64 --first-slot 8 --pool 32 \
        --workers 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4 [--port 48880] [--stats FILE.json]

A hashed tree job (docs/protocol.md §3.3, "Tiers") runs one per tree switch, `--workers`
being that switch's members (hosts, or child switches' aggregator addresses): the root's with
`--result-count` (the whole tree's workers), a child's with `--parent ADDRESS --member M`
(hosts/fallback_tier.py: its partial sums go up to the parent's aggregator address as the
child's member M there).

Binds UDP `--port` (default 48880, so it may share a host with a worker on 48879), feeds every
datagram to the aggregator and sends what it returns to the workers' port 48879. Runs until
SIGTERM or SIGINT, then writes its counters to `--stats` (JSON) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import select
import signal
import socket
import sys
import time
from pathlib import Path

from .fallback import FALLBACK_PORT, VIA_SWITCH, FallbackAggregator
from .fallback_tier import TIER_RTO, TIER_RTO_MAX, VIA_PARENT, TierAggregator
from .ina_header import INA_UDP_PORT

RECEIVE_BUFFER = 8 << 20
UDP_TIER_RTO_MAX = 0.1     # a tier's timer cap here (hosts/fallback_tier.py; the simulator: 10 ms)
MAX_DATAGRAM = 65535


class UdpFallbackServer:
    """One job's host aggregator on a bound UDP socket; `serve` until `stop()`."""

    def __init__(self, aggregator: FallbackAggregator, workers: list[str], *,
                 bind_address: str = "0.0.0.0", port: int = FALLBACK_PORT,
                 switch: str | None = None, parent: str | None = None):
        """`switch`: the aggregator address that multicasts replies meant for VIA_SWITCH;
        `parent`: a tier's parent aggregator address (replies meant for VIA_PARENT)."""
        if len(workers) != aggregator.n:
            raise ValueError(f"{len(workers)} worker addresses for a job of {aggregator.n}")
        self.aggregator = aggregator
        self.workers = [(address, INA_UDP_PORT) for address in workers]
        self.switch = None if switch is None else (switch, INA_UDP_PORT)
        self.parent = None if parent is None else (parent, INA_UDP_PORT)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        self.sock.bind((bind_address, port))
        self.sock.setblocking(False)
        self.send_errors = 0
        self._stopped = False

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def stop(self) -> None:
        self._stopped = True

    def close(self) -> None:
        self.sock.close()

    def serve(self, poll_s: float = 0.2) -> None:
        """Datagrams and the aggregator's timers (a tier's, hosts/fallback_tier.py) until
        `stop()`."""
        while not self._stopped:
            deadline = self.aggregator.next_deadline()
            wait = poll_s if deadline is None else \
                min(poll_s, max(0.0, deadline - time.monotonic()))
            try:
                readable, _, _ = select.select([self.sock], [], [], wait)
            except InterruptedError:
                continue
            if readable:
                self.drain()
            self.expire()

    def expire(self) -> int:
        """Whatever the aggregator's timers due now send; how many packets."""
        return self._send(self.aggregator.expire(time.monotonic()))

    def drain(self) -> int:
        """Every queued datagram through the aggregator; how many there were."""
        handled = 0
        while True:
            try:
                payload = self.sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return handled
            except ConnectionRefusedError:
                continue            # an ICMP error for an earlier send: that datagram is lost
            handled += 1
            self._send(self.aggregator.receive(payload, time.monotonic()))

    def _send(self, replies: list[tuple[int, bytes]]) -> int:
        for worker, reply in replies:
            try:
                self.sock.sendto(reply, self.switch if worker == VIA_SWITCH
                                 else self.parent if worker == VIA_PARENT
                                 else self.workers[worker])
            except OSError:
                self.send_errors += 1     # lost: the worker's recovery covers it
        return len(replies)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hosts.fallback_udp",
                                     description="a job's host aggregator (docs/fallback.md)")
    parser.add_argument("--job", type=int, required=True)
    parser.add_argument("--k", type=int, required=True, help="values per packet (INA_K)")
    parser.add_argument("--first-slot", type=int, required=True,
                        help="the job's switch pool P: slots P.. come here")
    parser.add_argument("--pool", type=int, required=True, help="the workers' pool W")
    parser.add_argument("--workers", required=True,
                        help="the workers' IPv4 addresses, comma-separated, in worker id order")
    parser.add_argument("--port", type=int, default=FALLBACK_PORT)
    parser.add_argument("--stats", type=Path, help="write the counters here (JSON) on exit")
    parser.add_argument("--via-switch", metavar="ADDRESS",
                        help="send each completed sum once to this aggregator address, which "
                             "multicasts it (default: once to every worker)")
    parser.add_argument("--hashed", action="store_true",
                        help="the job draws from the switch's hashed shared pool "
                             "(docs/protocol.md §3.3): any slot may come here")
    parser.add_argument("--result-count", type=int, metavar="N",
                        help="a hashed tree's root: the tree's workers, what its sums count "
                             "(default: the members)")
    parser.add_argument("--parent", metavar="ADDRESS",
                        help="a hashed tree's child tier: the parent's aggregator address, "
                             "where its partial sums go (with --member, --hashed, "
                             "--via-switch, --first-slot 0)")
    parser.add_argument("--member", type=int, metavar="M",
                        help="--parent: this tier's member id at the parent")
    parser.add_argument("--tier-rto-max", type=float, default=UDP_TIER_RTO_MAX,
                        metavar="SECONDS",
                        help="--parent: the cap of the tier's own timer, which sends a waiting "
                             "partial sum up again (0: no timer; default %(default)s: real "
                             "hosts' round trips are longer than the simulator's, and a "
                             "10 ms cap flooded a Mininet fat-tree with resends)")
    args = parser.parse_args(argv)
    workers = [w for w in args.workers.split(",") if w]
    if (args.parent is None) != (args.member is None):
        parser.error("--parent and --member go together")
    if args.tier_rto_max < 0:
        parser.error("--tier-rto-max must be 0 (no timer) or a positive number of seconds")
    if args.parent is not None and (not args.hashed or args.via_switch is None
                                    or args.first_slot != 0 or args.result_count is not None):
        parser.error("--parent (a child tier) needs --hashed, --via-switch and --first-slot 0, "
                     "and takes its count from the parent (no --result-count)")
    try:
        if args.parent is not None:
            aggregator = TierAggregator(job=args.job, n=len(workers), k=args.k,
                                        pool_size=args.pool, parent_member=args.member,
                                        rto=args.tier_rto_max or TIER_RTO,
                                        rto_max=args.tier_rto_max or TIER_RTO_MAX,
                                        timer=args.tier_rto_max > 0)
        else:
            aggregator = FallbackAggregator(job=args.job, n=len(workers), k=args.k,
                                            first_slot=args.first_slot, pool_size=args.pool,
                                            via_switch=args.via_switch is not None,
                                            hashed=args.hashed, result_count=args.result_count)
        server = UdpFallbackServer(aggregator, workers, port=args.port, switch=args.via_switch,
                                   parent=args.parent)
    except (ValueError, OSError) as error:
        print(f"fallback: {error}", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.stop())
    print(f"fallback: job {args.job} slots {args.first_slot}..{args.pool - 1} on UDP "
          f"{server.address[1]}, {len(workers)} workers", flush=True)
    try:
        server.serve()
    finally:
        server.close()
        stats = {**aggregator.counters.as_dict(), "send_errors": server.send_errors}
        if isinstance(aggregator, TierAggregator):
            stats.update(partials_up=aggregator.partials_up,
                         timer_resends=aggregator.timer_resends,
                         timer_gave_up=aggregator.timer_gave_up)
        if args.stats:
            args.stats.write_text(json.dumps(stats, indent=2) + "\n")
        print(f"fallback: done: {stats}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
