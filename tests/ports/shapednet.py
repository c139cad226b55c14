"""Test helper: a switch in a network namespace whose port 2 is shaped by htb, as Mininet's
`TCLink(bw=...)` shapes a link, with a UDP flood and a low-rate probe flow through it.

Port 1 (flood in) and port 3 (probe in) both send to port 2; the switch end of port 2 has an
htb root qdisc limiting it to `RATE_KBIT` (Mininet's form: `htb default 1` with one class of
that rate and a 15 KB burst). tests/ports/backpressure.p4 writes each packet's deq_qdepth into
its probe header and marks ECN-capable packets once enq_qdepth reaches 10, so what arrives
behind the shaped link says how deep the switch's egress queue was and which probes it marked.

Every name starts with "bp" and a random suffix (no other test or person on the machine shares
it), and `ShapedNet.close()` deletes the namespace with everything in it, also after a failure.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

REF = Path("/opt/p4ref/bin")
HERE = Path(__file__).parent
PROGRAM = HERE / "backpressure.p4"
INAEMU = str(Path(sys.executable).with_name("inaemu"))
RATE_KBIT = 512
MARK_AT = 10                    # backpressure.p4's MARK_AT

# argv: flood pps, probe pps, seconds, then the three host-end names (flood, shaped, probe).
# Sends 1400-byte flood frames and 100-byte ECT(1) probe frames (both UDP to port 7777, probe
# header zero) paced by the clock, receives on the shaped link's far end until it has been
# quiet for a second, and prints one JSON line: per received frame (kind, deq_qdepth, ecn).
TRAFFIC = r"""
import json, select, socket, struct, sys, time
flood_pps, probe_pps, seconds = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
flood_if, shaped_if, probe_if = sys.argv[4:7]
def bound(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((name, 0))
    return s
def checksum(header):
    total = sum(struct.unpack("!10H", header))
    total = (total & 0xFFFF) + (total >> 16)
    return (~((total & 0xFFFF) + (total >> 16))) & 0xFFFF
def frame(sport, size, tos):
    payload = bytes(4) + bytes(size - 14 - 20 - 8 - 4)
    udp = struct.pack("!HHHH", sport, 7777, 8 + len(payload), 0) + payload
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 1, 0, 64, 17, 0,
                               bytes([10, 7, 0, 1]), bytes([10, 7, 0, 2])))
    ip[10:12] = checksum(bytes(ip)).to_bytes(2, "big")
    return bytes.fromhex("0000000700020000000700010800") + bytes(ip) + udp
