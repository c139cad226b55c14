"""A window of chunks sent at once behind a shaped link is queued, not refused (root).

A datagram waiting in a link's qdisc counts against its socket's send buffer, and the agent's
non-blocking send fails (EAGAIN) beyond it: the chunk is lost to the worker's own kernel and
comes back only by QUERY/NACK or a timer. Regression: at the default 60 Mbit/s with a window
of 128, Mininet runs resent dozens of chunks so (hosts/udp_driver.py, `SEND_BUFFER`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root
ROOT = Path(__file__).resolve().parents[2]
WINDOW, DATAGRAM = 128, 1472          # chunks of a full window, MTU-sized (k = 364)

SENDER = f"""
import errno, json, socket, sys
sys.path.insert(0, {str(ROOT)!r})
from hosts.udp_driver import _set_buffers
refused = {{}}
for name, setup in (("default", lambda s: None), ("agent", _set_buffers)):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    setup(sock)
    sock.setblocking(False)
    sock.connect(("10.77.0.2", 48879))
    refused[name] = 0
    for _ in range({WINDOW}):
        try:
            sock.send(bytes({DATAGRAM}))
        except OSError as error:
            assert error.errno in (errno.EAGAIN, errno.ENOBUFS), error
            refused[name] += 1
    sock.close()
print(json.dumps(refused))
"""


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


def test_a_full_window_queued_behind_a_slow_link_is_not_refused() -> None:
    tag = f"isb{os.getpid() % 100000}"
    ns, inner, outer = tag, f"{tag}h", f"{tag}s"
    inside = ("ip", "netns", "exec", ns)
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
        sh("ip", "link", "set", inner, "netns", ns)
        sh(*inside, "ip", "addr", "add", "10.77.0.1/24", "dev", inner)
        sh(*inside, "ip", "link", "set", inner, "up")
        sh(*inside, "ip", "neigh", "replace", "10.77.0.2", "lladdr", "02:00:00:00:00:02",
           "dev", inner, "nud", "permanent")
        # 1 Mbit/s: a window takes seconds to leave, so it all waits in the qdisc, whose limit
        # (1 MB) is larger than the window: only the socket's buffer can refuse a datagram
        sh(*inside, "tc", "qdisc", "add", "dev", inner, "root", "tbf", "rate", "1mbit",
           "burst", "32kbit", "limit", "1000000")
        sh("ip", "link", "set", outer, "up")
        done = subprocess.run([*inside, sys.executable, "-c", SENDER], check=True,
                              capture_output=True, text=True)
        refused = json.loads(done.stdout)
    finally:
        subprocess.run(["ip", "link", "del", outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert refused["default"] > 0, refused     # the premise: the default buffer is too small
    assert refused["agent"] == 0, refused
