"""Switch ports on pcap files instead of interfaces, as `simple_switch --use-files WAIT` has them.

Port N attached as `-i N@NAME` reads the packets that arrive on it from `NAME_in.pcap` (a
regular file, or a FIFO that another process writes slowly and then closes) and writes every
packet the switch sends on it to `NAME_out.pcap`. What simple_switch does, and so this module
(measured with the real one; docs/switch.md, "Files instead of interfaces"):

* **Opening.** Ports are opened in port order, each input before its output, and opening an
  input reads its pcap header: a FIFO blocks until its writer has opened it and written the
  header (p4c's STF harness opens its FIFOs in the same order: any other order deadlocks).
  The output is created then, empty; its header is written with its first packet (a port that
  sends nothing leaves a 0-byte file), and every packet is flushed as it is written. Output
  headers are simple_switch's: microsecond magic, snap length 0, link type 0.
* **Order.** After WAIT seconds, one reader merges the files by their records' timestamps: it
  holds the next record of every file not yet ended and hands the earliest to the switch (equal
  times: the lower port first; each file's records in file order, whatever their times). So
  nothing is processed while an open FIFO has neither a next record nor its end, and the order
  does not depend on when the bytes arrive: a FIFO written slowly gives what the same file
  gives. There is no pacing: records go as fast as the switch takes them.
* **End.** When every input has ended the switch keeps running (outputs still flushed per
  packet) until it is stopped. (Here an input read to its end is closed then; simple_switch
  keeps it open.)

The reader is a thread (its reads block, as simple_switch's do), and packets reach the packet
driver, in the merged order, through the ports' `receive_batch`: each port's `fileno()` is an
eventfd that is readable exactly while the next merged packet is that port's, so the driver,
which runs every readable port's frames of one wake-up as one batch, sees one port's run of
packets at a time and processes them in the merged order. At most `capacity` packets wait
between the reader and the driver (the reader then waits, as simple_switch's waits for room in
its input buffer): nothing is dropped.

A malformed record stops the switch (as simple_switch exits): the packets before it are run,
then `receive_batch` of the record's port raises `PcapFormatError` naming the file, the record's
number and its byte offset.
"""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from p4switch.ports.errors import InterfaceError, PcapFormatError, PortError
from p4switch.ports.pcap import LINKTYPE_NULL, PcapRecord, PcapStream, PcapWriter

IN_SUFFIX = "_in.pcap"
OUT_SUFFIX = "_out.pcap"
QUEUE_CAPACITY = 1024         # packets between the reader and the driver (simple_switch: 1024)
READ_BYTES = 65536


def input_path(name: str) -> Path:
    return Path(name + IN_SUFFIX)


def output_path(name: str) -> Path:
    return Path(name + OUT_SUFFIX)


@dataclass(slots=True)
class _Input:
    port: int
    path: Path
    fd: int
    stream: PcapStream
    ended: bool = False              # the file (or the FIFO's writer) has ended
    head: PcapRecord | None = None   # its next record, read but not yet handed over
    done: bool = False               # every record handed over


