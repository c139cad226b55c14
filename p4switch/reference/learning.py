"""What a program's `digest` calls hand to the control plane, on real simple_switch and on
inaemu's runtime, in one comparable form: per learn list (by name), its distinct samples as hex
in the order they were first taken.

simple_switch: its learning engine filters a sample until it is acknowledged, and nothing here
acknowledges, so it publishes each distinct sample of a list once; with every list's buffer size
set to 1 (over Thrift) each goes out at once. `LearnSubscriber` reads its notifications socket
with a plain SUB connection (p4switch.ports.sp). inaemu: `LearnCollector` is the runtime
switch's learn handler and applies the same filter."""

from __future__ import annotations

import socket
import threading
import time

from p4switch.ports import sp
from p4switch.thrift.learn_engine import HEADER as LEA_HEADER

SETTLE_S = 0.3         # after the last packet: the switch's notifications are out by then


def learn_lists(doc: dict) -> dict[int, str]:
    return {int(ll["id"]): ll["name"] for ll in doc.get("learn_lists") or ()}


class LearnCollector:
    """inaemu's side: `handler` for `Switch.learn_handler`."""

    def __init__(self) -> None:
        self.seen: set[tuple[int, bytes]] = set()
        self.learned: dict[str, list[str]] = {}

    def handler(self, learn_list, sample: bytes) -> None:
        if (learn_list.list_id, sample) not in self.seen:
            self.seen.add((learn_list.list_id, sample))
            self.learned.setdefault(learn_list.name, []).append(sample.hex())


class LearnSubscriber:
    """simple_switch's side: a SUB connection to its notifications socket (`ipc://PATH`)."""

    def __init__(self, address: str, names: dict[int, str]) -> None:
        self.names = names
        self.learned: dict[str, list[str]] = {}
        self.problem: str | None = None
        path = address.removeprefix("ipc://")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(5.0)
        self._sock.connect(path)
        self._framing = sp.SPConnection(sp.IPC, protocol=sp.SUB_V0)
        self._sock.sendall(self._framing.greeting())
        self._greeted = threading.Event()
        self._thread = threading.Thread(target=self._read, name="learn-sub", daemon=True)
        self._thread.start()
        if not self._greeted.wait(5.0):
            self.problem = "simple_switch's notifications socket did not greet"
        time.sleep(0.05)         # let the publisher take this subscriber before packets flow

    def _read(self) -> None:
        self._sock.settimeout(None)
        try:
            while True:
                data = self._sock.recv(65536)
                if not data:
                    return
                for message in self._framing.receive(data):
                    self._take(message)
                if self._framing.greeted:
                    self._greeted.set()
        except (OSError, sp.SPProtocolError) as error:
            if not isinstance(error, OSError):
                self.problem = str(error)

    def _take(self, message: bytes) -> None:
        topic, _switch, _cxt, list_id, _buffer, count = LEA_HEADER.unpack_from(message)
        if topic != b"LEA|" or not count:
            return
        body = message[LEA_HEADER.size:]
        size = len(body) // count
        name = self.names.get(list_id, f"list {list_id}")
        for i in range(count):
            self.learned.setdefault(name, []).append(body[i * size:(i + 1) * size].hex())

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=5)


__all__ = ["LearnCollector", "LearnSubscriber", "SETTLE_S", "learn_lists"]
