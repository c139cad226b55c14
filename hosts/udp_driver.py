"""Runs an InaSession over a UDP socket: the only I/O of in-network aggregation on a real host.

The socket is bound to the aggregation port (48879) and sends every payload to the aggregator
address. A select loop feeds datagrams and timer expiries to the session; the call ends with the
session's result, its PeerUnreachable, or AllreduceTimeout at a hard deadline, whichever is first.

Batching (docs/hosts.md, "Agent cost per chunk"): every datagram queued when the loop wakes goes
to the session in one `receive_many`. And when results trickle in one per wake-up (LONELY_WAKES
in a row) while at least half the window is in flight (the aggregator has plenty to do without
this worker), the loop pauses for about the time BATCH_RESULTS results take to arrive (SRTT ·
BATCH_RESULTS / in flight, at most an eighth of SRTT and BATCH_WAIT_MAX, never past a timer)
before reading them: one wake-up and one batch then serve several results instead of one each.
A pause that gathers fewer than 2 ends the pausing, and every RECHECK_EVERY-th is skipped to
look again: an aggregator that sends in bursts (ina.p4 behind batched ports) gets no pauses,
which would only add a sleep. The packets are the same; only when they are read changes.

Scheduling (docs/hosts.md, session 22; hosts/scheduling.py): a call runs as SCHED_BATCH (restored after it), so a
result that wakes the agent does not preempt the process running on that core: on a machine
with fewer cores than agents plus switch (Mininet on a laptop), that process is usually the
switch, which every agent waits for. The agent runs on an idle core, or at the next tick.
Always, not only on a quiet machine: a gate on the 1-minute load average turned it off for
the experiment's own load (a Mininet star's agents and switch keep it at 3-5 on 2 cores), and
Mininet unshaped ring/INA went from 1.04 (always) to 0.88 (gated) in one run. On a machine
crowded by other CPU-bound work the agents then wait for ticks (docs/hosts.md).

Segmented sends (docs/hosts.md, session 23): consecutive payloads of one size (a batch of new
CONTRIBs) go to the kernel in one `sendmsg` with a UDP_SEGMENT control message (UDP GSO, Linux
>= 4.18), which cuts the buffer into separate datagrams of that size (the last may be shorter:
a QUERY after CONTRIBs rides along): the same datagrams on the wire, one system call and one
route and socket-buffer walk for the run instead of one per datagram. At most GSO_MAX_SEGMENTS
segments and GSO_MAX_BYTES bytes per call; a payload alone goes by a plain `send`. Whether the
kernel knows UDP_SEGMENT is asked once (`getsockopt`; a kernel that does not know it would
ignore the control message and send one big datagram); a segmented send the kernel refuses
(EIO, EINVAL, EMSGSIZE, ...) turns segmenting off for the socket (`gso_refused`), and any
failed one is sent again a datagram at a time, so no datagram is lost silently. Segmentation
happens in software before the device when the device cannot do it (a veth with checksum
offload off, as Mininet's and the switch's raw sockets need): the switch sees separate frames.
"""

from __future__ import annotations

import errno
import gc
import select
import socket
import struct
import time
from typing import Callable

import numpy as np

from .errors import AllreduceTimeout, HostError
from .ina_session import InaSession, State, Step
from .ina_wire import INA_UDP_PORT
from .scheduling import yielding_to_the_switch

RECEIVE_BUFFER = 4 << 20      # room for a whole window of results arriving at once
SEND_BUFFER = 4 << 20         # and for a whole window of chunks queued behind a shaped link
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33   # linux/socket.h: beyond wmem_max/rmem_max (root)
BATCH_RESULTS = 4             # results to let queue up before a wake-up, when the window is full
BATCH_WAIT_MAX = 0.001        # the longest pause for them (seconds)
PAUSE_FRACTION = 0.125        # and never more than this fraction of the smoothed round trip
LONELY_WAKES = 4              # pause only after this many wake-ups in a row found one result
RECHECK_EVERY = 16            # and skip every 16th pause, to see whether results still trickle
MAX_DATAGRAM = 65535
SOL_UDP = 17                  # (socket.SOL_UDP where Python defines it)
UDP_SEGMENT = 103             # linux/udp.h: the GSO segment size, a socket option and a cmsg
GSO_MAX_SEGMENTS = 64         # the kernel's UDP_MAX_SEGMENTS (64 before Linux 6.x raised it)
GSO_MAX_BYTES = 65507         # the largest IPv4 UDP payload: 65535 - 20 (IP) - 8 (UDP)
# Send errors that mean "this datagram is lost" (retransmission covers them), not a broken setup.
_TRANSIENT = frozenset({errno.ENOBUFS, errno.EAGAIN, errno.ECONNREFUSED, errno.EHOSTUNREACH,
                        errno.ENETUNREACH, errno.EHOSTDOWN})


