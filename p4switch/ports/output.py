"""The output stage between the switch's egress and its port sockets, as BMv2 has it (sans-I/O).

Why: behind a shaped link (Mininet's `TCLink(bw=...)`, an htb qdisc) the kernel holds a port's
frames charged to its socket's send buffer; once that is full, simple_switch's blocking send
stops its one transmit thread, its output buffer (128 packets, shared by every port) fills, the
egress threads stop taking packets out of the egress queues, and those fill and drop at their
tail. That is where P4 programs see queue depths (enq_qdepth/deq_qdepth) and mark ECN. A
non-blocking port that dropped refused frames would never show a queue.

`OutputStage` keeps the frames egress produced that no socket has taken yet, in one FIFO for
every port, and is drained from its head only: while the head's port refuses, nothing behind it
goes either (one blocked port stalls the others, as BMv2's single transmit thread does). Its
`room()` is what the switch's egress queues may still hand over (`EgressQueues.set_room`): the
driver gives it to the switch after every change, so packets wait in their egress queue, where
P4 sees them, exactly when BMv2's would.

CAPACITY is BMv2's chain past the egress queue for one congested port: the output buffer (128),
the packet its transmit thread is blocked sending (1), and the packet that port's egress thread
has taken out of its queue and waits to push (1). (With several blocked ports each egress thread
holds one more; simple_switch has four.) Measured on veths behind a 512 kbit/s htb: the egress
queue starts to fill once ~99 frames of 1400 bytes are in the qdisc (the socket's default send
buffer) and ~130 more have passed egress, as here.
"""

from __future__ import annotations

from collections import deque

OUTPUT_BUFFER = 128        # simple_switch's output_buffer capacity
CAPACITY = OUTPUT_BUFFER + 2
RUN_LIMIT = 32             # frames handed to one port per send call (one sendmmsg batch)


class OutputStage:
    """Frames past egress waiting for their port's socket, oldest first (for all ports)."""

    # (slots: the native core reads them at their offsets, inaemu/sim/native/attrs.c)
    __slots__ = ('capacity', 'waiting', 'blocked_port')

    def __init__(self, capacity: int = CAPACITY) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"output stage capacity must be a positive integer, got "
                             f"{capacity!r}")
        self.capacity = capacity
        # (port, frame), oldest first; read-only outside (a loop tests it for emptiness at C
        # speed, once per turn: the unshaped path must not pay for a method call)
        self.waiting: deque[tuple[int, bytes]] = deque()
        self.blocked_port: int | None = None   # the head's port refused: wait until writable

    def __len__(self) -> int:
        return len(self.waiting)

    def room(self) -> int | None:
        """Packets egress may still hand over now; None while the stage is empty (then a
        send is tried at once and nothing needs holding back)."""
        if not self.waiting:
            return None
        return max(0, self.capacity - len(self.waiting))

    def append(self, port: int, frames: list[bytes]) -> None:
        """Queue a port's frames behind everything already waiting."""
        self.waiting.extend((port, data) for data in frames)

    def head_run(self) -> tuple[int, list[bytes]] | None:
        """The port at the head and its frames that follow one another there (up to
        RUN_LIMIT): what one send call may take. None when empty or the head is blocked."""
        if not self.waiting or self.blocked_port is not None:
            return None
        port = self.waiting[0][0]
        run = []
        for frame_port, data in self.waiting:
            if frame_port != port or len(run) == RUN_LIMIT:
                break
            run.append(data)
        return port, run

    def taken(self, count: int, *, blocked: bool) -> None:
        """The head's port took `count` frames of its run (sent, or lost to an error);
        `blocked`: it refused the next one (its socket is full) and must be waited for."""
        for _ in range(count):
            self.waiting.popleft()
        if blocked:
            self.blocked_port = self.waiting[0][0]

    def writable(self, port: int) -> None:
        """`port`'s socket can take frames again."""
        if self.blocked_port == port:
            self.blocked_port = None

    def discard(self) -> int:
        """Forget every waiting frame (shutdown); how many."""
        count = len(self.waiting)
        self.waiting.clear()
        self.blocked_port = None
        return count
