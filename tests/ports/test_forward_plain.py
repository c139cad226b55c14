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


def test_per_port_batches_keep_the_books_and_order_of_forward():
    """forward_received (the driver's path: each port's frames together, departures per port)
    against forward on the general path, grouped: the same frames per port, in order, and the
    same counters, unbound outputs included."""
    from p4switch.ports.forwarding import group_by_port

    turns = [[(1, [b"2,3", b"3,2"]), (2, [b"1"]), (9, [b"2"])],   # an unknown arrival port
             [(3, [b"7,2,8", b"", b"3,7"]), (1, [b"2"])],          # unbound outputs
             [(2, [b"7"])],                                         # nothing bound comes out
             [(2, [b"3,3,1,2"]), (3, [b"1,1"])]]
    received, general = Forwarder(_Switch(), [1, 2, 3]), Forwarder(_Switch(), [1, 2, 3],
                                                                    tap=_Tap())
    tapped = Forwarder(_Switch(), [1, 2, 3], tap=_Tap())
    for turn in turns:
        arrivals = [(port, data) for port, frames in turn for data in frames]
        expected = group_by_port(general.forward(arrivals, 0.0))
        got = received.forward_received(turn, 0.0)
        assert got == expected and list(got) == list(expected)      # ports in the same order
        assert tapped.forward_received(turn, 0.0) == expected
    assert _books(received) == _books(general) == _books(tapped)
    assert received.unbound == 4
    assert received.counters[1].rx == 3 and received.counters[3].tx == 5
