"""The veth harness of scripts/bench_switch.py: a network namespace of veth pairs, a sender
that offers frames at a fixed rate (sendmmsg, pinned to core 0), simple_switch started and
configured on the switch ends, and one measured run: input offered, output delivered (the
kernel's rx counter of a far end) and the switch process's CPU per input packet (/proc).

A `prog` here is a `bench_switch.Program` (frames, in_port, out_ports, units_per_output, ops);
`start_switch(context, interfaces)` starts a switch process on the switch ends and returns
(stop, pid): `bmv2_starter` here, `bench_switch.inaemu_starter` for inaemu's.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

CLONE_NEWNET = 0x40000000


class BenchNet:
    """A namespace with veth pairs: switch ends ...s<N> here, host ends ...h<N> inside."""

    made = 0

    def __init__(self, ports) -> None:
        BenchNet.made += 1       # a fresh name each time: deleting the last one takes a while
        tag = f"ib{os.getpid() % 100000}n{BenchNet.made % 100}"
        self.namespace = f"{tag}ns"
        self.switch_ends = {n: f"{tag}s{n}" for n in ports}
        self.host_ends = {n: f"{tag}h{n}" for n in ports}
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
        path = Path("/sys/class/net") / self.switch_ends[port] / "statistics" / "rx_packets"
        return int(path.read_text())

    def close(self) -> None:
        for name in self.switch_ends.values():
            subprocess.run(["ip", "link", "del", name], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True)


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def pin_to_cpu(cpu: int, pid: int = 0) -> None:
    """The switch on one core, the sender (and the kernel's veth work) on the other (`pid` 0:
    this process). Applied to a child after it started, not in a preexec_fn: forking a process
    that runs gRPC with Python code in the child crashes some children (p4switch/reference/
    bmv2.py, `dying_with_parent`)."""
    if (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(pid, {cpu})



class Bmv2Process:
    """simple_switch on the veth ends, configured with simple_switch_CLI."""

    def __init__(self, binary: Path, toolchain, prog, json_path: Path,
                 interfaces: dict[int, str]) -> None:
        self.thrift = _free_port()
        argv = [str(binary)]
        for n, name in interfaces.items():
            argv += ["-i", f"{n}@{name}"]
        argv += ["--thrift-port", str(self.thrift), "--device-id", "0", str(json_path)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        pin_to_cpu(1, self.proc.pid)    # at once, before simple_switch starts its threads
        deadline = time.monotonic() + 30
        while not _listening(self.thrift):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                self.stop()
                raise SystemExit(f"bench: {binary} did not start: {err[-500:]}")
            time.sleep(0.05)
        doc = json.loads(json_path.read_text())
        self._cli(toolchain, _cli_commands(prog.ops, doc))

    def _cli(self, toolchain, commands: list[str]) -> None:
        from p4switch.reference.bmv2 import _cli_python
        site = sorted(toolchain.root.glob("lib/python3*/site-packages"))
        env = {**os.environ, "PYTHONPATH": ":".join(str(p) for p in site)}
        done = subprocess.run([_cli_python(toolchain.cli), str(toolchain.cli), "--thrift-port",
                               str(self.thrift)], input="\n".join(commands) + "\n",
                              capture_output=True, text=True, env=env, timeout=300)
        if done.returncode or "Error" in done.stdout or "Invalid" in done.stdout:
            self.stop()
            raise SystemExit(f"bench: simple_switch_CLI failed:\n{done.stdout[-1500:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _full_name(short: str, names: list[str]) -> str:
    """p4c's names are qualified (`MyIngress.ina_jobs`); the ops use the short names."""
    found = sorted({n for n in names if n == short or n.endswith("." + short)})
    if len(found) != 1:
        raise SystemExit(f"bench: no unique '{short}' in the JSON ({len(found)} matches)")
    return found[0]