class _Failure:
    """Stands in the queue where a malformed record was: raised when the driver reaches it."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _Stopped(Exception):
    pass


class PcapFilePorts:
    """Every `-i N@NAME` port of one switch on pcap files, and the reader that merges them.

        files = PcapFilePorts(wait_s=0)
        files.open(0, "pcap0"); files.open(1, "pcap1")     # in port order; may block (FIFO)
        driver = PacketDriver(forwarder, files.ports)
        files.start()                                      # the reader: WAIT s, then merge
        ...
        files.close()
    """

    def __init__(self, *, wait_s: float = 0.0, capacity: int = QUEUE_CAPACITY,
                 clock: Callable[[], float] = time.time) -> None:
        self.wait_s = wait_s
        self.capacity = capacity
        self.clock = clock                   # output records' timestamps (wall time, as BMv2)
        self.ports: list[PcapFilePort] = []
        self._inputs: list[_Input] = []
        self._queue: deque[tuple[int, bytes | _Failure]] = deque()
        self._condition = threading.Condition()
        self._signalled: int | None = None   # the port whose eventfd is set (head of queue)
        self._events: dict[int, int] = {}    # port -> its eventfd
        self._stop_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.handed_over = 0                 # packets the reader queued for the driver
        self._closed = False

    # -- opening (caller's thread: may block on a FIFO, as simple_switch's start-up does) ----------
    def open(self, port: int, name: str, *,
             on_fifo: Callable[[Path], None] | None = None) -> "PcapFilePort":
        """Open `NAME_in.pcap` and read its header (a FIFO: wait for its writer and the
        header; `on_fifo(path)` is called first), then create `NAME_out.pcap`. Ports must be
        opened in port order. Raises `InterfaceError` (cannot open) or `PcapFormatError`."""
        if self._inputs and port <= self._inputs[-1].port:
            raise ValueError("pcap file ports must be opened in increasing port order")
        spec = f"-i {port}@{name}"
        path = input_path(name)
        try:
            is_fifo = stat.S_ISFIFO(os.stat(path).st_mode)
        except OSError as error:
            raise InterfaceError(f"{spec}: cannot open {path}: {error.strerror}") from None
        if is_fifo and on_fifo is not None:
            on_fifo(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)     # a FIFO: until a writer opens
        except OSError as error:
            raise InterfaceError(f"{spec}: cannot open {path}: {error.strerror}") from None
        entry = _Input(port, path, fd, PcapStream(str(path)))
        self._inputs.append(entry)              # closed by close() from here on
        try:
            while not entry.stream.read_header():
                data = os.read(fd, READ_BYTES)
                if not data:
                    entry.stream.finish()       # raises: too short for a pcap header
                entry.stream.feed(data)
        except OSError as error:
            raise InterfaceError(f"{spec}: cannot read {path}: {error.strerror}") from None
        out = output_path(name)
        try:
            writer = PcapWriter(out, snaplen=0, linktype=LINKTYPE_NULL, defer_header=True)
        except OSError as error:
            raise InterfaceError(f"{spec}: cannot create {out}: {error.strerror}") from None
        event = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._events[port] = event
        file_port = PcapFilePort(self, port, name, event, writer)
        self.ports.append(file_port)
        return file_port

    # -- the reader --------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the reader: after `wait_s` seconds it merges the inputs into the queue."""
        if self._thread is not None:
            raise RuntimeError("the pcap reader is already started")
        self._thread = threading.Thread(target=self._read_all, name="pcap-reader", daemon=True)
        self._thread.start()

    def _read_all(self) -> None:
        current: _Input | None = None
        try:
            if self.wait_s > 0 and self._sleep(self.wait_s):
                return
            for current in self._inputs:               # every file's first record, in order
                current.head = self._next(current)
            while True:
                current = None
                for entry in self._inputs:              # the earliest head; ties: lower port
                    if entry.head is not None and (
                            current is None or entry.head.time_us < current.head.time_us):
                        current = entry
                if current is None:
                    return                              # every input has ended
                self._push(current.port, current.head.data)
                current.head = self._next(current)
        except _Stopped:
            return
        except PortError as error:
            try:
                self._push(current.port, _Failure(str(error)))
            except _Stopped:
                return

    @property
    def reading(self) -> bool:
        """Whether the reader is still at work (waiting, reading or handing over)."""
        return self._thread is not None and self._thread.is_alive()

    def _sleep(self, seconds: float) -> bool:
        """Wait `seconds` (WAIT); True when stopped meanwhile."""
        poller = select.poll()
        poller.register(self._stop_fd, select.POLLIN)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if poller.poll(min(left * 1000.0, 2**31 - 1)):      # (poll takes an int of ms)
                return True
        return False

    def _next(self, entry: _Input) -> PcapRecord | None:
        """The next record of `entry` (blocking until it is complete), None at its end."""
        while True:
            record = entry.stream.next_record()
            if record is not None:
                if record.original_length != len(record.data):
                    raise PcapFormatError(
                        f"{entry.path}: record {entry.stream.count} holds {len(record.data)} "
                        f"of the packet's {record.original_length} bytes: simple_switch "
                        "reads only whole packets")
                return record
            if entry.ended:
                entry.stream.finish()                   # raises if a record is cut off
                entry.done = True
                os.close(entry.fd)                      # read to its end: let it go
                entry.fd = -1
                return None
            data = self._read(entry)
            if data:
                entry.stream.feed(data)
            else:
                entry.ended = True

    def _read(self, entry: _Input) -> bytes:
        """Bytes of `entry` as they come (a FIFO: wait for them), unless stopped."""
        poller = select.poll()          # (not select(): descriptors may be above 1023)
        poller.register(entry.fd, select.POLLIN)
        poller.register(self._stop_fd, select.POLLIN)
        if any(fd == self._stop_fd for fd, _ in poller.poll()):
            raise _Stopped
        try:
            return os.read(entry.fd, READ_BYTES)
        except OSError as error:
            raise InterfaceError(f"cannot read {entry.path}: {error.strerror}") from None

    def _push(self, port: int, item: bytes | _Failure) -> None:
        with self._condition:
            while len(self._queue) >= self.capacity and not self._stopping:
                self._condition.wait()
            if self._stopping:
                raise _Stopped
            self._queue.append((port, item))
            if not isinstance(item, _Failure):
                self.handed_over += 1
            self._signal_head()

    # -- the driver's side -------------------------------------------------------------------------
    def take(self, port: int, limit: int) -> list[bytes]:
        """Up to `limit` packets that arrive on `port` now: the run of merged packets at the head
        of the queue, if it is this port's. Raises `PcapFormatError` on reaching a malformed
        record of this port's file (after the packets before it were taken)."""
        frames: list[bytes] = []
        with self._condition:
            queue = self._queue
            while queue and len(frames) < limit and queue[0][0] == port:
                item = queue[0][1]
                if isinstance(item, _Failure):
                    if frames:
                        break                   # these first; the failure on the next call
                    queue.popleft()
                    self._signal_head()
                    raise PcapFormatError(item.message)
                queue.popleft()
                frames.append(item)
            self._signal_head()
            self._condition.notify_all()
        return frames

    def _signal_head(self) -> None:
        """Keep the invariant: exactly the eventfd of the head packet's port is readable."""
        wanted = self._queue[0][0] if self._queue else None
        if wanted == self._signalled:
            return
        if self._signalled is not None:
            try:
                os.eventfd_read(self._events[self._signalled])
            except BlockingIOError:
                pass
        if wanted is not None:
            os.eventfd_write(self._events[wanted], 1)
        self._signalled = wanted

    # -- the end -----------------------------------------------------------------------------------
    def status_line(self) -> str:
        """What the reader got through, for the exit summary."""
        waiting = [str(entry.path) for entry in self._inputs if not entry.done]
        count = self.handed_over
        text = f"pcap input: {count} packet{'s' if count != 1 else ''} read"
        if not waiting:
            return text + ", every input file read to its end"
        return text + f"; not at the end of: {', '.join(waiting)}"

    def close(self) -> None:
        """Stop the reader, close the inputs, flush and close the outputs; safe twice."""
        if self._closed:
            return
        self._closed = True
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        os.eventfd_write(self._stop_fd, 1)
        thread = self._thread
        if thread is not None:
            thread.join(timeout=5.0)
            if thread.is_alive():             # still inside a read: leave its files to exit
                return
        for entry in self._inputs:
            if entry.fd >= 0:
                os.close(entry.fd)
                entry.fd = -1
        for file_port in self.ports:
            file_port.writer.close()
        for event in self._events.values():
            os.close(event)
        os.close(self._stop_fd)