def _set_buffers(sock: socket.socket) -> None:
    """RECEIVE_BUFFER and SEND_BUFFER for the socket: root may exceed rmem_max/wmem_max,
    others get up to them. Why the send buffer: a datagram waiting in a shaped link's queue
    (tc htb) counts against it, and a non-blocking send beyond it fails (EAGAIN): the chunk is
    lost to the worker's own kernel. The default (212,992 bytes, ~90 MTU-sized datagrams at
    their kernel size) is less than a window of 128 chunks: at 60 Mbit/s some runs resent
    dozens by QUERY and NACK."""
    for forced, plain, size in ((SO_RCVBUFFORCE, socket.SO_RCVBUF, RECEIVE_BUFFER),
                                (SO_SNDBUFFORCE, socket.SO_SNDBUF, SEND_BUFFER)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, forced, size)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, plain, size)


def _kernel_segments(sock: socket.socket) -> bool:
    """Whether this socket can take UDP_SEGMENT (the option exists since Linux 4.18, with
    the control message: asking it is the test that does not risk a wrong datagram)."""
    if not hasattr(sock, "sendmsg"):
        return False
    try:
        sock.getsockopt(SOL_UDP, UDP_SEGMENT)
    except OSError:
        return False
    return True


class UdpInaDriver:
    """One worker's UDP socket and session; `allreduce` may be called many times."""

    def __init__(self, session: InaSession, *, aggregator: str, aggregator_port: int = INA_UDP_PORT,
                 bind_address: str = "0.0.0.0", bind_port: int = INA_UDP_PORT,
                 clock: Callable[[], float] = time.monotonic, batch: bool = True,
                 yield_to_aggregator: bool = True, connect: bool | None = None,
                 segment: bool = True):
        """`batch`: pause for results to queue up while the window is full;
        `yield_to_aggregator`: run each call as SCHED_BATCH; `connect`: connect the socket
        to the aggregator (None: when every slot is the switch's; see above); `segment`:
        send runs of equal-sized payloads as one UDP GSO call where the kernel allows."""
        self.session = session
        self.batch = batch
        self.yield_to_aggregator = yield_to_aggregator
        # wake-ups in a row that found one datagram (results trickle in: pausing pays);
        # -1 without batching. And how many datagrams the last wake-up found.
        self._lonely = 0 if batch else -1
        self._received = 0
        self._pauses = 0
        self.aggregator = (aggregator, aggregator_port)
        self.clock = clock
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            _set_buffers(self.sock)
            self.sock.bind((bind_address, bind_port))
        except OSError as error:
            self.sock.close()
            raise HostError(f"cannot bind UDP {bind_address}:{bind_port}: {error.strerror}") \
                from None
        self.sock.setblocking(False)
        if connect is None:
            # answers come from the switch alone (not from a host aggregator)
            connect = session.switch_slots >= session.pool_size and session.sharing == "static"
        self.connected = connect and self._connect()
        self._bound = self.sock.getsockname()
        self.send_errors = 0       # datagrams the kernel refused (treated as lost)
        self.segmenting = segment and _kernel_segments(self.sock)
        self.gso_refused = 0       # segmented sends refused for good (then plain sends)
        self.gso_failed = 0        # segmented sends that failed (sent again one by one)
        self.gso_sends = 0         # segmented sends made, and the datagrams in them
        self.gso_datagrams = 0
        self._segment_options: dict[int, list] = {}     # segment size -> its cmsg list
        self.wakeups = 0           # batches read (select returned or a pause ended)
        self.datagrams = 0         # datagrams read in them

    def _connect(self) -> bool:
        try:
            self.sock.connect(self.aggregator)
        except OSError:
            return False      # sendto then reports what is wrong with the address, per datagram
        return True

    @property
    def address(self) -> tuple[str, int]:
        """The local (address, port) the socket is bound to."""
        return self._bound

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "UdpInaDriver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def allreduce(self, vector: np.ndarray, *, timeout: float) -> np.ndarray:
        """A float32 all-reduce (MAX round, then data); the session's result."""
        return self._run(lambda now: self.session.start(vector, now), timeout)

    def allreduce_integers(self, vector: np.ndarray, *, timeout: float) -> np.ndarray:
        """An exact int32 all-reduce (no MAX round)."""
        return self._run(lambda now: self.session.start_integers(vector, now), timeout)

    def _run(self, start: Callable[[float], Step], timeout: float) -> np.ndarray:
        collecting = gc.isenabled()
        gc.disable()        # (the per-chunk path makes no cycles: nothing for it to find)
        try:
            with yielding_to_the_switch(self.yield_to_aggregator):
                return self._exchange(start, timeout)
        finally:
            if collecting:
                gc.enable()

    def _exchange(self, start: Callable[[float], Step], timeout: float) -> np.ndarray:
        self._drain_stale()
        clock, session, sock = self.clock, self.session, self.sock
        hard_deadline = clock() + timeout
        step = start(clock())
        while True:
            if step.send:
                self._send(step.send)
            if session.state is State.DONE:
                return session.result
            now = clock()
            if now >= hard_deadline:
                raise AllreduceTimeout(
                    f"job {session.job}: all-reduce not finished after {timeout:g} s "
                    f"(state {session.state.value})")
            wake = hard_deadline if step.deadline is None else min(step.deadline, hard_deadline)
            pause = self._pause(now, wake) if self._lonely >= LONELY_WAKES else 0.0
            if pause > 0:
                time.sleep(pause)
                received = self._receive_all()
                if self._received < 2:
                    self._lonely = 0         # the pause gathered nothing: stop pausing
                if received is not None:
                    step = received
                    continue
                now = clock()
            if select.select((sock,), (), (), max(0.0, wake - now))[0]:
                step = self._receive_all() or Step((), step.deadline)
                if self.batch:
                    self._lonely = self._lonely + 1 if self._received == 1 else 0
            else:
                step = session.timeout(clock())

    def _pause(self, now: float, wake: float) -> float:
        """How long to let results queue up before reading them; 0: read the next at once."""
        session = self.session
        in_flight = session.in_flight
        srtt = session.rto_estimator.srtt
        self._pauses += 1
        if (srtt is None or not self._pauses % RECHECK_EVERY or session.state is not State.DATA
                or in_flight < max(2, session.current_window // 2)):
            return 0.0
        # (at most PAUSE_FRACTION of a round trip whatever the window: the pause delays the
        # results it waits for, and a longer one would feed on the round trips it lengthens)
        return min(BATCH_WAIT_MAX, srtt * min(BATCH_RESULTS / in_flight, PAUSE_FRACTION),
                   wake - now)

    def _receive_all(self) -> Step | None:
        """Every queued datagram into the session at once (`receive_many`: one Step for the
        batch); None when nothing was queued."""
        recv, payloads = self.sock.recv, []
        self._received = 0
        while True:
            try:
                payloads.append(recv(MAX_DATAGRAM))
            except (BlockingIOError, InterruptedError):
                break
            except OSError as error:
                if error.errno in _TRANSIENT:
                    continue     # an ICMP error reported on the socket: that datagram is lost
                raise HostError(f"cannot receive on UDP {self._bound[0]}:{self._bound[1]}: "
                                f"{error.strerror}") from None
        self._received = len(payloads)
        self.wakeups += 1
        self.datagrams += len(payloads)
        if not payloads:
            return None
        return self.session.receive_many(payloads, self.clock())

    def _send(self, payloads) -> None:
        if self.segmenting and len(payloads) > 1:
            self._send_segmented(payloads)
        else:
            self._send_each(payloads)

    def _send_segmented(self, payloads) -> None:
        """Runs of equal-sized payloads (and a shorter one after a run) as one segmented
        send each; a payload alone by a plain send."""
        count, first = len(payloads), 0
        options, plain = self._segment_options, self._send_each
        while first < count:
            size = len(payloads[first])
            fits = GSO_MAX_BYTES // size
            end = first + 1
            last = min(count, first + (fits if fits < GSO_MAX_SEGMENTS else GSO_MAX_SEGMENTS))
            while end < last and len(payloads[end]) == size:
                end += 1
            # a shorter payload may close the run (the kernel's last segment may be short)
            if (end < count and end - first < GSO_MAX_SEGMENTS
                    and len(payloads[end]) < size
                    and (end - first) * size + len(payloads[end]) <= GSO_MAX_BYTES):
                end += 1
            if end - first == 1:
                plain(payloads[first:end])
            else:
                control = options.get(size)
                if control is None:
                    control = options[size] = [(SOL_UDP, UDP_SEGMENT, struct.pack("=H", size))]
                self._send_run(payloads[first:end], size, control)
                if not self.segmenting:          # refused: the rest one by one
                    plain(payloads[end:])
                    return
            first = end

    def _send_run(self, run, size: int, control: list) -> None:
        """One segmented send; on any failure, what was not sent goes again one by one."""
        try:
            if self.connected:
                sent = self.sock.sendmsg(run, control)
            else:
                sent = self.sock.sendmsg(run, control, 0, self.aggregator)
        except OSError as error:
            self.gso_failed += 1
            if not (isinstance(error, (BlockingIOError, InterruptedError))
                    or error.errno in _TRANSIENT):
                self.segmenting = False          # the kernel does not segment for us
                self.gso_refused += 1
            self._send_each(run)
            return
        count = len(run)
        self.gso_sends += 1
        self.gso_datagrams += count
        # every segment but the last is `size`; UDP sends all or nothing, but should a send
        # ever come up short, what it left goes again one by one
        if sent < (count - 1) * size + len(run[-1]):
            self.gso_failed += 1
            self._send_each(run[sent // size:])

    def _send_each(self, payloads) -> None:
        sock, aggregator, connected = self.sock, self.aggregator, self.connected
        for payload in payloads:
            try:
                if connected:
                    sock.send(payload)
                else:
                    sock.sendto(payload, aggregator)
            except (BlockingIOError, InterruptedError):
                self.send_errors += 1          # the retransmission timer covers it
            except OSError as error:
                if error.errno in _TRANSIENT:
                    self.send_errors += 1
                else:
                    raise HostError(f"cannot send to the aggregator {self.aggregator[0]}:"
                                    f"{self.aggregator[1]}: {error.strerror}") from None

    def _drain_stale(self) -> None:
        """Drop datagrams left from a previous call (late duplicates) before a new one starts."""
        while True:
            try:
                payload = self.sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError, OSError):
                return
            self.session.receive(payload, self.clock())