def _cli_commands(ops: list, doc: dict) -> list[str]:
    """simple_switch_CLI commands for the control-plane operations."""
    from p4switch.runtime import ExactKey
    tables = [t["name"] for p in doc["pipelines"] for t in p["tables"]]
    actions = [a["name"] for a in doc["actions"]]
    lines, node = [], 0
    for op in ops:
        if op[0] == "table":
            _, table, keys, action, params = op
            key_text = " ".join(str(k.value) if isinstance(k, ExactKey)
                                else f"{k.value}/{k.prefix_len}" for k in keys)
            lines.append(f"table_add {_full_name(table, tables)} {_full_name(action, actions)} "
                         f"{key_text} => {' '.join(str(p) for p in params)}")
        else:
            _, mgid, members = op
            lines.append(f"mc_mgrp_create {mgid}")
            by_rid: dict[int, list[int]] = {}
            for port, rid in members:
                by_rid.setdefault(rid, []).append(port)
            for rid, ports in by_rid.items():
                lines += [f"mc_node_create {rid} {' '.join(map(str, ports))}",
                          f"mc_node_associate {mgid} {node}"]
                node += 1
    return lines


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(_Iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", _Msghdr), ("len", ctypes.c_uint)]


SEND_BATCH = 64


def _sender_process(namespace: str, interface: str, packets: list[bytes], rate: float,
                    seconds: float, sent_total) -> None:
    """Child: join the namespace, send `packets` round-robin at `rate` per second, up to 64
    frames per sendmmsg(2) call (a Python send per frame tops out near the switch's rate)."""
    pin_to_cpu(0)
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/run/netns/{namespace}") as ns_file:
        if libc.setns(ns_file.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)   # sends only, reads nothing
    sock.bind((interface, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
    count = len(packets)
    buffers = [ctypes.create_string_buffer(p, len(p)) for p in packets]
    ring = count + SEND_BATCH                 # any window of SEND_BATCH is contiguous
    iovecs = (_Iovec * ring)()
    msgs = (_Mmsghdr * ring)()
    for i in range(ring):
        buf = buffers[i % count]
        iovecs[i].base = ctypes.addressof(buf)
        iovecs[i].len = len(packets[i % count])
        msgs[i].hdr.iov = ctypes.pointer(iovecs[i])
        msgs[i].hdr.iovlen = 1
    base = ctypes.addressof(msgs)
    size = ctypes.sizeof(_Mmsghdr)
    sendmmsg, fd, sent = libc.sendmmsg, sock.fileno(), 0
    start = time.monotonic()
    end = start + seconds
    while True:
        now = time.monotonic()
        if now >= end:
            break
        owed = min(int((now - start) * rate) - sent, 4000)
        while owed > 0:
            batch = min(owed, SEND_BATCH)
            done = sendmmsg(fd, ctypes.c_void_p(base + (sent % count) * size), batch, 0)
            if done <= 0:
                done = batch            # sender-side buffer full: not offered, skipped
            sent += done
            owed -= done
        time.sleep(0.0002)
    sent_total.value = sent


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_veth(prog, start_switch, seconds: float, rate: float,
               warmup: float) -> tuple[float, float, float]:
    """(offered input pps, delivered input units/s, the switch process's CPU microseconds
    per input packet) on veths after `warmup` seconds of load. The CPU figure does not depend
    on how much of a core the switch got on a busy machine, as rates do."""
    net = BenchNet(sorted({prog.in_port, *prog.out_ports}))
    context = multiprocessing.get_context("fork")
    stop = sender = None
    try:
        interfaces = {n: net.switch_ends[n] for n in sorted({prog.in_port, *prog.out_ports})}
        stop, pid = start_switch(context, interfaces)
        sent_total = context.Value("q", 0)
        sender = context.Process(target=_sender_process, args=(
            net.namespace, net.host_ends[prog.in_port], prog.frames, rate,
            warmup + seconds + 0.5, sent_total))
        sender.start()
        time.sleep(warmup)
        arrived0, first, t0 = net.arrived_at_switch(prog.in_port), net.rx_packets(2), \
            time.monotonic()
        cpu0 = _cpu_seconds(pid)
        time.sleep(seconds)
        arrived1, last, t1 = net.arrived_at_switch(prog.in_port), net.rx_packets(2), \
            time.monotonic()
        cpu1 = _cpu_seconds(pid)
        sender.join()
        arrived = arrived1 - arrived0
        return arrived / (t1 - t0), (last - first) * prog.units_per_output / (t1 - t0), \
            (cpu1 - cpu0) * 1e6 / arrived if arrived else 0.0
    finally:
        if sender is not None and sender.is_alive():
            os.kill(sender.pid, signal.SIGTERM)
            sender.join(10)
        if stop is not None:
            stop()
        net.close()



def bmv2_starter(prog, binary: Path, toolchain, json_path: Path):
    def start(context, interfaces):
        switch = Bmv2Process(binary, toolchain, prog, json_path, interfaces)
        return switch.stop, switch.proc.pid
    return start


__all__ = ["BenchNet", "Bmv2Process", "bench_veth", "bmv2_starter", "pin_to_cpu"]
