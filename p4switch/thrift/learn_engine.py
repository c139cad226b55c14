"""simple_switch's learning engine, sans I/O: learn samples batched into buffers, published as
BMv2 learning notifications, filtered until the controller acknowledges them over Thrift.

This is what a Thrift controller of simple_switch (no P4Runtime) sees: p4-learning's L2
learning exercise subscribes to the notifications socket and calls `bm_learning_ack_buffer`.
Per learn list: a buffer of distinct samples (a sample still in the filter, that is buffered or
sent and not acknowledged, is dropped), sent when it holds `max_samples` (16 as simple_switch
creates its lists) or when its first sample is `timeout_s` old (1 s; 0: never by time, and with
one sample per buffer sent at once). A buffer goes out as one message: a 32-byte header,
`LEA|`, the switch id (u64), the context id (u32), the list id (i32), the buffer id (u64, from
0 per list) and the number of samples (u32), in the host's byte order (little-endian on x86,
as the subscribers unpack it), then the samples one after the other.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

HEADER = struct.Struct("<4sQIiQI")
TOPIC = b"LEA|"
DEFAULT_MAX_SAMPLES = 16        # simple_switch's lists, until bm_learning_set_buffer_size
DEFAULT_TIMEOUT_S = 1.0         # until bm_learning_set_timeout


class UnknownLearnList(KeyError):
    """No learn list of that id in the program."""


@dataclass
class _LearnList:
    list_id: int
    name: str
    max_samples: int = DEFAULT_MAX_SAMPLES
    timeout_s: float = DEFAULT_TIMEOUT_S
    buffer: list[bytes] = field(default_factory=list)
    started: float = 0.0
    buffer_id: int = 0
    filter: set[bytes] = field(default_factory=set)
    unacked: dict[int, list[bytes | None]] = field(default_factory=dict)  # buffer id -> samples


class LearnEngine:
    """The learn lists of one program on one switch (`device_id`, context 0)."""

    def __init__(self, device_id: int, lists: dict[int, str]) -> None:
        self.device_id = device_id
        self._lists = {list_id: _LearnList(list_id, name) for list_id, name in lists.items()}

    def _list(self, list_id: int) -> _LearnList:
        found = self._lists.get(list_id)
        if found is None:
            raise UnknownLearnList(list_id)
        return found

    def learn(self, list_id: int, sample: bytes, now: float) -> bytes | None:
        """Take a sample; the notification to publish now, if its buffer is full."""
        ll = self._list(list_id)
        if sample in ll.filter:
            return None
        ll.buffer.append(sample)
        ll.filter.add(sample)
        ll.unacked.setdefault(ll.buffer_id, []).append(sample)
        if len(ll.buffer) == 1 and ll.max_samples > 1:
            ll.started = now
        elif len(ll.buffer) >= ll.max_samples:
            return self._send(ll)
        return None

    def due(self, now: float) -> list[bytes]:
        """The buffers whose first sample is now `timeout_s` old."""
        return [self._send(ll) for ll in self._lists.values()
                if ll.buffer and ll.timeout_s > 0 and now >= ll.started + ll.timeout_s]

    def next_due(self) -> float | None:
        return min((ll.started + ll.timeout_s for ll in self._lists.values()
                    if ll.buffer and ll.timeout_s > 0), default=None)

    def _send(self, ll: _LearnList) -> bytes:
        head = HEADER.pack(TOPIC, self.device_id, 0, ll.list_id, ll.buffer_id, len(ll.buffer))
        message = head + b"".join(ll.buffer)
        ll.buffer = []
        ll.buffer_id += 1
        return message

    def ack(self, list_id: int, buffer_id: int, sample_ids) -> None:
        """Let these samples of a sent buffer be learned again (out-of-range ids are skipped;
        an unknown or fully acknowledged buffer is taken as acknowledged already)."""
        ll = self._list(list_id)
        samples = ll.unacked.get(buffer_id)
        if samples is None:
            return
        for sample_id in sample_ids:
            if 0 <= sample_id < len(samples) and samples[sample_id] is not None:
                ll.filter.discard(samples[sample_id])
                samples[sample_id] = None
        if all(sample is None for sample in samples):
            del ll.unacked[buffer_id]

    def ack_buffer(self, list_id: int, buffer_id: int) -> None:
        ll = self._list(list_id)
        samples = ll.unacked.pop(buffer_id, None)
        for sample in samples or ():
            if sample is not None:
                ll.filter.discard(sample)

    def set_timeout(self, list_id: int, timeout_ms: int) -> None:
        self._list(list_id).timeout_s = max(0, timeout_ms) / 1000.0

    def set_max_samples(self, list_id: int, max_samples: int) -> bytes | None:
        """A new buffer size; the buffer goes out at once if it already holds that many."""
        ll = self._list(list_id)
        ll.max_samples = max_samples
        if ll.buffer and len(ll.buffer) >= max_samples:
            return self._send(ll)
        return None


__all__ = ["DEFAULT_MAX_SAMPLES", "DEFAULT_TIMEOUT_S", "HEADER", "LearnEngine", "TOPIC",
           "UnknownLearnList"]