class PcapFilePort:
    """One port on pcap files, shaped like `RawSocketPort` for the packet driver."""

    def __init__(self, files: PcapFilePorts, port: int, name: str, event_fd: int,
                 writer: PcapWriter) -> None:
        self.port = port
        self.name = name
        self.writer = writer
        self._files = files
        self._event_fd = event_fd

    def fileno(self) -> int:
        return self._event_fd

    def receive_batch(self, limit: int) -> list[bytes]:
        return self._files.take(self.port, limit)

    def transmit(self, frames: list[bytes]) -> tuple[int, int]:
        """Write every frame to `NAME_out.pcap`, stamped with the wall clock, and flush: all
        taken, none failed (a file never pushes back)."""
        writer, clock = self.writer, self._files.clock
        try:
            for data in frames:
                writer.write(data, clock())
            writer.flush()
        except OSError as error:
            raise PortError(f"cannot write {writer.path}: {error.strerror}") from None
        return len(frames), 0

    def send(self, data: bytes) -> bool:
        self.transmit([data])
        return True

    def close(self) -> None:
        """Nothing of its own: `PcapFilePorts.close()` closes every port's files."""


__all__ = ["IN_SUFFIX", "OUT_SUFFIX", "PcapFilePort", "PcapFilePorts", "input_path",
           "output_path"]
