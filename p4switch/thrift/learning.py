"""Learning for a switch run as simple_switch (no P4Runtime): the switch's learn samples go to
the learning engine (learn_engine.py), its notifications to the notifications socket, and the
Thrift calls `bm_learning_*` act on the engine.

The engine belongs to one loaded program: a new program (a config load or swap, or
`bm_reset_state`, which reloads it) gets fresh lists, as simple_switch's new objects do. The
engine is used under `lock`; its buffers' timeouts are kept by a thread.
"""

from __future__ import annotations

import threading
import time

from p4switch.deadlines import DeadlineThread
from p4switch.thrift.learn_engine import LearnEngine, UnknownLearnList


class Learning:
    def __init__(self, switch, device_id: int, publish) -> None:
        """`publish(message)` sends a notification (NotificationsSocket.publish)."""
        self.switch = switch
        self.device_id = device_id
        self.publish = publish
        self.lock = threading.Lock()
        self._program = None
        self._engine: LearnEngine | None = None
        self._timer = DeadlineThread(self._send_due, "learning")
        switch.learn_handler = self.learned
        self._timer.start()

    def engine(self) -> LearnEngine | None:
        """The loaded program's engine (call with `lock` held); None without a program."""
        if not self.switch.has_program:
            return None
        program = self.switch.program
        if program is not self._program:
            self._program = program
            self._engine = LearnEngine(self.device_id, {
                list_id: ll.name for list_id, ll in program.learn_lists.items()})
        return self._engine

    def learned(self, learn_list, sample: bytes) -> None:
        """The switch's learn handler (on the packet path, the switch lock held)."""
        with self.lock:
            message = self.engine().learn(learn_list.list_id, sample, time.monotonic())
        if message is not None:
            self.publish(message)
        else:
            self._timer.wake()

    def call(self, operation: str, list_id, *args) -> None:
        """A Thrift call on the engine (ack, ack_buffer, set_timeout, set_max_samples);
        UnknownLearnList for a list the program lacks."""
        with self.lock:
            engine = self.engine()
            if engine is None:
                raise UnknownLearnList(list_id)
            message = getattr(engine, operation)(list_id, *args)
        if message is not None:
            self.publish(message)
        self._timer.wake()

    def _send_due(self) -> float | None:
        with self.lock:
            engine = self.engine()
            if engine is None:
                return None
            due = engine.due(time.monotonic())
            next_due = engine.next_due()
        for message in due:
            self.publish(message)
        return next_due

    def close(self) -> None:
        self._timer.stop()


__all__ = ["Learning"]
