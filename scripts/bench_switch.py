#!/usr/bin/env python3
"""Switch throughput: packets per second of inaemu's switch, next to real BMv2 on this kind of box.

Two programs (benchmarks/programs/, BMv2 JSON in p4c's shape):
  exact     L2 forwarding by one exact-match table (256 entries installed, all to port 2);
  register  32 int32 register read-add-write per packet, then multicast to 4 ports.
Two paths for each:
  inproc    `Switch.receive_batch` in this process, batches of 64: the pipeline alone;
  veth      (root) the same data path as `inaemu switch` (raw sockets, packet driver, forwarder)
            in a child process on veth pairs into a network namespace; a sender in the namespace
            offers a fixed rate (default 1.5x the in-process rate) and the kernel's rx counter of
            the receiving veth end counts what came out (no CPU spent on counting).
The veth figure is input packets forwarded per second in steady state (for `register`, frames
on one of the 4 multicast ports). Ratios compare with the yardstick: real BMv2 on veths on this
machine kind (default build / optimized build).

    sudo .venv/bin/python scripts/bench_switch.py            # ~1 minute
    sudo .venv/bin/python scripts/bench_switch.py --quick    # a few seconds per row
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

PROGRAM_DIR = PROJECT_ROOT / "benchmarks" / "programs"
ETH_P_ALL = 0x0003
CLONE_NEWNET = 0x40000000
MAX_OFFERED_PPS = 300_000


@dataclass(frozen=True)
class Program:
    key: str
    title: str
    json_file: str
    out_ports: tuple[int, ...]
    bmv2_default_kpps: float
    bmv2_optimized_kpps: float


PROGRAMS = {
    "exact": Program("exact", "exact table", "exact_forward.json", (2,), 38.0, 120.0),
    "register": Program("register", "32 reg adds + mcast x4", "register_multicast.json",
                        (2, 3, 4, 5), 3.3, 24.0),
}
MAC_ENTRIES = 256
SLOTS = 1024
AGG_ETHER_TYPE = 0x88B6


# -- the programs' traffic and control-plane state ------------------------------------------------
def configure(switch, program: Program) -> None:
    """Install what the program needs: table entries, or the multicast group."""
    from p4switch.runtime import ExactKey
    if program.key == "exact":
        for index in range(MAC_ENTRIES):
            switch.table_add("dmac", [ExactKey(_mac(index))], "forward", [2])
    else:
        switch.mc_group_set(1, [(port, 0) for port in program.out_ports])


def frames(program: Program, count: int) -> list[bytes]:
    src = bytes.fromhex("020000000001")
    if program.key == "exact":
        return [_mac(i % MAC_ENTRIES).to_bytes(6, "big") + src + b"\x08\x00" + bytes(46)
                for i in range(count)]
    out = []
    for i in range(count):
        values = b"".join(((i * 32 + v) & 0xFFFF).to_bytes(4, "big") for v in range(32))
        out.append(b"\xff" * 6 + src + AGG_ETHER_TYPE.to_bytes(2, "big")
                   + (i % SLOTS).to_bytes(4, "big") + values)
    return out


def _mac(index: int) -> int:
    return 0x0200_0000_1000 + index


def load_switch(program: Program):
    from p4switch.runtime import Switch
    switch = Switch.from_json_file(str(PROGRAM_DIR / program.json_file), trace=None)
    configure(switch, program)
    return switch


# -- in-process -----------------------------------------------------------------------------------
def bench_inproc(program: Program, seconds: float, batch: int = 64) -> float:
    """Input packets per second through `receive_batch` (outputs are built but not sent)."""
    switch = load_switch(program)
    items = [(1, data) for data in frames(program, batch)]
    done, outputs = 0, 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        with switch.lock:
            outputs += len(switch.receive_batch(items))
        done += batch
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    expected = len(program.out_ports) * done
    if outputs != expected:
        raise SystemExit(f"bench: {program.key}: {outputs} outputs for {done} packets, "
                         f"expected {expected}: the program or the runtime misbehaves")
    return done / elapsed


# -- veth -----------------------------------------------------------------------------------------
class BenchNet:
    """A namespace with veth pairs: switch ends b<pid>s<N> here, host ends b<pid>h<N> inside."""

    def __init__(self, ports: int) -> None:
        tag = f"ib{os.getpid() % 100000}"
        self.namespace = f"{tag}ns"
        self.switch_ends = {n: f"{tag}s{n}" for n in range(1, ports + 1)}
        self.host_ends = {n: f"{tag}h{n}" for n in range(1, ports + 1)}
        _run("ip", "netns", "add", self.namespace)
        try:
            for n in self.switch_ends:
                s, h = self.switch_ends[n], self.host_ends[n]
                _run("ip", "link", "add", s, "type", "veth", "peer", "name", h)
                _run("ip", "link", "set", h, "netns", self.namespace)
                _run("sysctl", "-q", "-w", f"net.ipv6.conf.{s}.disable_ipv6=1")
                _run("ip", "netns", "exec", self.namespace, "sysctl", "-q", "-w",
                     f"net.ipv6.conf.{h}.disable_ipv6=1")
                _run("ip", "link", "set", s, "up")
                _run("ip", "-n", self.namespace, "link", "set", h, "up")
        except BaseException:
            self.close()
            raise

    def rx_packets(self, port: int) -> int:
        out = _run("ip", "-n", self.namespace, "-s", "-j", "link", "show", "dev",
                   self.host_ends[port])
        return int(json.loads(out)[0]["stats64"]["rx"]["packets"])

    def arrived_at_switch(self, port: int) -> int:
        """Frames the kernel delivered to the switch end of `port` (the offered load)."""
        path = Path("/sys/class/net") / self.switch_ends[port] / "statistics" / "rx_packets"
        return int(path.read_text())

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True)


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def _switch_process(program: Program, interfaces: dict[int, str], ready) -> None:
    """Child: the same data path as `inaemu switch`, on the bench's veth ends."""
    _pin_to_cpu(1)
    from p4switch.driver import PacketDriver
    from p4switch.ports.forwarding import Forwarder
    from p4switch.ports.rawsock import RawSocketPort
    switch = load_switch(program)
    ports = [RawSocketPort(n, name) for n, name in interfaces.items()]
    driver = PacketDriver(Forwarder(switch, interfaces), ports)
    signal.signal(signal.SIGTERM, lambda *_: driver.stop())
    ready.set()
    driver.run()
    for port in ports:
        port.close()


