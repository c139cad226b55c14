"""The Scalability Protocols' wire format (nanomsg, nng) for PAIR v0 and PUB/SUB v0, sans I/O.

BMv2's `--packet-in` port is a nanomsg PAIR socket, and its clients are libnanomsg (BMv2's own
tools) or nng (PTF's nn platform, through pynng); both speak this format, so inaemu speaks it
directly and needs neither library; BMv2's notifications socket is a PUB socket, read by SUB
sockets. A connection opens with an 8-byte greeting from each side: `00 'S' 'P' 00`, the
sender's protocol as a big-endian 16-bit number (PAIR v0 is 0x10, PUB 0x20, SUB 0x21), two zero
bytes; each side checks that the other's is the one its own protocol pairs with. Messages
follow, each a big-endian 64-bit length and that many bytes; over IPC (a Unix socket) each
message has one more byte in front, its type, 1 for a user message.

`SPConnection.receive` takes whatever arrived and returns the messages now whole; a stream that
is not this protocol raises `SPProtocolError`, after which the connection cannot be
resynchronized and is closed (as nanomsg and nng close it).
"""

from __future__ import annotations

import struct

PAIR_V0 = 0x10
PUB_V0 = 0x20
SUB_V0 = 0x21
PEER = {PAIR_V0: PAIR_V0, PUB_V0: SUB_V0, SUB_V0: PUB_V0}
NAMES = {PAIR_V0: "PAIR v0", PUB_V0: "PUB v0", SUB_V0: "SUB v0"}
GREETING_MAGIC = b"\x00SP\x00"
GREETING = struct.Struct(">4sHH")
LENGTH = struct.Struct(">Q")
IPC_USER_MESSAGE = 0x01
# nanomsg's and nng's default limit on a received message (NN_RCVMAXSIZE, NNG_OPT_RECVMAXSZ)
DEFAULT_MAX_MESSAGE = 1 << 20

TCP = "tcp"
IPC = "ipc"


class SPProtocolError(ValueError):
    """The peer's bytes are not a stream of the Scalability Protocols this socket pairs with."""


def greeting(protocol: int = PAIR_V0) -> bytes:
    return GREETING.pack(GREETING_MAGIC, protocol, 0)


class SPConnection:
    """One connection's framing; `transport` is TCP or IPC (IPC adds the type byte); this side
    speaks `protocol` (PAIR v0 unless told)."""

    def __init__(self, transport: str, *, max_message: int = DEFAULT_MAX_MESSAGE,
                 protocol: int = PAIR_V0) -> None:
        if transport not in (TCP, IPC):
            raise ValueError(f"transport {transport!r}: expected {TCP!r} or {IPC!r}")
        self.transport = transport
        self.protocol = protocol
        self.max_message = max_message
        self.greeted = False           # the peer's greeting has arrived and was accepted
        self._pending = bytearray()
        self._prefix = 1 if transport == IPC else 0

    def greeting(self) -> bytes:
        """What this side sends first."""
        return greeting(self.protocol)

    def frame(self, message: bytes) -> bytes:
        """A message as it goes on the wire."""
        head = LENGTH.pack(len(message))
        if self._prefix:
            head = bytes((IPC_USER_MESSAGE,)) + head
        return head + message

    def receive(self, data: bytes) -> list[bytes]:
        """The messages whole after `data`; the rest is kept for the next call."""
        pending = self._pending
        pending += data
        messages: list[bytes] = []
        offset = 0
        if not self.greeted:
            if len(pending) < GREETING.size:
                if not GREETING_MAGIC.startswith(bytes(pending[:4])):
                    raise SPProtocolError(_bad_greeting(bytes(pending)))
                return messages
            magic, protocol, _reserved = GREETING.unpack_from(pending)
            if magic != GREETING_MAGIC:
                raise SPProtocolError(_bad_greeting(bytes(pending[:GREETING.size])))
            wanted = PEER[self.protocol]
            if protocol != wanted:
                raise SPProtocolError(
                    f"the peer speaks protocol {protocol:#06x}, not {NAMES[wanted]} "
                    f"({wanted:#06x}): only a {NAMES[wanted].split()[0]} socket can connect")
            self.greeted = True
            offset = GREETING.size
        prefix = self._prefix
        while True:
            head = offset + prefix + LENGTH.size
            if len(pending) < head:
                break
            if prefix and pending[offset] != IPC_USER_MESSAGE:
                raise SPProtocolError(f"IPC message type {pending[offset]:#04x}: only user "
                                      f"messages ({IPC_USER_MESSAGE:#04x}) are defined")
            (size,) = LENGTH.unpack_from(pending, offset + prefix)
            if size > self.max_message:
                raise SPProtocolError(f"a message of {size} bytes, above the limit of "
                                      f"{self.max_message}")
            if len(pending) < head + size:
                break
            messages.append(bytes(pending[head:head + size]))
            offset = head + size
        if offset:
            del pending[:offset]
        return messages


def _bad_greeting(data: bytes) -> str:
    return (f"the peer's first bytes {data.hex(' ')} are not an SP greeting "
            f"({GREETING_MAGIC.hex(' ')} ...): not a nanomsg/nng socket")


__all__ = ["DEFAULT_MAX_MESSAGE", "IPC", "PAIR_V0", "PUB_V0", "SPConnection", "SPProtocolError",
           "SUB_V0", "TCP", "greeting"]
