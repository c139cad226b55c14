"""A UDP 'aggregator' for driver tests: datagrams in, the real ina.p4 in-process, datagrams out.

Test-only. Listens on 127.0.0.1; a datagram from a registered worker address is framed as that
worker's packet (hosts.framing) and given to the switch on the worker's port; every frame the
switch sends to a worker's port goes back to that worker's address as a datagram. Optional seeded
loss in both directions exercises the drivers' real timers.
"""

from __future__ import annotations

import random
import select
import socket
import threading

from hosts.framing import UdpFrame, build_udp_frame, parse_udp_frame
from hosts.ina_wire import INA_UDP_PORT

from tests.hosts.inproc import AGGREGATOR_IP, SWITCH_MAC, worker_ip, worker_mac


class UdpSwitchBridge:
    def __init__(self, sw, *, loss: float = 0.0, seed: int = 0):
        self.sw, self.loss = sw, loss
        self.rng = random.Random(seed)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.address = self.sock.getsockname()
        self.workers: dict[tuple[str, int], int] = {}
        self.dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def register(self, worker: int, address: tuple[str, int]) -> None:
        self.workers[address] = worker

    def __enter__(self) -> "UdpSwitchBridge":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def _lost(self) -> bool:
        if self.rng.random() < self.loss:
            self.dropped += 1
            return True
        return False

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not select.select([self.sock], [], [], 0.05)[0]:
                continue
            payload, source = self.sock.recvfrom(65535)
            w = self.workers.get(source)
            if w is None or self._lost():
                continue
            frame = build_udp_frame(UdpFrame(
                src_mac=worker_mac(w), dst_mac=SWITCH_MAC, src_ip=worker_ip(w),
                dst_ip=AGGREGATOR_IP, src_port=INA_UDP_PORT, dst_port=INA_UDP_PORT,
                payload=payload))
            by_worker = {worker: address for address, worker in self.workers.items()}
            for port, out in self.sw.receive(w + 1, frame):
                target = by_worker.get(port - 1)
                if target is not None and not self._lost():
                    self.sock.sendto(parse_udp_frame(out).payload, target)