def _sender_process(namespace: str, interface: str, packets: list[bytes], rate: float,
                    seconds: float, sent_total) -> None:
    """Child: join the namespace, send `packets` round-robin at `rate` per second."""
    _pin_to_cpu(0)
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/run/netns/{namespace}") as ns_file:
        if libc.setns(ns_file.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((interface, ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
    send, count, sent = sock.send, len(packets), 0
    start = time.monotonic()
    end = start + seconds
    while True:
        now = time.monotonic()
        if now >= end:
            break
        owed = min(int((now - start) * rate) - sent, 2000)
        for _ in range(owed):
            try:
                send(packets[sent % count])
            except OSError:
                pass            # sender-side buffer full: the packet was not offered
            sent += 1
        time.sleep(0.0005)
    sent_total.value = sent


def _pin_to_cpu(cpu: int) -> None:
    """Keep the switch and the sender on different cores (when there are two) so they do not
    take turns on one; the kernel's veth work follows the sender."""
    if (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


def bench_veth(program: Program, seconds: float, rate: float, warmup: float) -> tuple[float, float]:
    """(offered pps, forwarded pps) on veths, measured after `warmup` seconds of load.

    Offered is what arrived on the switch's ingress interface (the sender's target rate is an
    upper bound it may not reach); forwarded is what arrived on the first output's host end.
    """
    net = BenchNet(1 + len(program.out_ports))
    context = multiprocessing.get_context("fork")
    switch = sender = None
    try:
        interfaces = {n: net.switch_ends[n] for n in (1, *program.out_ports)}
        ready = context.Event()
        switch = context.Process(target=_switch_process, args=(program, interfaces, ready))
        switch.start()
        if not ready.wait(60):
            raise SystemExit("bench: the switch process did not start")
        sent_total = context.Value("q", 0)
        sender = context.Process(target=_sender_process, args=(
            net.namespace, net.host_ends[1], frames(program, 256), rate, warmup + seconds + 0.5,
            sent_total))
        sender.start()
        time.sleep(warmup)
        arrived0, first, t0 = net.arrived_at_switch(1), net.rx_packets(2), time.monotonic()
        time.sleep(seconds)
        arrived1, last, t1 = net.arrived_at_switch(1), net.rx_packets(2), time.monotonic()
        sender.join()
        return (arrived1 - arrived0) / (t1 - t0), (last - first) / (t1 - t0)
    finally:
        for child in (sender, switch):
            if child is not None and child.is_alive():
                os.kill(child.pid, signal.SIGTERM)
                child.join(10)
                if child.is_alive():
                    child.kill()
        net.close()


# -- report ---------------------------------------------------------------------------------------
def row(program: Program, path: str, pps: float | None, note: str = "") -> str:
    if pps is None:
        return f"{program.title:<24} {path:<7} {'-':>8}   {note}"
    kpps = pps / 1000.0
    return (f"{program.title:<24} {path:<7} {kpps:8.2f}   {program.bmv2_default_kpps:7.1f} "
            f"{kpps / program.bmv2_default_kpps:6.2f}x   {program.bmv2_optimized_kpps:7.1f} "
            f"{kpps / program.bmv2_optimized_kpps:6.2f}x   {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs (seconds in total)")
    parser.add_argument("--programs", nargs="+", choices=sorted(PROGRAMS),
                        default=["exact", "register"])
    parser.add_argument("--paths", nargs="+", choices=["inproc", "veth"],
                        default=["inproc", "veth"])
    parser.add_argument("--seconds", type=float, help="measurement time per run")
    parser.add_argument("--rate", type=float, help="offered rate on veths, packets per second")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run every row N times and keep the best (other work on the "
                             "machine only ever slows a run down)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    seconds = args.seconds or (1.0 if args.quick else 5.0)
    warmup = 0.5 if args.quick else 1.0
    is_root = os.geteuid() == 0

    load = os.getloadavg()[0]
    print(f"[bench] {os.cpu_count()} cores, load average {load:.2f} at start"
          + (" -- other work is running: expect lower, noisier figures" if load > 0.5 else ""),
          flush=True)
    lines = []
    for key in args.programs:
        program = PROGRAMS[key]
        inproc = 0.0
        for _ in range(args.repeat):
            print(f"[bench] {program.title}: in-process, {seconds:g} s ...", flush=True)
            pps = bench_inproc(program, seconds)
            print(f"[bench]   {pps / 1000:.2f} kpps", flush=True)
            inproc = max(inproc, pps)
        if "inproc" in args.paths:
            lines.append(row(program, "inproc", inproc))
        if "veth" not in args.paths:
            continue
        if not is_root:
            lines.append(row(program, "veth", None, "needs root (network namespace, veths)"))
            continue
        rate = args.rate or min(MAX_OFFERED_PPS, 1.5 * inproc)
        offered = forwarded = 0.0
        for _ in range(args.repeat):
            print(f"[bench] {program.title}: veth, offering {rate / 1000:.1f} kpps for "
                  f"{warmup:g}+{seconds:g} s ...", flush=True)
            this_offered, this_forwarded = bench_veth(program, seconds, rate, warmup)
            print(f"[bench]   {this_forwarded / 1000:.2f} kpps forwarded of "
                  f"{this_offered / 1000:.1f} kpps offered", flush=True)
            if this_forwarded > forwarded:
                offered, forwarded = this_offered, this_forwarded
        lines.append(row(program, "veth", forwarded, f"offered {offered / 1000:.1f} kpps"))

    print()
    print(f"{'program':<24} {'path':<7} {'kpps':>8}   {'BMv2':>7} {'ratio':>7}   "
          f"{'BMv2-O':>7} {'ratio':>7}")
    print("\n".join(lines))
    print("BMv2 = simple_switch default build, BMv2-O = optimized build, both on veths "
          "(yardstick for this machine kind); ratio = inaemu / BMv2.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
