"""The native core's link direction: link.c's `Link` (the per-frame path) with the rest of
`inaemu/sim/link.py`'s LinkDirection (attach_sender, wait_writable and its wake-up,
transmission_time), which it inherits, and the counters as the same `LinkCounters`."""

from __future__ import annotations

import random
from typing import Callable

from inaemu.sim.link import DEFAULT_QUEUE_BYTES, LinkCounters, LinkDirection, check_direction


def native_link_class(base: type) -> type:
    """The LinkDirection class of the native core over the C type `base`."""

    class NativeLinkDirection(base, LinkDirection):
        """`src` -> `dst`: LinkDirection's contract, sending and arriving in C."""

        def __init__(self, loop, src: str, dst: str, *, bw_bps: float | None, delay_s: float,
                     loss: float, rng: random.Random, deliver: Callable[[bytes], None],
                     queue_bytes: int = DEFAULT_QUEUE_BYTES):
            check_direction(src, dst, bw_bps=bw_bps, delay_s=delay_s, loss=loss,
                            queue_bytes=queue_bytes)
            super().__init__(loop, src, dst, 8.0 / bw_bps if bw_bps else 0.0, delay_s, loss,
                             rng, deliver, queue_bytes)

        @property
        def counters(self) -> LinkCounters:
            """What this direction saw so far (a copy: the counts live in C)."""
            return LinkCounters(self.sent_packets, self.sent_bytes, self.delivered_packets,
                                self.delivered_bytes, self.lost_packets, self.dropped_queue)

        @property
        def _send_buffer(self) -> int | None:
            size = self._send_buffer_bytes
            return None if size < 0 else size

        @_send_buffer.setter
        def _send_buffer(self, size: int | None) -> None:
            self._send_buffer_bytes = -1 if size is None else size

    return NativeLinkDirection
