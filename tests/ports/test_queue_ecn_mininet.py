"""ECN marking under load on Mininet: `inaemu switch --queue-rate` drains port 2 at 200 pps,
tests/p4/ecn.p4 marks ECN-capable packets (tos 0x1 -> 0x3) once enq_qdepth reaches its
threshold. A burst from one host builds the queue (marks after the first packets, tail drops
beyond 64), a slow stream does not. Interface names start with "qd" (no other test uses them).
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest

from p4switch.compiler import compile_file

pytestmark = pytest.mark.root

ECN_P4 = Path(__file__).parents[1] / "p4" / "ecn.p4"
INAEMU = str(Path(sys.executable).with_name("inaemu"))
THRESHOLD = 10
RATE_PPS = 200
HOSTS = {"qdh1": ("10.9.0.1", "00:00:00:09:00:01", 1),
         "qdh2": ("10.9.0.2", "00:00:00:09:00:02", 2)}

SENDER = """
import socket, sys, time
count, gap = int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x1)          # ECT(1)
for i in range(count):
    s.sendto(i.to_bytes(4, "big") + bytes(60), (sys.argv[1], 5999))
    if gap:
        time.sleep(gap)
"""

RECEIVER = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind(("0.0.0.0", 5999))
print("ready", flush=True)
s.settimeout(1.5)
while True:
    try:
        data, ancillary, _, _ = s.recvmsg(2048, 64)
    except socket.timeout:
        break
    tos = [c[2][0] for c in ancillary if c[1] == socket.IP_TOS]
    print(int.from_bytes(data[:4], "big"), tos[0] if tos else -1, flush=True)
print("done", flush=True)
"""


def ecn_program(threshold: int, config: dict | None = None) -> dict:
    """ecn.p4 (inaemu-compiled unless `config` is given) with the marking threshold and the two
    hosts' routes in the JSON itself, so the switch needs no control plane (the same edit runs
    on real simple_switch)."""
    config = copy.deepcopy(config or compile_file(str(ECN_P4)).bmv2)
    forward = next(a["id"] for a in config["actions"] if a["name"].endswith("ipv4_forward"))
    for pipeline in config["pipelines"]:
        for table in pipeline["tables"]:
            if table["name"].endswith("ecn_config"):
                table["default_entry"]["action_data"] = [hex(threshold)]
            if table["name"].endswith("ipv4_lpm"):
                table["entries"] = [
                    {"match_key": [{"match_type": "lpm", "key": "0x" + bytes(map(int, ip.split(
                        "."))).hex(), "prefix_length": 32}],
                     "action_entry": {"action_id": forward,
                                      "action_data": ["0x" + mac.replace(":", ""), hex(port)]},
                     "priority": port}
                    for ip, mac, port in HOSTS.values()]
    return config


def burst(net, count: int, gap: float) -> list[tuple[int, int]]:
    """(sequence number, tos) of what qdh2 received from a `count`-packet stream of qdh1."""
    receiver = net.get("qdh2").popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE,
                                     text=True)
    try:
        assert receiver.stdout.readline().strip() == "ready"
        sender = net.get("qdh1").popen([sys.executable, "-c", SENDER, "10.9.0.2", str(count),
                                        str(gap)])
        assert sender.wait(timeout=60) == 0
        lines = receiver.communicate(timeout=60)[0].split("\n")
    finally:
        if receiver.poll() is None:
            receiver.kill()
    assert "done" in lines
    return [tuple(map(int, line.split())) for line in lines if line and line != "done"]


def test_ecn_marks_appear_once_the_slow_queue_exceeds_the_threshold(tmp_path):
    import json

    from mininet.net import Mininet
    from mininet.node import Switch

    class Ports(Switch):
        """Only the interfaces (root namespace): the test runs `inaemu switch` on them."""

        def start(self, controllers) -> None:
            pass

    program = tmp_path / "ecn.json"
    program.write_text(json.dumps(ecn_program(THRESHOLD)))
    net = Mininet(controller=None, build=False, autoSetMacs=False, autoStaticArp=False)
    switch, out = None, ""
    try:
        hosts = {name: net.addHost(name, ip=f"{ip}/24", mac=mac)
                 for name, (ip, mac, _) in HOSTS.items()}
        box = net.addSwitch("qds1", cls=Ports)
        for name, (_, _, port) in HOSTS.items():
            net.addLink(hosts[name], box, intfName2=f"qds1-eth{port}")
        net.build()
        for intf in box.intfList():
            if intf.name != "lo":
                box.cmd(f"ip link set {intf.name} up")
        for name, (ip, mac, _) in HOSTS.items():
            for other, (other_ip, other_mac, _) in HOSTS.items():
                if other != name:
                    hosts[name].cmd(f"arp -s {other_ip} {other_mac}")
            hosts[name].cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            # the switch must see finished UDP checksums (no offload to a NIC that is not there)
            hosts[name].cmd(f"ethtool -K {name}-eth0 tx off >/dev/null 2>&1")
        switch = subprocess.Popen(
            [INAEMU, "switch", str(program), "-i", "1@qds1-eth1", "-i", "2@qds1-eth2",
             "--no-grpc", "--queue-rate", f"2:{RATE_PPS}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert switch.stdout.readline().startswith("inaemu switch ready")

        slow = burst(net, 10, 0.02)              # 50 pps, below the drain rate: never marked
        assert [seq for seq, _ in slow] == list(range(10))
        assert {tos for _, tos in slow} == {0x1}

        fast = burst(net, 100, 0.0)              # a burst: the queue builds up to its 64
        seqs, marks = [seq for seq, _ in fast], [tos for _, tos in fast]
        assert seqs == sorted(seqs) and 60 <= len(fast) < 100     # FIFO, tail drops
        unmarked = marks.index(0x3)
        assert unmarked >= THRESHOLD + 1         # depths 0, 0, 1 ... 9 are below the threshold
        assert set(marks[:unmarked]) == {0x1} and set(marks[unmarked:]) == {0x3}
    finally:
        if switch is not None:
            switch.terminate()
            out, _ = switch.communicate(timeout=20)
        net.stop()
    drops = re.search(r"egress queue full, dropped: port 2 (\d+)", out)
    assert drops and int(drops.group(1)) == 100 - len(fast), out
