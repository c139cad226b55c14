"""A tiny stand-in for `p4switch.runtime.Switch`, so the runner's own logic is tested alone.

It has one exact table `Ingress.fwd` keyed on the first byte of the packet; `forward(port)` sends
the packet out on `port` with its last byte incremented, `flood(first, count)` sends it to
`count` ports from `first`. Counter `Ingress.hits` counts packets per ingress port.
"""

from __future__ import annotations

from dataclasses import dataclass

PROGRAM = {
    "actions": [
        {"name": "Ingress.forward", "runtime_data": [{"name": "port", "bitwidth": 9}]},
        {"name": "Ingress.flood", "runtime_data": [{"name": "first", "bitwidth": 9},
                                                    {"name": "count", "bitwidth": 8}]},
        {"name": "NoAction", "runtime_data": []},
    ],
    "counter_arrays": [{"name": "Ingress.hits", "size": 8, "is_direct": False},
                       {"name": "Ingress.fwd_counter", "is_direct": True,
                        "binding": "Ingress.fwd"}],
    "pipelines": [{"tables": [{"name": "Ingress.fwd", "key": [
        {"name": "hdr.first", "target": ["first", "byte"], "match_type": "exact"}]}]}],
}


@dataclass(frozen=True)
class Key:
    spec: tuple


@dataclass
class Info:
    keys: tuple
    actions: tuple
    const: bool = False


class FakeSwitch:
    def __init__(self) -> None:
        self.entries: dict[int, tuple[str, tuple[int, ...], int]] = {}
        self.default = ("NoAction", ())
        self.hits = [[0, 0] for _ in range(8)]
        self.direct: dict[int, list[int]] = {}
        self.calls: list[tuple] = []
        self.clock = None

    def tables(self) -> list[str]:
        return ["Ingress.fwd"]

    def table_info(self, name: str) -> Info:
        assert name == "Ingress.fwd"
        return Info(keys=(("hdr.first", "exact", 8),),
                    actions=("Ingress.forward", "Ingress.flood", "NoAction"))

    def table_add(self, table, keys, action, params=(), priority=None) -> int:
        handle = len(self.calls)
        self.calls.append(("table_add", table, tuple(k.spec for k in keys), action, params,
                           priority))
        (kind, value), = (k.spec for k in keys)
        self.entries[value] = (action, tuple(params), handle)
        self.direct[handle] = [0, 0]
        return handle

    def table_set_default(self, table, action, params=()) -> None:
        self.default = (action, tuple(params))

    def table_clear(self, table) -> None:
        self.entries.clear()

    def counter_read(self, name, index):
        assert name == "Ingress.hits"
        return tuple(self.hits[index])

    def direct_counter_read(self, table, handle):
        return tuple(self.direct[handle])

    def mc_node_create(self, rid, ports) -> int:
        self.calls.append(("mc_node_create", rid, tuple(ports)))
        return 1000 + rid

    def mc_group_create(self, mgid) -> None:
        self.calls.append(("mc_group_create", mgid))

    def mc_node_associate(self, mgid, handle) -> None:
        self.calls.append(("mc_node_associate", mgid, handle))

    def mirroring_add(self, session, port=None, mgid=None) -> None:
        self.calls.append(("mirroring_add", session, port, mgid))

    def receive(self, port: int, packet: bytes) -> list[tuple[int, bytes]]:
        self.hits[port][0] += 1
        self.hits[port][1] += len(packet)
        action, params, handle = self.entries.get(packet[0], (*self.default, None))
        if handle is not None:
            self.direct[handle][0] += 1
            self.direct[handle][1] += len(packet)
        out = packet[:-1] + bytes([(packet[-1] + 1) & 0xFF])
        if action == "Ingress.forward":
            return [(params[0], out)]
        if action == "Ingress.flood":
            return [(params[0] + i, out) for i in range(params[1])]
        return []
