"""Test helper: a network namespace with veth pairs, and raw sockets opened inside it.

Each pair has its switch end (`s<N>`) in the root namespace, where the switch binds it, and its
host end (`h<N>`) in the namespace. IPv6 is disabled on every end so the kernel sends nothing of
its own (router solicitations, MLD) and the test sees only its own frames.

Sockets "inside" the namespace are created by a short-lived thread that joins it with setns(2):
a socket belongs to the namespace it was created in, whichever thread later uses it.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import subprocess
import threading
import time

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def interface_exists(name: str) -> bool:
    return _ip("link", "show", "dev", name, check=False).returncode == 0


class VethNet:
    """`count` veth pairs between the root namespace and a fresh one; `close()` removes all."""

    def __init__(self, count: int, prefix: str | None = None) -> None:
        self.prefix = prefix or f"ipt{os.getpid() % 100000}"
        self.namespace = f"{self.prefix}ns"
        self.switch_ends = {n: f"{self.prefix}s{n}" for n in range(1, count + 1)}
        self.host_ends = {n: f"{self.prefix}h{n}" for n in range(1, count + 1)}
        self._created = False
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        _ip("netns", "add", self.namespace)
        self._created = True
        for n, switch_end in self.switch_ends.items():
            host_end = self.host_ends[n]
            _ip("link", "add", switch_end, "type", "veth", "peer", "name", host_end)
            _ip("link", "set", host_end, "netns", self.namespace)
            _disable_ipv6(switch_end)
            subprocess.run(["ip", "netns", "exec", self.namespace, "sysctl", "-q", "-w",
                            f"net.ipv6.conf.{host_end}.disable_ipv6=1"], check=True)
            _ip("link", "set", switch_end, "up")
            _ip("-n", self.namespace, "link", "set", host_end, "up")

    def host_socket(self, n: int) -> socket.socket:
        """A raw socket on host end `n`, opened inside the namespace."""
        result: dict[str, object] = {}

        def open_inside() -> None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                with open(f"/run/netns/{self.namespace}") as ns_file:
                    if libc.setns(ns_file.fileno(), CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns failed")
                sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                sock.bind((self.host_ends[n], ETH_P_ALL))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
                result["socket"] = sock
            except BaseException as error:   # re-raised in the calling thread
                result["error"] = error

        thread = threading.Thread(target=open_inside)
        thread.start()
        thread.join()
        if "error" in result:
            raise result["error"]
        return result["socket"]

    def close(self) -> None:
        """Delete the namespace (which deletes the veth pairs with it)."""
        if self._created:
            _ip("netns", "del", self.namespace, check=False)
            self._created = False
        for name in self.switch_ends.values():
            if interface_exists(name):
                _ip("link", "del", name, check=False)


def _disable_ipv6(interface: str) -> None:
    path = f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"
    if os.path.exists(path):
        with open(path, "w") as knob:
            knob.write("1")


def receive_frames(sock: socket.socket, ether_type: int, *, expected: int,
                   quiet_s: float = 2.0, limit_s: float = 20.0) -> list[bytes]:
    """Frames of `ether_type` arriving on `sock` until `expected` came or the link went quiet."""
    frames: list[bytes] = []
    deadline = time.monotonic() + limit_s
    marker = ether_type.to_bytes(2, "big")
    while len(frames) < expected:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([sock], [], [], min(quiet_s, remaining))
        if not ready:
            break
        data, address = sock.recvfrom(65536)
        if address[2] != PACKET_OUTGOING and data[12:14] == marker:
            frames.append(data)
    return frames
