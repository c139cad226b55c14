"""simple_switch's ageing notifications: entries of `support_timeout` tables idle for their
timeout (`bm_mt_set_entry_ttl`, the CLI's `table_set_timeout`), published on the notifications
socket for a Thrift controller.

As simple_switch's ageing monitor: a sweep every second (the first at start) finds, per ageing
table, the entries whose time since their last hit has reached their timeout, and publishes
those not published by the sweep before, one message per table: the 32-byte header `AGE|`,
switch id (u64), context id 0 (u32), buffer id (u64, one count over all messages), table id
(i32, the JSON's), the number of entries (u32), then their BMv2 handles (u32 each), in the
host's byte order (little-endian on x86). "The sweep before" remembers only what it published,
so an entry that stays idle is published again every other sweep (simple_switch's rule).
`AgeingMonitor` is that rule, sans I/O; `AgeingSweeper` runs it on the switch.
"""

from __future__ import annotations

import struct
import threading
import time

HEADER = struct.Struct("<4sQIQiI")
TOPIC = b"AGE|"
SWEEP_S = 1.0
HANDLE = struct.Struct("<I")


class AgeingMonitor:
    """The messages of one sweep from what is expired now: {table id: BMv2 handles}."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.buffer_id = 0
        self._published: dict[int, set[int]] = {}     # table id -> handles the sweep before

    def sweep(self, expired: dict[int, list[int]]) -> list[bytes]:
        messages = []
        for table_id in sorted(expired):
            handles = expired[table_id]
            before = self._published.get(table_id, set())
            new = [h for h in handles if h not in before]
            self._published[table_id] = set(new)
            if not new:
                continue
            messages.append(HEADER.pack(TOPIC, self.device_id, 0, self.buffer_id, table_id,
                                        len(new)) + b"".join(HANDLE.pack(h) for h in new))
            self.buffer_id += 1
        return messages


class AgeingSweeper:
    """Sweeps a switch's ageing tables every `period_s` on a thread and publishes what the
    monitor gives. `service`: the Thrift RuntimeService (its tables hold BMv2's handles)."""

    def __init__(self, service, publish, period_s: float = SWEEP_S) -> None:
        self.service = service
        self.publish = publish
        self.period_s = period_s
        self._program = None
        self._monitor = AgeingMonitor(service.device_id)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ageing", daemon=True)
        self._thread.start()

    def expired(self) -> dict[int, list[int]]:
        """{JSON table id: BMv2 handles of its entries idle for their timeout}, with the switch
        lock held; a new program starts the monitor over (simple_switch's new objects)."""
        sw = self.service.sw
        if not sw.has_program:
            return {}
        if sw.program is not self._program:
            self._program = sw.program
            self._monitor = AgeingMonitor(self.service.device_id)
        tables = self.service.tables()
        ids = {t["name"]: t["id"] for p in sw.program.doc.get("pipelines", ())
               for t in p.get("tables", ())}
        out: dict[int, list[int]] = {}
        for name, shape in tables.tables.items():
            if not shape.support_timeout:
                continue
            idle = {handle: (ttl, idle_ns) for handle, ttl, idle_ns in sw.table_idle(name)}
            # BMv2 counts in whole milliseconds: expired when ms since the hit >= the ms timeout
            out[ids[name]] = [bmv2 for bmv2, entry in tables.listed(shape)
                              if idle[entry.handle][0] > 0 and idle[entry.handle][1] // 1_000_000
                              >= idle[entry.handle][0] // 1_000_000]
        return out

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            with self.service.sw.lock:
                messages = self._monitor.sweep(self.expired())
            for message in messages:
                self.publish(message)
            due += self.period_s
            self._stop.wait(max(0.0, due - time.monotonic()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)


__all__ = ["AgeingMonitor", "AgeingSweeper", "HEADER", "SWEEP_S", "TOPIC"]
