"""The native core's host: hostport.c's `HostPort` (receive and dispatch, send_frame, the
counters) with the rest of `inaemu/sim/host_node.py`'s HostNode (timers, listeners, kill),
which it inherits, and an `Addressing` whose frames frames.c builds."""

from __future__ import annotations

import os
from types import ModuleType
from typing import Callable

from inaemu.sim.frames import Addressing
from inaemu.sim.host_node import HostNode


def native_host_class(module: ModuleType) -> type:
    """The HostNode class of the native core over the C module `module`."""
    udp, tcp = module.udp_frame, module.tcp_frame
    ina_fast = os.environ.get("INAEMU_NATIVE_INA", "1") != "0"

    class NativeAddressing(Addressing):
        """Addressing with its frames built in C (frames.c), byte for byte the same."""

        def udp_frame(self, dst_ip: bytes, sport: int, dport: int, payload: bytes,
                      ident: int) -> bytes:
            return udp(self.gateway_mac, self.mac, self.ip, dst_ip, sport, dport, payload, ident)

        def tcp_frame(self, dst_ip: bytes, sport: int, dport: int, seq: int, ack: int,
                      flags: int, options: bytes, payload: bytes, ident: int,
                      window: int = 0xFFFF) -> bytes:
            return tcp(self.gateway_mac, self.mac, self.ip, dst_ip, sport, dport, seq, ack,
                       flags, options, payload, ident, window)

    class NativeHostNode(module.HostPort, HostNode):
        """A host: HostNode's contract, receiving and sending in C."""

        ring_path_class = module.RingPath   # a ring rank's per-segment path (ringpath.c)
        timer_class = module.Timer          # host_node.Timer in C (hosttimer.c)

        def __init__(self, loop, name: str, addressing: Addressing):
            super().__init__(addressing.ip)
            self.loop = loop
            self.name = name
            self.addressing = NativeAddressing(addressing.mac, addressing.ip,
                                               addressing.gateway_mac)
            self.timers = set()
            self._ident = 0

        if ina_fast:
            # a streamed INA job's RESULT lanes, kept once for its workers (joblanes.c)
            job_lanes_class = module.JobLanes
            # an INA session's timers in C structures (timerheap.c)
            timer_heap_class = module.TimerHeap

            def ina_listener(self, worker) -> Callable:
                """The listener of an INA worker here: the common RESULT in C (inaworker.c),
                anything else the worker's `_on_datagram` (`INAEMU_NATIVE_INA=0`: always)."""
                return module.InaFastPath(worker)

    return NativeHostNode
