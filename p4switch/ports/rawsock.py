"""A Linux interface as a switch port, through an AF_PACKET raw socket.

The socket is bound to one interface with ETH_P_ALL, non-blocking, in promiscuous mode, with a
big receive buffer (a switch must accept frames for any MAC address and absorb bursts while
Python runs the pipeline) and the kernel's default send buffer, as simple_switch's libpcap
socket has it: behind a shaped link (an htb qdisc) the kernel holds a port's frames charged to
that buffer, and how many it holds before the socket refuses more decides where the queue
builds up (see output.py). A refused frame is kept by the caller, not dropped. The kernel also loops back frames the socket itself sent (packet type
PACKET_OUTGOING); those are skipped, and where the kernel supports it (Linux >= 4.20) the socket
asks not to receive them at all. There, frames arrive through a receive ring shared with the
kernel (`ring.ReceiveRing`, PACKET_RX_RING: no system call per batch, and the kernel's copy of a
frame happens where it is delivered, not in the switch's thread), or, when a ring cannot be had,
many per system call (`mmsg.MessageBatch`: recvmmsg); they leave in batches through sendmmsg.
"""

from __future__ import annotations

import errno
import fcntl
import socket
import struct

from p4switch.ports import mmsg, ring
from p4switch.ports.errors import InterfaceError

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33

SOCKET_BUFFER_BYTES = 8 * 1024 * 1024
MAX_FRAME = 65536 + 64        # large enough for GSO super-frames a veth may hand over
BATCH_SLOTS = 32              # frames per recvmmsg/sendmmsg call (2 MiB of address space each)
MMSG_MIN_FRAMES = 5           # fewer frames to send: one send() each (cheaper, see send_batch)
RING_BYTES = 4 * 1024 * 1024  # a port's receive ring (kernel memory): 2,048 slots of 2 KiB at MTU 1500
SIOCGIFMTU = 0x8921
_AGAIN = (errno.EAGAIN, errno.EWOULDBLOCK)


