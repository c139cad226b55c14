"""CPU per chunk of the INA host agent (hosts/ina_session.py, hosts/udp_driver.py), no Mininet.

    .venv/bin/python scripts/bench_agent.py [--baseline-rev REV | --baseline DIR] [--udp]
        [--workers 4] [--k 256] [--size-mib 4] [--pool 64] [--window 16] [--rounds 3]

Two measurements, each run for the working tree's hosts/ and, when asked, for a baseline copy
(`--baseline-rev REV` exports hosts/ at a git revision into a temporary directory;
`--baseline DIR` takes a directory holding a hosts/ package), alternating, in fresh processes:

* memory (always): n sessions of one job and an in-process aggregator (hosts/fallback.py's, the
  switch's algorithm in Python, plus the MAX round) exchange payloads in a loop, no sockets. The
  sessions' CPU (`time.process_time`) is split into start (quantizing, the MAX round's packet),
  receive (decoding a result, the state machine, building the packets it sends) and timeout,
  per chunk per worker. The same loop run with deterministic loss (every 89th contribution and
  every 97th result dropped, a simulated clock that jumps to the next timer) gives a digest of
  every payload sent and every deadline: equal digests mean the same protocol behaviour on the
  wire, retransmissions included.
* udp (`--udp`): n agent processes, each a `UdpInaDriver` on its own loopback address, against an
  aggregator process (the same Python aggregator over UDP); each agent reports the CPU time
  (process_time: user + system, its system calls included) of its second all-reduce call per
  chunk. The aggregator is slower than the agents (as the switch is on Mininet), so results
  arrive a few at a time, the pattern on Mininet.
* veth (`--veth`, root): what a Mininet star does, without Mininet: each agent process in its
  own network namespace behind a veth pair, ina.p4 (k of the run, the working tree's runtime)
  on raw sockets at the root ends, in this process (tests/hosts/test_agents_veth.py's set-up).
  Also the switch's CPU per contribution during the timed calls (this process's, the
  kernel's delivery of its frames to the agents included), its sleeps and preemptions.

Each agent reports its wake-ups per chunk (batches read; 0 for a baseline without the
counter) and how many datagrams went out in segmented sends (UDP GSO). `--no-yield` runs the
working tree's driver without SCHED_BATCH, `--no-segment` without segmented sends; `--each`
prints every round's udp/veth figures, not only the best; `--no-memory` skips the memory mode.

Prints microseconds per chunk per worker, the best of `--rounds`, and the ratio baseline / now
measured in the same run. The machine is shared: quote `uptime` with the numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = 1
CONTRIB, RESULT, MAX_CONTRIB, MAX_RESULT = 0, 1, 2, 3


# ---- the aggregator: the switch's algorithm in Python, plus the MAX round -----------------------

class Aggregator:
    """hosts.fallback.FallbackAggregator for every slot, and the MAX round (lane-wise unsigned
    maximum per version cell, the switch's §3 rules: first copy marks, completes, duplicates
    get the stored result)."""

    def __init__(self, n: int, k: int, pool: int):
        import numpy as np
        from hosts.fallback import FallbackAggregator
        self.np, self.n, self.k = np, n, k
        self.sums = FallbackAggregator(job=JOB, n=n, k=k, first_slot=0, pool_size=pool)
        self.max_cells = {0: [0, 0, None], 1: [0, 0, None]}    # ver: [seen, pending, lanes]

    def receive(self, payload: bytes) -> list[tuple[int, bytes]]:
        if payload[0] != MAX_CONTRIB:
            return self.sums.receive(payload)
        np = self.np
        ver, worker = payload[1] & 1, payload[4]
        cell, other = self.max_cells[ver], self.max_cells[1 - ver]
        bit = 1 << worker
        lanes = np.frombuffer(payload, ">u4", offset=16)
        if cell[0] & bit:
            return [self._result(worker, ver, cell)] if cell[1] == 0 else []
        cell[0] |= bit
        other[0] &= ~bit
        if cell[1] == 0:
            cell[1], cell[2] = self.n - 1, lanes.astype(np.uint32)
        else:
            cell[1] -= 1
            cell[2] = np.maximum(cell[2], lanes)
        if cell[1]:
            return []
        return [self._result(w, ver, cell) for w in range(self.n)]

    def _result(self, worker: int, ver: int, cell: list) -> tuple[int, bytes]:
        header = bytes((MAX_RESULT, ver, JOB >> 8, JOB & 0xFF, worker, 0, 0, 0, 0, 0, 0, 0,
                        self.n >> 8, self.n & 0xFF, 0, 0))
        return worker, header + cell[2].astype(">u4").tobytes()


def make_sessions(args, **extra):
    from hosts.ina_session import InaSession
    return [InaSession(job=JOB, worker=w, n=args.workers, k=args.k, pool_size=args.pool,
                       window=args.window, rto=0.1, rto_max=0.4, max_retx=12, **extra)
            for w in range(args.workers)]


def vectors(args):
    import numpy as np
    rng = np.random.default_rng(0)
    length = args.size_mib * (1 << 18)
    return [rng.standard_normal(length).astype(np.float32) for _ in range(args.workers)]


# ---- memory: sessions and aggregator in one loop ----------------------------------------------

def memory_costs(args) -> dict:
    """CPU seconds in start / receive / timeout over one timed call (after a warm-up call)."""
    sessions, inputs = make_sessions(args), vectors(args)
    aggregator = Aggregator(args.workers, args.k, args.pool)
    clock = time.process_time
    overhead = min(_clock_pair_cost(clock) for _ in range(5))
    for timed in (False, True):
        spent = {"start": 0.0, "receive": 0.0, "timeout": 0.0}
        calls = {"start": 0, "receive": 0, "timeout": 0}
        now, queue = 0.0, deque()
        for w, session in enumerate(sessions):
            before = clock()
            step = session.start(inputs[w], now)
            spent["start"] += clock() - before
            calls["start"] += 1
            queue.extend(step.send)
        while queue:
            now += 1e-6
            for w, reply in aggregator.receive(queue.popleft()):
                before = clock()
                step = sessions[w].receive(reply, now)
                spent["receive"] += clock() - before
                calls["receive"] += 1
                queue.extend(step.send)
        if not all(session.done for session in sessions):
            raise SystemExit("memory: the sessions did not finish without loss")
    chunks = -(-inputs[0].size // args.k)
    per_chunk = {name: max(0.0, spent[name] - calls[name] * overhead) / chunks / args.workers
                 for name in spent}
    return {"per_chunk_us": {name: 1e6 * value for name, value in per_chunk.items()},
            "chunks": chunks}


def _clock_pair_cost(clock) -> float:
    """What one `clock() - clock()` pair adds to a measured interval."""
    rounds = 20000
    begin = clock()
    for _ in range(rounds):
        before = clock()
        _ = clock() - before
    return (clock() - begin) / rounds


def wire_digest(args, batched: bool = False) -> dict:
    """A digest of every payload and deadline of a call with deterministic loss and timers.
    `batched`: each worker's results are held and handed over by `receive_many` in batches
    (after every 7th packet the aggregator takes, and whenever its queue runs dry), as an
    agent reads them; otherwise one `receive` per result as it comes."""
    import numpy as np
    sessions = make_sessions(args)
    aggregator = Aggregator(args.workers, args.k, args.pool)
    length = min(args.size_mib * (1 << 18), 1 << 17)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(length).astype(np.float32) for _ in range(args.workers)]
    digest = hashlib.sha256()
    sent = delivered = taken = 0
    now, queue = 0.0, deque()
    deadlines = [None] * len(sessions)
    inbox: list[list[bytes]] = [[] for _ in sessions]

    def record(w: int, step) -> None:
        nonlocal sent
        deadlines[w] = step.deadline
        digest.update(repr((w, step.deadline)).encode())
        for payload in step.send:
            digest.update(payload)
            sent += 1
            if sent % 89:                       # every 89th transmission is lost
                queue.append(payload)

    def hand_over() -> None:
        for w, session in enumerate(sessions):
            if inbox[w]:
                batch, inbox[w] = inbox[w], []
                record(w, session.receive_many(batch, now))

    for call in range(2):
        for w, session in enumerate(sessions):
            record(w, session.start(inputs[w] * (call + 1), now))
        while not all(session.done for session in sessions):
            if queue:
                now += 20e-6
                taken += 1
                for w, reply in aggregator.receive(queue.popleft()):
                    delivered += 1
                    if delivered % 97:          # every 97th result is lost
                        if batched:
                            inbox[w].append(reply)
                        else:
                            record(w, sessions[w].receive(reply, now))
                if batched and (not queue or taken % 7 == 0):
                    hand_over()
                continue
            due = [d for d in deadlines if d is not None]
            if not due:
                raise SystemExit("wire digest: stuck with nothing in flight")
            now = max(now, min(due))
            for w, session in enumerate(sessions):
                if deadlines[w] is not None and deadlines[w] <= now:
                    record(w, session.timeout(now))
        for w, session in enumerate(sessions):
            digest.update(session.result.tobytes())
    counters = sessions[0].counters
    return {"digest": digest.hexdigest()[:16], "packets": sent,
            "retransmissions": sum(s.counters.retransmissions for s in sessions),
            "timer_retransmissions": counters.timer_retransmissions}


# ---- udp: agent processes against an aggregator process ---------------------------------------

def serve_aggregator(args) -> None:
    """The aggregator over UDP on 127.0.0.1: prints its port, serves until stdin closes."""
    aggregator = Aggregator(args.workers, args.k, args.pool)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    addresses: dict[int, tuple] = {}
    import select
    while True:
        readable, _, _ = select.select([sock, sys.stdin], [], [])
        if sys.stdin in readable:
            return
        payload, source = sock.recvfrom(65535)
        if len(payload) > 4:
            addresses[payload[4]] = source
        for worker, reply in aggregator.receive(payload):
            sock.sendto(reply, addresses[worker])


def run_agent(args) -> None:
    """One worker: a warm-up call, then the timed call; prints its CPU per chunk as JSON."""
    from hosts.udp_driver import UdpInaDriver
    session = make_sessions(args)[args.worker]
    vector = vectors(args)[args.worker]
    options = {"batch": False} if args.no_batch else {}
    if args.no_yield:
        options["yield_to_aggregator"] = False
    if args.no_segment:
        options["segment"] = False
    if args.veth:
        from hosts.ina_wire import INA_UDP_PORT
        address = dict(aggregator=args.aggregator, aggregator_port=INA_UDP_PORT,
                       bind_address="0.0.0.0", bind_port=INA_UDP_PORT)
    else:
        address = dict(aggregator="127.0.0.1", aggregator_port=args.port,
                       bind_address=f"127.0.1.{args.worker + 1}", bind_port=0)
    driver = UdpInaDriver(session, **address, **options)
    driver.allreduce(vector, timeout=120)
    print("timed", flush=True)      # (veth: the switch's CPU is read from here on)
    wakeups, datagrams = getattr(driver, "wakeups", 0), getattr(driver, "datagrams", 0)
    gso_sends, gso_datagrams = getattr(driver, "gso_sends", 0), getattr(driver, "gso_datagrams", 0)
    import resource
    before_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    before_cpu, before_wall, before_times = time.process_time(), time.perf_counter(), os.times()
    if args.profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile(time.process_time)
        profiler.runcall(driver.allreduce, vector, timeout=120)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(18)
    else:
        driver.allreduce(vector, timeout=120)
    cpu, wall = time.process_time() - before_cpu, time.perf_counter() - before_wall
    times = os.times()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before_faults
    chunks = -(-vector.size // args.k)
    print(json.dumps({"cpu_us": 1e6 * cpu / chunks, "wall": wall,
                      "system_us": 1e6 * (times.system - before_times.system) / chunks,
                      "faults_per_chunk": faults / chunks,
                      "wakeups_per_chunk": (getattr(driver, "wakeups", 0) - wakeups) / chunks,
                      "datagrams": getattr(driver, "datagrams", 0) - datagrams,
                      "gso_sends": getattr(driver, "gso_sends", 0) - gso_sends,
                      "gso_datagrams": getattr(driver, "gso_datagrams", 0) - gso_datagrams,
                      "chunks": chunks,
                      "retransmissions": session.counters.retransmissions,
                      "timer_retransmissions": session.counters.timer_retransmissions}),
          flush=True)
    driver.close()


def veth_costs(args, root: Path) -> dict:
    """Agents in namespaces against ina.p4 on the veths' root ends (see the module doc)."""
    sys.path.insert(0, str(ROOT))
    from tests.hosts.inproc import AGGREGATOR_IP, ina_switch
    from tests.hosts.test_agents_veth import Namespaces
    switch = ina_switch(args.k, job=JOB, n=args.workers, pool_size=args.pool)
    nets = Namespaces(args.workers)
    try:
        with nets.serving(switch):
            env = _env(root)
            agents = [subprocess.Popen(["ip", "netns", "exec", nets.names[w], sys.executable,
                                        __file__, "--role", "agent", "--veth", "--worker",
                                        str(w), "--aggregator", AGGREGATOR_IP,
                                        *_common_arguments(args),
                                        *(["--profile"] if args.profile and w == 0 else [])],
                                       stdout=subprocess.PIPE, env=env, text=True)
                      for w in range(args.workers)]
            for agent in agents:         # every warm-up call is over: the timed calls begin
                agent.stdout.readline()
            before, switches = os.times(), _context_switches()
            reports = [json.loads(agent.communicate(timeout=600)[0]) for agent in agents]
            after, switches = os.times(), [
                now - then for now, then in zip(_context_switches(), switches)]
    finally:
        nets.close()
    summary = _summary(reports)
    # This process is the switch (its driver thread; the main thread only waits): its CPU,
    # the kernel's delivery of its frames to the agents included, per contribution.
    contributions = summary["chunks"] * args.workers
    summary["switch_us"] = 1e6 * (after.user - before.user + after.system - before.system) \
        / contributions
    summary["switch_system_us"] = 1e6 * (after.system - before.system) / contributions
    summary["switch_sleeps"] = switches[0] / contributions
    summary["switch_preempted"] = switches[1] / contributions
    return summary


