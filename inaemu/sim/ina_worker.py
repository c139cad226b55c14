"""An INA worker on a simulated host: `hosts.ina_session.InaSession` over UDP.

Float32 vector in, the switch-aggregated sum out: the session's payloads go to the aggregator
address from UDP port 48879 to 48879, its deadlines become one re-armed timer, and its
`PeerUnreachable` (a chunk out of retries) ends the worker with that error.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hosts.errors import HostError
from hosts.ina_session import InaSession
from hosts.ina_wire import INA_UDP_PORT

from inaemu.sim.frames import PROTO_UDP, Datagram
from inaemu.sim.host_node import HostNode, WorkerOutcome


class InaWorker:
    """One InaSession on a host."""

    algo = "ina"

    def __init__(self, node: HostNode, session: InaSession, aggregator_ip: bytes,
                 vector: np.ndarray, on_end: Callable[["InaWorker"], None], sink=None):
        """`sink`: a streamed call (InaSession.start): `vector` is then a stream and the sum
        goes to `sink` block by block; the outcome has no result array."""
        self.node = node
        self.session = session
        self.aggregator_ip = aggregator_ip
        self.vector = vector
        self.sink = sink
        self.on_end = on_end
        self.outcome = WorkerOutcome()
        self.started_at = 0.0
        self._timer = node.timer(self._on_timer)
        # the native core's host gives a C listener that takes the common RESULT itself and
        # hands every other datagram to `_on_datagram` (inaemu/sim/native/inaworker.c)
        fast_listener = getattr(node, "ina_listener", None)
        self._listener = self._on_datagram if fast_listener is None else fast_listener(self)
        node.listen(PROTO_UDP, INA_UDP_PORT, self._listener)
        if fast_listener is not None:   # and its timer: the reorder timers in C, the rest here
            self._timer.action = self._listener.on_timer

    @property
    def state(self) -> str:
        return self.session.state.value

    def start(self) -> None:
        self.started_at = self.node.loop.now
        self._apply(self.session.start(self.vector, self.node.loop.now, sink=self.sink))

    def _apply(self, step) -> None:
        node = self.node
        for payload in step.send:
            node.send_frame(node.addressing.udp_frame(self.aggregator_ip, INA_UDP_PORT,
                                                      INA_UDP_PORT, payload, node.next_ident()))
        if self.session.done:
            self._end(None)
        else:
            self._timer.set(step.deadline)

    def _on_datagram(self, datagram: Datagram) -> None:
        if self.outcome.finished:
            return
        self._apply(self.session.receive(datagram.payload, self.node.loop.now))

    def _on_timer(self) -> None:
        if self.outcome.finished:
            return
        try:
            step = self.session.timeout(self.node.loop.now)
        except HostError as error:
            self._end(str(error))
            return
        self._apply(step)

    def close(self) -> None:
        """Release the host's port and timer (the call is over at every worker)."""
        self._timer.cancel()
        self.node.drop_timer(self._timer)
        self.node.unlisten(PROTO_UDP, INA_UDP_PORT, self._listener)

    def abort(self, reason: str) -> None:
        """End now with `reason` as the error (the host died)."""
        self._end(reason)

    def _end(self, error: str | None) -> None:
        self._timer.cancel()
        outcome = self.outcome
        outcome.finished_at = self.node.loop.now
        outcome.error = error
        outcome.retransmissions = self.session.counters.retransmissions
        if error is None and self.sink is None:
            outcome.result = self.session.result
            outcome.extra["err_bound"] = self.session.error_bound()
        self.on_end(self)
