"""simple_switch's own Thrift service: clone (mirroring) sessions, egress queues, its clock."""

from __future__ import annotations

import time
from collections.abc import Callable

from p4switch.runtime import NotFound, P4SwitchError
from p4switch.thrift import idl
from p4switch.thrift.errors import ApplicationFailure, CallError, runtime_errors
from p4switch.thrift.idl import MirroringError


class SimpleSwitchCalls:
    """The `simple_switch` service's calls on one switch."""

    def __init__(self, switch, clock: Callable[[], float] = time.monotonic):
        self.sw = switch
        self.clock = clock
        self.started = clock()

    def _mirroring_errors(self):
        return runtime_errors(idl.InvalidMirroringOperation,
                              {NotFound: MirroringError.SESSION_NOT_FOUND},
                              MirroringError.SESSION_NOT_FOUND)

    def mirroring_session_add(self, a) -> None:
        config = a.get("config") or {}
        with runtime_errors(idl.InvalidMirroringOperation, {},
                            MirroringError.SESSION_NOT_FOUND):
            self.sw.mirroring_add(a.get("mirror_id"), port=config.get("port"),
                                  mgid=config.get("mgid"))

    def mirroring_session_delete(self, a) -> None:
        with self._mirroring_errors():
            self.sw.mirroring_delete(a.get("mirror_id"))

    def mirroring_session_get(self, a) -> dict:
        with self._mirroring_errors():
            found = self.sw.mirroring_get(a.get("mirror_id"))
        if found is None:
            raise CallError(idl.InvalidMirroringOperation, MirroringError.SESSION_NOT_FOUND,
                            f"no mirroring session {a.get('mirror_id')}")
        return {k: v for k, v in found.items() if v is not None}

    def mirroring_mapping_add(self, a) -> int:
        try:
            self.sw.mirroring_add(a.get("mirror_id"), port=a.get("egress_port"))
        except P4SwitchError:
            return 0
        return 1

    def mirroring_mapping_delete(self, a) -> int:
        try:
            self.sw.mirroring_delete(a.get("mirror_id"))
        except P4SwitchError:
            return 0
        return 1

    def mirroring_mapping_get_egress_port(self, a) -> int:
        try:
            found = self.sw.mirroring_get(a.get("mirror_id"))
        except P4SwitchError:
            found = None
        return -1 if found is None or found.get("port") is None else found["port"]

    def _queue_priority(self, priority) -> int:
        if not 0 <= priority < self.sw.priority_queues:
            raise ApplicationFailure(f"priority {priority} is not one of the switch's "
                                     f"{self.sw.priority_queues} queues (--priority-queues)")
        return priority

    def _queues(self, set_, value, port=None, priority=None) -> int:
        try:
            set_(value, port=port, priority=priority)
        except P4SwitchError as e:
            raise ApplicationFailure(str(e)) from None
        return 0

    def set_egress_queue_depth(self, a) -> int:
        return self._queues(self.sw.set_queue_depth, a.get("depth_pkts"), a.get("port_num"))

    def set_all_egress_queue_depths(self, a) -> int:
        return self._queues(self.sw.set_queue_depth, a.get("depth_pkts"))

    def set_egress_queue_rate(self, a) -> int:
        return self._queues(self.sw.set_queue_rate, a.get("rate_pps"), a.get("port_num"))

    def set_all_egress_queue_rates(self, a) -> int:
        return self._queues(self.sw.set_queue_rate, a.get("rate_pps"))

    def set_egress_priority_queue_depth(self, a) -> int:
        return self._queues(self.sw.set_queue_depth, a.get("depth_pkts"), a.get("port_num"),
                            self._queue_priority(a.get("priority")))

    def set_egress_priority_queue_rate(self, a) -> int:
        return self._queues(self.sw.set_queue_rate, a.get("rate_pps"), a.get("port_num"),
                            self._queue_priority(a.get("priority")))

    def get_time_elapsed_us(self, a) -> int:
        return int((self.clock() - self.started) * 1e6)

    def get_time_since_epoch_us(self, a) -> int:
        return int(time.time() * 1e6)