def _context_switches() -> tuple[int, int]:
    """This process's context switches, voluntary (its threads' sleeps) and not (preempted)."""
    counts = [0, 0]
    for task in Path("/proc/self/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.endswith("voluntary_ctxt_switches"):
                counts[name.startswith("non")] += int(value)
    return counts[0], counts[1]


def _summary(reports: list[dict]) -> dict:
    """The agents' reports together: mean CPU figures, the longest call, total resends."""
    def mean(key: str) -> float:
        return sum(r[key] for r in reports) / len(reports)
    return {"cpu_us": mean("cpu_us"), "system_us": mean("system_us"),
            "faults_per_chunk": mean("faults_per_chunk"),
            "wakeups_per_chunk": mean("wakeups_per_chunk"), "chunks": reports[0]["chunks"],
            "wall": max(r["wall"] for r in reports),
            "agents": len(reports), "gso_sends": sum(r.get("gso_sends", 0) for r in reports),
            "gso_datagrams": sum(r.get("gso_datagrams", 0) for r in reports),
            "retransmissions": sum(r["retransmissions"] for r in reports),
            "timer_retransmissions": sum(r["timer_retransmissions"] for r in reports)}


def udp_costs(args, root: Path) -> dict:
    env = _env(root)
    common = _common_arguments(args)
    server = subprocess.Popen([sys.executable, __file__, "--role", "aggregator", *common],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    try:
        port = int(server.stdout.readline())
        agents = [subprocess.Popen([sys.executable, __file__, "--role", "agent", "--worker",
                                    str(w), "--port", str(port), *common,
                                    *(["--profile"] if args.profile and w == 0 else [])],
                                   stdout=subprocess.PIPE, env=env, text=True)
                  for w in range(args.workers)]
        reports = [json.loads(agent.communicate(timeout=600)[0].splitlines()[-1])
                   for agent in agents]
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return _summary(reports)


# ---- the comparison -----------------------------------------------------------------------------

def _env(root: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    return env


def _common_arguments(args) -> list[str]:
    return ["--workers", str(args.workers), "--k", str(args.k), "--size-mib",
            str(args.size_mib), "--pool", str(args.pool), "--window", str(args.window),
            *(["--no-batch"] if args.no_batch else []),
            *(["--no-yield"] if args.no_yield else []),
            *(["--no-segment"] if args.no_segment else [])]


def measure(root: Path, args, what: str) -> dict:
    """One measurement in a fresh process that imports hosts/ from `root`."""
    if what == "udp":
        return udp_costs(args, root)
    if what == "veth":
        return veth_costs(args, root)
    out = subprocess.run([sys.executable, __file__, "--role", what, *_common_arguments(args)],
                         env=_env(root), check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def export_revision(revision: str) -> Path:
    """hosts/ at `revision`, in a temporary directory (removed at exit)."""
    directory = Path(tempfile.mkdtemp(prefix="bench_agent_"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "hosts"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return directory


def compare(args) -> None:
    variants = {"now": ROOT}
    if args.baseline_rev:
        variants = {"baseline": export_revision(args.baseline_rev), **variants}
    elif args.baseline:
        variants = {"baseline": Path(args.baseline).resolve(), **variants}
    print(f"{args.workers} workers, k = {args.k}, {args.size_mib} MiB, pool {args.pool}, "
          f"window {args.window}; load {os.getloadavg()[0]:.2f}")
    digests = {name: measure(root, args, "digest") for name, root in variants.items()}
    for how in ("one", "batched"):
        for name, both in digests.items():
            d = both[how]
            print(f"  {name:8s} wire digest {d['digest']} ({d['packets']} packets, "
                  f"{d['retransmissions']} retransmissions; "
                  f"{'one receive per result' if how == 'one' else 'results by receive_many'})")
        if len({both[how]["digest"] for both in digests.values()}) > 1:
            print("  WIRE BEHAVIOUR DIFFERS")
    best: dict[str, dict] = {}
    for _ in range(0 if args.no_memory else args.rounds):
        for name, root in variants.items():
            got = measure(root, args, "memory")["per_chunk_us"]
            keep = best.setdefault(name, {})
            for part, value in got.items():
                keep[part] = min(value, keep.get(part, float("inf")))
    if best:
        print("memory (µs CPU per chunk per worker, best of rounds):")
    for name, parts in best.items():
        print(f"  {name:8s} " + "  ".join(f"{p} {v:6.2f}" for p, v in parts.items())
              + f"  total {sum(parts.values()):6.2f}")
    if "baseline" in best:
        ratio = sum(best["baseline"].values()) / sum(best["now"].values())
        print(f"  baseline / now: {ratio:.2f}x")
    for mode in ("udp", "veth"):
        if not getattr(args, mode):
            continue
        udp: dict[str, dict] = {}
        for _ in range(args.rounds):
            for name, root in variants.items():
                got = measure(root, args, mode)
                if args.each:
                    print(f"    {mode} {name:8s} {_one_line(got)}", flush=True)
                if name not in udp or got["cpu_us"] < udp[name]["cpu_us"]:
                    udp[name] = got
        print(f"{'udp loopback' if mode == 'udp' else 'veth, ina.p4'} (µs CPU per chunk per "
              f"worker, best of rounds):")
        for name, got in udp.items():
            print(f"  {name:8s} {_one_line(got)}")
        if "baseline" in udp:
            print(f"  baseline / now: {udp['baseline']['cpu_us'] / udp['now']['cpu_us']:.2f}x")
    print(f"load {os.getloadavg()[0]:.2f}")


def _one_line(got: dict) -> str:
    return (f"{got['cpu_us']:6.2f}  (system {got['system_us']:.1f}, "
            f"{got['faults_per_chunk']:.2f} page faults and "
            f"{got['wakeups_per_chunk']:.2f} wake-ups per chunk; "
            + (f"{got['gso_datagrams'] / got['gso_sends']:.1f} datagrams per segmented "
               f"send, {got['gso_datagrams'] / got['chunks'] / got['agents']:.2f} "
               f"of the chunks; "
               if got.get("gso_sends") else "")
            + f"call {got['wall']:.2f} s, "
            f"{got['retransmissions']} retransmissions, "
            f"{got['timer_retransmissions']} by timer)"
            + (f"; switch {got['switch_us']:.2f} µs per contribution "
               f"(system {got['switch_system_us']:.1f}, "
               f"{got['switch_sleeps']:.3f} sleeps and {got['switch_preempted']:.3f} "
               f"preemptions each)" if "switch_us" in got else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a directory holding the hosts/ package to compare")
    parser.add_argument("--baseline-rev", help="a git revision whose hosts/ to compare")
    parser.add_argument("--udp", action="store_true", help="also run agents over loopback UDP")
    parser.add_argument("--veth", action="store_true",
                        help="also run agents in namespaces against ina.p4 on veths (root)")
    parser.add_argument("--aggregator", default="127.0.0.1", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true",
                        help="cProfile (CPU time) worker 0's timed call, on stderr")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--k", type=int, default=256)
    parser.add_argument("--size-mib", type=int, default=4)
    parser.add_argument("--pool", type=int, default=64)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--each", action="store_true",
                        help="also print every round's udp/veth measurement as it comes")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the memory measurement (udp/veth only)")
    parser.add_argument("--no-batch", action="store_true",
                        help="udp: the working tree's driver without its pauses (batch=False)")
    parser.add_argument("--no-yield", action="store_true",
                        help="the working tree's driver without SCHED_BATCH during a call")
    parser.add_argument("--no-segment", action="store_true",
                        help="the working tree's driver without segmented (UDP GSO) sends")
    parser.add_argument("--role", choices=("compare", "memory", "digest", "aggregator", "agent"),
                        default="compare", help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == "compare":
        compare(args)
    elif args.role == "memory":
        print(json.dumps(memory_costs(args)))
    elif args.role == "digest":
        print(json.dumps({"one": wire_digest(args), "batched": wire_digest(args, True)}))
    elif args.role == "aggregator":
        serve_aggregator(args)
    else:
        run_agent(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
