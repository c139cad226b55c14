"""The native core's switch: switchports.c's `SwitchPorts` (receive, the service queue, the
service end, emitting copies) with the rest of `inaemu/sim/switch_node.py`'s SwitchNode
(P4Runtime serving, attach_egress, the output stage's flush and wake-ups, the egress queues'
drain events, restart), which it inherits, and the counters as the same `SwitchCounters`."""

from __future__ import annotations

from p4switch.ports.output import OutputStage
from p4switch.runtime import Switch

from inaemu.sim.switch_node import SwitchCost, SwitchCounters, SwitchNode


def native_switch_class(base: type, ingress: type, lock: type | None) -> type:
    """The SwitchNode class of the native core over the C types `base` and `ingress`; the
    runtime switches it makes are guarded by a `lock()` (switchlock.c's SwitchLock, which
    the ports take in C; None: an RLock)."""

    class NativeSwitchNode(base, SwitchNode):
        """One switch: SwitchNode's contract, its per-frame path in C."""

        def __init__(self, loop, name: str, device_id: int, *, cost: SwitchCost,
                     queue_packets: int = 1024, switch: Switch | None = None):
            super().__init__(loop, name, cost.per_packet_s, cost.per_byte_s, cost.per_copy_s,
                             queue_packets)
            self.device_id = device_id
            self.cost = cost
            self._use_runtime(self._empty_switch() if switch is None else switch)
            if self.switch.trace is not None:     # a configured switch from a traced run
                self.switch.trace = None
            self.server = None
            self.output = OutputStage()

        def _empty_switch(self) -> Switch:
            """A runtime switch without a program, with the lock the ports take in C (made
            before any server thread can see the switch)."""
            return Switch(None, lock=None if lock is None else lock())

        @property
        def counters(self) -> SwitchCounters:
            """What this switch saw so far (a copy: the counts live in C)."""
            return SwitchCounters(self.received, self.processed, self.emitted,
                                  self.dropped_input_queue, self.unrouted, self.dropped_down,
                                  self.busy_s)

        def ingress(self, port: int):
            """The `deliver` of the link arriving on `port` (entered in C by a C link)."""
            return ingress(self, port)

        def crash(self) -> None:
            """SwitchNode.crash, with the counts and the waiting frames in C."""
            self.down = True
            self.dropped_down += self._discard_waiting()
            self._stale_finishes += self._busy
            self._busy = False
            self.dropped_down += self.output.discard()
            if self._drain_event is not None:
                self._drain_event.cancel()
                self._drain_event = None
            self.stop_server()

        def _packet_out(self, _data: bytes) -> None:
            self.unrouted += 1

    return NativeSwitchNode