class RawSocketPort:
    """One switch port on a Linux interface. `fileno()` makes it usable with selectors."""

    def __init__(self, port: int, interface: str, *, batched: bool = True,
                 ring_bytes: int = RING_BYTES) -> None:
        """batched=False: one system call per frame (benchmarks compare the two);
        ring_bytes=0: no receive ring (frames arrive through recvmmsg)."""
        self.port = port
        self.interface = interface
        try:
            self.ifindex = socket.if_nametoindex(interface)
        except OSError:
            raise InterfaceError(f"-i {port}@{interface}: no interface named '{interface}'") from None
        try:
            # No protocol until bind(): a socket opened with one receives every interface's
            # frames until it is bound, and those would be read as this port's.
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError:
            raise InterfaceError(f"-i {port}@{interface}: raw sockets need root "
                                 "(or CAP_NET_RAW)") from None
        self._ring = None
        try:
            sock.setblocking(False)
            _set_buffers(sock)
            self._kernel_skips_outgoing = _try_ignore_outgoing(sock)
            if batched and ring_bytes and self._kernel_skips_outgoing and ring.available():
                # before bind(): no frame may reach the ordinary queue ahead of the ring
                self._ring = _try_ring(sock, interface, ring_bytes)
            sock.bind((interface, ETH_P_ALL))
            membership = struct.pack("iHH8s", self.ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, membership)
        except OSError as error:
            if self._ring is not None:
                self._ring.close()
            sock.close()
            raise InterfaceError(f"-i {port}@{interface}: cannot open: {error.strerror}") from None
        self._socket = sock
        self._fd = sock.fileno()
        self._rx_batch = self._tx_batch = None
        if batched and self._kernel_skips_outgoing and mmsg.available():
            if self._ring is None:
                self._rx_batch = mmsg.MessageBatch(BATCH_SLOTS, MAX_FRAME)
            self._tx_batch = mmsg.MessageBatch(BATCH_SLOTS, MAX_FRAME)

    @property
    def receive_ring(self) -> ring.ReceiveRing | None:
        """The receive ring, when frames arrive through one."""
        return self._ring

    def fileno(self) -> int:
        return self._socket.fileno()

    def receive_batch(self, limit: int) -> list[bytes]:
        """Up to `limit` frames that arrived on the interface, without blocking."""
        if self._ring is not None:
            return self._ring.receive(limit)
        if self._rx_batch is not None:
            return self._receive_batched(limit)
        frames: list[bytes] = []
        try:
            if self._kernel_skips_outgoing:
                recv = self._socket.recv            # no address tuple: half the cost
                while len(frames) < limit:
                    frames.append(recv(MAX_FRAME))
            else:
                recvfrom = self._socket.recvfrom
                while len(frames) < limit:
                    data, address = recvfrom(MAX_FRAME)
                    if address[2] != PACKET_OUTGOING:
                        frames.append(data)
        except (BlockingIOError, InterruptedError):
            pass                   # drained (or a signal: the loop comes back)
        except OSError as error:
            if error.errno not in (*_AGAIN, errno.ENETDOWN, errno.ENXIO):
                raise              # ENETDOWN/ENXIO: the interface went down or away
        return frames

    def _receive_batched(self, limit: int) -> list[bytes]:
        frames: list[bytes] = []
        batch, fd = self._rx_batch, self._fd
        while len(frames) < limit:
            try:
                got = batch.receive(fd, limit - len(frames))
            except OSError as error:
                if error.errno in (*_AGAIN, errno.EINTR, errno.ENETDOWN, errno.ENXIO):
                    break          # drained, a signal, or the interface went down or away
                raise
            frames.extend(got)
            if len(got) < batch.count:
                break              # fewer than a full batch: the queue is drained (or nearly)
        return frames

    def transmit(self, frames: list[bytes]) -> tuple[int, int]:
        """Send frames in order until the socket's send buffer is full: (taken, failed).
        The first `taken` frames are done with (`failed` of them lost: interface down or
        gone, too long); the rest the kernel would not take now: the caller keeps them and
        waits until the socket is writable (back-pressure, see output.py).

        A few frames go one `send` each: sendmmsg through ctypes costs ~1.2 us more per call
        than a socket's own `send`, which it only wins back from ~6 frames on (veth, 1 KB)."""
        if self._tx_batch is not None and len(frames) >= MMSG_MIN_FRAMES:
            return self._tx_batch.transmit(self._fd, frames)
        failed = 0
        send = self._socket.send          # retries EINTR itself (PEP 475)
        for taken, data in enumerate(frames):
            try:
                send(data)
            except BlockingIOError:
                return taken, failed
            except OSError:          # lost (interface down or gone, a full qdisc: ENOBUFS)
                failed += 1
        return len(frames), failed

    def send_batch(self, frames: list[bytes]) -> int:
        """Send frames in order without waiting; how many were not sent (refused because the
        send buffer is full, or lost to an error)."""
        taken, failed = self.transmit(frames)
        return failed + len(frames) - taken

    def send(self, data: bytes) -> bool:
        """Send one frame; False when the kernel refused it (buffer full, interface down)."""
        try:
            self._socket.send(data)
            return True
        except InterruptedError:
            return self.send(data)
        except OSError:
            return False

    def close(self) -> None:
        if self._ring is not None:
            self._ring.close()
            self._ring = None
        self._socket.close()

    @property
    def closed(self) -> bool:
        return self._socket.fileno() < 0


def _set_buffers(sock: socket.socket) -> None:
    """A big receive buffer; the send buffer stays the kernel's default (wmem_default), as
    simple_switch's is: it decides how many frames a shaped link's qdisc holds before the
    socket refuses more (measured: ~99 frames of 1400 bytes with 212,992 bytes)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, SOCKET_BUFFER_BYTES)
    except OSError:            # not root: the kernel caps the plain option at rmem_max
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER_BYTES)


def _try_ring(sock: socket.socket, interface: str, ring_bytes: int) -> ring.ReceiveRing | None:
    """A receive ring sized for the interface's MTU, or None (recvmmsg then) when the kernel
    refuses one (no memory for it, no TPACKET_V2)."""
    try:
        request = struct.pack("16si20x", interface.encode()[:15], 0)
        mtu = struct.unpack("16si20x", fcntl.ioctl(sock.fileno(), SIOCGIFMTU, request))[1]
    except OSError:
        mtu = 1500
    try:
        return ring.ReceiveRing(sock, largest_frame=mtu + 18, ring_bytes=ring_bytes,
                                max_frame=MAX_FRAME)
    except OSError:
        return None


def _try_ignore_outgoing(sock: socket.socket) -> bool:
    try:
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        return True
    except OSError:
        return False           # older kernels: receive_batch() filters PACKET_OUTGOING instead