flood, probe, rx = bound(flood_if), bound(probe_if), bound(shaped_if)
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
flood_frame, probe_frame = frame(1111, 1400, 0), frame(2222, 100, 1)
rows = []
def receive():
    while True:
        try:
            d, address = rx.recvfrom(2048, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        if address[2] == 4 or d[12:14] != b"\x08\x00" or d[23] != 17 or d[36:38] != b"\x1e\x61":
            continue
        kind = "probe" if d[34:36] == (2222).to_bytes(2, "big") else "flood"
        rows.append((kind, int.from_bytes(d[42:46], "big"), d[15] & 3))
start = time.monotonic()
next_flood = next_probe = start
sent = {"flood": 0, "probe": 0}
while time.monotonic() < start + seconds:
    now = time.monotonic()
    if now >= next_flood:
        flood.send(flood_frame); sent["flood"] += 1; next_flood += 1 / flood_pps
    if now >= next_probe:
        probe.send(probe_frame); sent["probe"] += 1; next_probe += 1 / probe_pps
    receive()
    wait = min(next_flood, next_probe) - time.monotonic()
    if wait > 0:
        select.select([rx], [], [], wait)
quiet = time.monotonic()
while time.monotonic() < quiet + 1.5:
    if select.select([rx], [], [], 0.1)[0]:
        receive(); quiet = time.monotonic()
print(json.dumps({"sent": sent, "rows": rows}), flush=True)
"""


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=60)


class ShapedNet:
    """A namespace with three veth pairs, port 2's switch end shaped; `close()` removes it."""

    def __init__(self) -> None:
        self.prefix = "bp" + secrets.token_hex(3)
        self.namespace = self.prefix + "ns"
        self.inside = ["ip", "netns", "exec", self.namespace]
        # port -> (host end, switch end)
        self.ends = {n: (f"{self.prefix}{n}h", f"{self.prefix}{n}s") for n in (1, 2, 3)}
        self._created = False
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        _run("ip", "netns", "add", self.namespace)
        self._created = True
        _run(*self.inside, "ip", "link", "set", "lo", "up")
        for host_end, switch_end in self.ends.values():
            _run(*self.inside, "ip", "link", "add", host_end, "type", "veth", "peer", "name",
                 switch_end)
            for name in (host_end, switch_end):
                _run(*self.inside, "sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1")
                _run(*self.inside, "ip", "link", "set", name, "up")
        shaped = self.ends[2][1]
        _run(*self.inside, "tc", "qdisc", "add", "dev", shaped, "root", "handle", "5:0", "htb",
             "default", "1")
        _run(*self.inside, "tc", "class", "add", "dev", shaped, "parent", "5:0", "classid",
             "5:1", "htb", "rate", f"{RATE_KBIT}kbit", "burst", "15k")

    def switch_ports(self) -> list[str]:
        return [arg for n, (_, switch_end) in self.ends.items()
                for arg in ("-i", f"{n}@{switch_end}")]

    def qdisc_backlog(self) -> int:
        """Packets the shaped link's qdisc holds now."""
        out = _run(*self.inside, "tc", "-s", "qdisc", "show", "dev", self.ends[2][1]).stdout
        for line in out.splitlines():
            words = line.split()
            if words[:1] == ["backlog"]:
                return int(words[2].rstrip("p"))
        raise AssertionError(f"no backlog in tc's answer: {out!r}")

    def start_switch(self, target: str, program_json: Path, workdir: Path,
                     extra: list[str] | None = None) -> subprocess.Popen:
        """`target` ("bmv2" or "inaemu") on the three ports, once its ports are open."""
        if target == "inaemu":
            switch = subprocess.Popen([*self.inside, INAEMU, "switch", str(program_json),
                                       *self.switch_ports(), "--no-grpc", *(extra or [])],
                                      stdout=subprocess.PIPE, text=True)
            line = switch.stdout.readline()
            if not line.startswith("inaemu switch ready"):
                switch.kill()
                raise AssertionError(f"inaemu switch did not start: {line!r}")
            return switch
        notify = f"ipc://{workdir}/bmv2-notifications.ipc"
        switch = subprocess.Popen([*self.inside, str(REF / "simple_switch"), "--thrift-port",
                                   "9390", "--notifications-addr", notify,
                                   *self.switch_ports(), str(program_json)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        while True:      # ready once its Thrift server answers (it adds ports before that)
            cli = subprocess.run([*self.inside, str(REF / "simple_switch_CLI"),
                                  "--thrift-port", "9390"], input="show_ports\n",
                                 capture_output=True, text=True, timeout=30)
            if cli.returncode == 0 and self.ends[3][1] in cli.stdout:
                return switch
            if switch.poll() is not None or time.monotonic() > deadline:
                switch.kill()
                raise AssertionError(f"simple_switch did not start ({switch.poll()}): "
                                     + cli.stdout + cli.stderr)
            time.sleep(0.2)

    def traffic(self, flood_pps: float, probe_pps: float, seconds: float,
                sample_backlog: bool = True) -> dict:
        """Run the flood and the probe flow; what arrived behind the shaped link, plus the
        largest qdisc backlog seen while it ran (sampled every 50 ms)."""
        names = [self.ends[n][0] for n in (1, 2, 3)]
        process = subprocess.Popen([*self.inside, sys.executable, "-c", TRAFFIC, str(flood_pps),
                                    str(probe_pps), str(seconds), *names],
                                   stdout=subprocess.PIPE, text=True)
        backlog = 0
        try:
            while process.poll() is None and sample_backlog:
                backlog = max(backlog, self.qdisc_backlog())
                time.sleep(0.05)
            out, _ = process.communicate(timeout=seconds + 120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        result = json.loads(out)
        result["max_backlog"] = backlog
        return result

    def close(self) -> None:
        if self._created:
            _run("ip", "netns", "del", self.namespace, check=False)
            self._created = False


def summary(result: dict) -> dict:
    """Max deq_qdepth seen, share of probes marked, counts."""
    rows = result["rows"]
    probes = [row for row in rows if row[0] == "probe"]
    return {
        "max_qdepth": max((row[1] for row in rows), default=0),
        "probes": len(probes),
        "probes_marked_share": (sum(row[2] == 3 for row in probes) / len(probes)
                                if probes else 0.0),
        "flood_out": sum(row[0] == "flood" for row in rows),
        "sent": result["sent"],
        "max_backlog": result["max_backlog"],
    }
