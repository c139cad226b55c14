"""A simulated switch: the real `p4switch.runtime.Switch` behind a single-server queue, with its
own P4Runtime server so that the unchanged controller configures it.

Why a service time: in Mininet the software switch, not the 1 Gbit/s veths, is usually the
bottleneck (tens of thousands of packets per second). The simulator reproduces that with a cost
per packet, per byte and per emitted copy (multicast replicas go through egress one by one).
Frames that arrive while the switch is busy wait in an input queue of `queue_packets` frames
(the socket buffers in front of the real switch); beyond that they are dropped and counted.

Order of work for one frame: when its service starts, the pipeline runs (`receive`, with the
switch's clock reading the virtual time), which tells how many copies it makes; the copies leave
on their egress links when the service time has passed. A copy to a port with no link (or to
the CPU port) is counted in `unrouted` and discarded.

Egress queues (when a drain rate is set on the runtime, `switch.set_queue_rate`): a copy that
has to wait is held by the runtime between ingress and egress; an event at the runtime's next
departure time (virtual) runs egress for what is due and sends it on its link at once. With no
rate set no such event ever exists.

Back-pressure, as `inaemu switch` and simple_switch have it behind a shaped link: each egress
link's sender is a socket with the kernel's default send buffer (`LinkDirection.attach_sender`).
A frame its socket will not take now waits, in order, in the switch's output stage (the same
`OutputStage` as the real driver's: BMv2's output buffer and transmit thread, shared by every
port, drained from its head only); while that stage is full the runtime's egress queues stop
draining (`Switch.set_output_room`), so packets wait there, where P4 sees their depth, and the
queue drops at its tail when full, instead of the link dropping them. When the socket has room
again (half its buffer, as the kernel wakes a blocked sender) the stage goes on and the queues
drain into it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import partial
from time import perf_counter

from p4switch.ports.output import OutputStage
from p4switch.runtime import Switch
from p4switch.server import LocalP4Runtime, P4RuntimeServer

from inaemu.sim.events import EventLoop
from inaemu.sim.link import LinkDirection


@dataclass(frozen=True)
class SwitchCost:
    """Service time of one received frame: per_packet + per_byte * len + per_copy * copies.

    The default (17 us + 2 us per copy) is what `inaemu switch` costs on one core for ina.p4 at
    k = 32 or a routed packet, socket path included (docs/sim.md); `SwitchCost(0, 0, 0)` makes
    the switch infinitely fast.
    """

    per_packet_s: float = 17e-6
    per_byte_s: float = 0.0
    per_copy_s: float = 2e-6

    def __post_init__(self) -> None:
        for name in ("per_packet_s", "per_byte_s", "per_copy_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"switch cost {name} must be a number >= 0, got {value!r}")

    @classmethod
    def from_pps(cls, pps: float) -> "SwitchCost":
        """A switch that handles `pps` packets per second, whatever their size or copies."""
        if pps <= 0:
            raise ValueError(f"switch packets per second must be positive, got {pps!r}")
        return cls(per_packet_s=1.0 / pps, per_byte_s=0.0, per_copy_s=0.0)

    def service_time(self, size: int, copies: int) -> float:
        return self.per_packet_s + self.per_byte_s * size + self.per_copy_s * copies


@dataclass
class SwitchCounters:
    received: int = 0
    processed: int = 0
    emitted: int = 0
    dropped_input_queue: int = 0
    unrouted: int = 0
    dropped_down: int = 0       # frames that reached (or were inside) the switch while it was down
    busy_s: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class SwitchNode:
    """One switch of the simulated network; `egress[port]` are the links leaving it."""

    def __init__(self, loop: EventLoop, name: str, device_id: int, *, cost: SwitchCost,
                 queue_packets: int = 1024, switch: Switch | None = None):
        self.loop = loop
        self.name = name
        self.device_id = device_id
        self.cost = cost
        self.queue_packets = queue_packets
        self._use_runtime(self._empty_switch() if switch is None else switch)
        if self.switch.trace is not None:     # a configured switch from a traced run before
            self.switch.trace = None
        self.egress: dict[int, LinkDirection] = {}
        # the per-frame path's constants, looked up once
        self._cost = (cost.per_packet_s, cost.per_byte_s, cost.per_copy_s)
        self.counters = SwitchCounters()
        self.server: P4RuntimeServer | LocalP4Runtime | None = None
        self.runtime_wall_s = 0.0   # wall time spent inside the runtime (not a counter: it varies)
        self.time_runtime = False   # measure it (two clock reads a packet: ~2 % of a run)
        self._waiting: deque[tuple[int, bytes]] = deque()
        self._busy = False
        self._drain_event = None    # the pending departure from the runtime's egress queues
        self.recorder = None        # an inaemu.trace SwitchRecorder in traced runs, else None
        self.down = False           # crashed (a scenario's switch_crash): forwards nothing
        self._stale_finishes = 0    # service ends still due for frames lost in a crash
        self.output = OutputStage()  # frames past egress that their port's socket refused
        self._in_service = 0        # copies made by the frame in service, not yet emitted
        self._room_told: int | None = None

    def _empty_switch(self) -> Switch:
        """A runtime switch without a program, for this node."""
        return Switch(None)

    # -- failures (scenarios) -------------------------------------------------------------------

    def crash(self) -> None:
        """The switch process dies: what waits or is being served is lost, its P4Runtime
        server goes away, and its program, tables and registers are gone (a restart starts
        from an empty switch)."""
        self.down = True
        self.counters.dropped_down += len(self._waiting)
        self._waiting.clear()
        self._stale_finishes += self._busy
        self._busy = False
        self.counters.dropped_down += self.output.discard()
        if self._drain_event is not None:
            self._drain_event.cancel()
            self._drain_event = None
        self.stop_server()

    def restart(self) -> None:
        """Come back as an empty switch (no program), as simple_switch_grpc starts; the
        controller pushes the pipeline and the state again."""
        self._use_runtime(self._empty_switch())
        self.output.discard()
        self._in_service = 0
        self._room_told = None
        self.down = False

    def _use_runtime(self, switch: Switch) -> None:
        """Serve frames with `switch` (its clock reads the virtual time); its per-frame
        methods are looked up once."""
        self.switch = switch
        switch.clock = self.loop.clock
        self._receive = switch.receive
        self._queue_next_due = switch.queue_next_due

    # -- control plane --------------------------------------------------------------------------

    def start_server(self) -> int:
        """Serve P4Runtime on 127.0.0.1 (a free port); returns the port."""
        self.server = P4RuntimeServer(self.switch, device_id=self.device_id, cpu_port=None,
                                      address="127.0.0.1:0", packet_out=self._packet_out)
        self.server.start()
        return self.server.bound_port

    def start_local(self):
        """Serve P4Runtime in this process (no gRPC); returns the channel a client uses."""
        self.server = LocalP4Runtime(self.switch, device_id=self.device_id, cpu_port=None,
                                     packet_out=self._packet_out)
        return self.server.channel()

    def stop_server(self) -> None:
        if isinstance(self.server, LocalP4Runtime):
            self.server.stop()
        elif self.server is not None:
            self.server.stop(grace=0)
        self.server = None

    def _packet_out(self, _data: bytes) -> None:
        """PacketOut has no meaning in the simulator (no CPU port); the copy is discarded."""
        self.counters.unrouted += 1

    # -- data plane -----------------------------------------------------------------------------

    def attach_egress(self, port: int, link: LinkDirection) -> None:
        """`link` leaves this switch on `port`; its sender is this switch's port socket."""
        self.egress[port] = link
        link.attach_sender(partial(self._writable, port))

    def ingress(self, port: int):
        """The `deliver` callback for the link arriving on `port`."""
        return partial(self.receive, port)

    def receive(self, port: int, frame: bytes) -> None:
        self.counters.received += 1
        if self.down:
            self.counters.dropped_down += 1
            return
        if self.recorder is not None:
            self.recorder.arrived(port, frame)
        if self._busy:
            if len(self._waiting) >= self.queue_packets:
                self.counters.dropped_input_queue += 1
                self.loop.record(f"{self.name} input-drop {len(frame)}")
                return
            self._waiting.append((port, frame))
            return
        self._serve(port, frame)

    def _serve(self, port: int, frame: bytes) -> None:
        self._busy = True
        if self.time_runtime:
            started = perf_counter()
            outputs = self._receive(port, frame)   # the runtime takes its own lock
            self.runtime_wall_s += perf_counter() - started
        else:
            outputs = self._receive(port, frame)
        per_packet, per_byte, per_copy = self._cost
        service = per_packet + per_byte * len(frame) + per_copy * len(outputs)
        counters = self.counters
        counters.processed += 1
        counters.busy_s += service
        self._in_service = len(outputs)
        loop = self.loop
        loop.post(loop.now + service, self._finish, outputs)
        if self._queue_next_due() is not None:
            self._schedule_drain()

    def _schedule_drain(self) -> None:
        """An event at the egress queues' next departure, if any (one pending at a time)."""
        due = self.switch.queue_next_due()
        if due is None:
            return
        event = self._drain_event
        if event is not None and event.pending:
            if event.time <= due:
                return
            event.cancel()
        self._drain_event = self.loop.at(due, self._drain)

    def _drain(self) -> None:
        self._drain_event = None
        if self.time_runtime:
            started = perf_counter()
            outputs = self.switch.release_queued()
            self.runtime_wall_s += perf_counter() - started
        else:
            outputs = self.switch.release_queued()
        self._emit(outputs)
        self._schedule_drain()

    def _emit(self, outputs: list[tuple[int, bytes]]) -> None:
        egress, output = self.egress, self.output
        waiting = output.waiting
        for port, out in outputs:
            link = egress.get(port)
            if link is None:
                self.counters.unrouted += 1
                continue
            self.counters.emitted += 1
            if not waiting and link.writable():
                link.send(out)
            else:
                output.append(port, [out])
        if waiting or self._room_told is not None:
            self._flush_output()

    # -- back-pressure --------------------------------------------------------------------------

    def _flush_output(self) -> None:
        """Send from the head of the output stage until it is empty or a port's socket is
        full, then tell the runtime how much its egress may still hand over."""
        output, egress = self.output, self.egress
        while True:
            run = output.head_run()
            if run is None:
                break
            port, frames = run
            link = egress[port]
            taken = 0
            for frame in frames:
                if not link.writable():
                    break
                link.send(frame)
                taken += 1
            blocked = taken < len(frames)
            output.taken(taken, blocked=blocked)
            if blocked:
                link.wait_writable()
                break
        room = output.room()
        if room is not None:
            room = max(0, room - self._in_service)   # made already, emitted at service end
        if room is not None or self._room_told is not None:
            # told every time: the runtime spends its room as it admits packets
            self._room_told = room
            self.switch.set_output_room(room)

    def _writable(self, port: int) -> None:
        """`port`'s socket has room again: the stage goes on, the queues drain into it."""
        if self.down:
            return
        self.output.writable(port)
        self._flush_output()
        self._schedule_drain()

    def _finish(self, outputs: list[tuple[int, bytes]]) -> None:
        if self._stale_finishes:       # the frame in service when the switch crashed
            self._stale_finishes -= 1
            self.counters.dropped_down += 1
            return
        self._in_service = 0
        self._emit(outputs)
        if self._waiting:
            self._serve(*self._waiting.popleft())
        else:
            self._busy = False
