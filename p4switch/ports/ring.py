"""A packet socket's receive ring (PACKET_RX_RING, TPACKET_V2): frames without a system call.

Why: with `recvmmsg` the switch's own thread pays the kernel's copy of every frame into user
memory and the freeing of its socket buffer (~0.8 µs per 1.5 KB frame on this machine's veths,
a fifth of the switch's kernel time). With a ring the kernel copies each frame into a shared
memory slot as it arrives, in the context that delivered it (on a veth: the sender's system
call), and the switch only reads the slot and hands it back; `epoll` on the socket still says
when a slot is ready. (libpcap receives the same way.)

Layout (linux/if_packet.h): `slots` slots of `slot_bytes` each, laid end to end in blocks of
whole slots; each slot starts with a `tpacket2_hdr` (status, len, snaplen, mac offset, ...) and
holds one frame. A slot belongs to user space while its status has TP_STATUS_USER; writing
TP_STATUS_KERNEL hands it back. The kernel fills slots in ring order, so one index walks them.

Frames longer than a slot: the socket sets PACKET_COPY_THRESH, so the kernel also queues a whole
copy of such a frame on the socket's ordinary receive queue and marks its (cut) slot
TP_STATUS_COPY; the ring reads that copy with `recvmsg`, in order. A cut frame without a whole
copy (the receive buffer was full) or longer than `max_frame` is dropped and counted, as a full
receive buffer or a too-long frame is without a ring.

An empty read clears the socket's pending error (the kernel sets ENETDOWN when the interface
goes down; `epoll` would report the socket until something reads it). Set the ring up before
the socket is bound: frames queued before would sit on the ordinary
queue, where the first oversized frame's read would find them.
"""

from __future__ import annotations

import errno
import mmap
import socket
import struct
import sys

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_COPY_THRESH = 7
PACKET_VERSION = 10
TPACKET_V2 = 1

TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_COPY = 2

# tpacket2_hdr: u32 status, len, snaplen; u16 mac, net; u32 sec, nsec; u16 vlan_tci,
# vlan_tpid; u8 padding[4]. Read as 32-bit words: status 0, len 1, snaplen 2, and mac is the
# first 16-bit half of word 3 (little-endian: the low half).
_STATUS_WORD, _LEN_WORD, _SNAPLEN_WORD, _MAC_HALF = 0, 1, 2, 6

BLOCK_BYTES = 1 << 16           # slots come in blocks of 64 KiB (contiguous kernel pages)
FRAME_OFFSET = 96               # >= where the kernel puts an Ethernet frame in a slot (66)
MIN_SLOT = 2048


def slot_size(largest_frame: int) -> int:
    """Bytes per slot for frames up to `largest_frame` bytes (a power of two, 2 KiB to a
    block): room for the slot's header, the address after it and the frame."""
    size = MIN_SLOT
    while size < FRAME_OFFSET + largest_frame and size < BLOCK_BYTES:
        size *= 2
    return size


def available() -> bool:
    """Whether rings can work here (Linux on a little-endian 64-bit machine)."""
    return hasattr(socket, "AF_PACKET") and sys.byteorder == "little" and sys.maxsize > 2**32


class ReceiveRing:
    """The receive ring of one AF_PACKET socket; `ring_bytes` of kernel memory at most."""

    def __init__(self, sock: socket.socket, *, largest_frame: int, ring_bytes: int,
                 max_frame: int) -> None:
        self._socket = sock
        self.max_frame = max_frame
        self.slot_bytes = slot_size(largest_frame)
        per_block = BLOCK_BYTES // self.slot_bytes
        blocks = max(1, ring_bytes // BLOCK_BYTES)
        self.slots = blocks * per_block
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_COPY_THRESH, 1)
        request = struct.pack("IIII", BLOCK_BYTES, blocks, self.slot_bytes, self.slots)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, request)
        try:
            self.map = mmap.mmap(sock.fileno(), BLOCK_BYTES * blocks, mmap.MAP_SHARED,
                                 mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError:         # no ring after all: frames go to the ordinary queue again
            sock.setsockopt(SOL_PACKET, PACKET_RX_RING, bytes(16))
            raise
        self._words = memoryview(self.map).cast("I")
        self._halves = memoryview(self.map).cast("H")
        self._stride = self.slot_bytes // 4
        self._head = 0
        self.dropped = 0       # cut frames with no whole copy, or longer than max_frame

    def receive(self, limit: int) -> list[bytes]:
        """Up to `limit` frames, in arrival order, without blocking (maybe none)."""
        words, halves, stride, data = self._words, self._halves, self._stride, self.map
        head, slots = self._head, self.slots
        frames: list[bytes] = []
        while len(frames) < limit:
            at = head * stride
            status = words[at]
            if not status & TP_STATUS_USER:
                break
            size = words[at + _SNAPLEN_WORD]
            if status & TP_STATUS_COPY:
                frame = self._whole_copy()
                if frame is not None:
                    frames.append(frame)
            elif size == words[at + _LEN_WORD]:
                start = 4 * at + halves[2 * at + _MAC_HALF]
                frames.append(data[start:start + size])
            else:
                self.dropped += 1        # cut to the slot, and no whole copy was queued
            words[at] = TP_STATUS_KERNEL
            head += 1
            if head == slots:
                head = 0
        self._head = head
        if not frames:
            self._clear_error()
        return frames

    def _clear_error(self) -> None:
        """Read (and so clear) a pending socket error: the kernel sets one when the interface
        goes down, and `epoll` reports the socket as long as it stands, which no system call of
        the ring's would ever read (recvmmsg did): a switch would spin."""
        self._socket.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)

    def _whole_copy(self) -> bytes | None:
        """The whole frame of a TP_STATUS_COPY slot, from the socket's ordinary queue."""
        while True:
            try:
                frame, _, flags, _ = self._socket.recvmsg(self.max_frame)
            except InterruptedError:
                continue
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                    raise
                self.dropped += 1
                return None
            if flags & socket.MSG_TRUNC:
                self.dropped += 1
                return None
            return frame

    def close(self) -> None:
        """Unmap the ring (before the socket closes)."""
        self._words.release()
        self._halves.release()
        self.map.close()


__all__ = ["ReceiveRing", "available", "slot_size"]
