"""The forwarder's plain path (no impairments, no tap) keeps the same books as the general
path: rx per arrival, tx per departure, outputs to unbound ports dropped and counted, order
kept (p4switch/ports/forwarding.py)."""

from __future__ import annotations

import threading

from p4switch.ports.forwarding import Forwarder


class _Switch:
    """Each arrival (port, data) leaves on the ports listed in its data, in order."""

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def receive_batch(self, items):
        return [(int(p), data + b"@" + p.encode()) for _, data in items
                for p in data.decode().split(",") if p]


class _Tap:
    def __init__(self) -> None:
        self.seen = []

    def arrived(self, port, data):
        self.seen.append(("in", port, data))

    def departed(self, port, data):
        self.seen.append(("out", port, data))


def _books(forwarder: Forwarder):
    return {port: (c.rx, c.tx) for port, c in forwarder.counters.items()}, forwarder.unbound


def test_plain_path_matches_the_general_path():
    batches = [[(1, b"2,3"), (2, b"1"), (9, b"2")],        # arrival on an unknown port
               [(3, b"7,2,8"), (1, b"")],                  # unbound outputs mid-batch
               [(2, b"7"), (3, b"3,3")]]
    plain, general = Forwarder(_Switch(), [1, 2, 3]), Forwarder(_Switch(), [1, 2, 3],
                                                                 tap=_Tap())
    for batch in batches:
        got = plain.forward(batch, 0.0)
        assert got == general.forward(batch, 0.0)
        assert all(port in (1, 2, 3) for port, _ in got)
    assert _books(plain) == _books(general)
    assert plain.unbound == 3
    assert plain.counters[2].tx == 3 and plain.counters[3].tx == 3
