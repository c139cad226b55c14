"""BMv2's packet-in messages (`simple_switch --packet-in ADDR`), sans I/O.

With `--packet-in` every port of the switch is behind one nanomsg PAIR socket instead of network
interfaces (BMv2's `PacketInDevMgrImp`; PTF's nn platform is its usual peer). Each message
starts with three little-endian 32-bit integers, type, port and a third whose meaning depends
on the type:

| type | name | third integer | what the switch does |
|---|---|---|---|
| 0 | PORT_ADD | 0 | remembers the port (listed by the Thrift `bm_dev_mgr_show_ports`) |
| 1 | PORT_REMOVE | 0 | forgets it |
| 2 | PORT_SET_STATUS | 0 down, 1 up | marks a remembered port |
| 3 | PACKET_IN | the frame's length | runs the frame that follows as arriving on the port |
| 4 | PACKET_OUT | the frame's length | (switch to peer) a frame the switch sent on the port |
| 5 | INFO_REQ | what is asked | answers INFO_REP, the request's header and status 1 |
| 6 | INFO_REP | (as asked) | (switch to peer) |

What simple_switch does beyond the table, measured on simple_switch 1.15 and kept here:
packets are taken on any port, added or not (ports are not enforced by default); a PACKET_IN
runs the first `length` bytes of what follows (a shorter length cuts the frame, 0 is an empty
frame); the port is a 32-bit number that v1model's 9-bit `ingress_port` keeps the low bits of
(port 600 arrives as 88, -1 as 511, the drop port). Where BMv2 would read past the message (a
message under 12 bytes, a length past its end or negative) the message is refused with a reason
here instead. A PACKET_OUT or INFO_REP from the peer, or an unknown type, is refused as BMv2
logs it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

PORT_ADD, PORT_REMOVE, PORT_SET_STATUS, PACKET_IN, PACKET_OUT, INFO_REQ, INFO_REP = range(7)
TYPE_NAMES = ("PORT_ADD", "PORT_REMOVE", "PORT_SET_STATUS", "PACKET_IN", "PACKET_OUT",
              "INFO_REQ", "INFO_REP")
STATUS_DOWN, STATUS_UP = 0, 1            # BMv2's values (PTF's own constants are the reverse)
INFO_NOT_SUPPORTED = 1
HEADER = struct.Struct("<iii")
INFO_STATUS = struct.Struct("<i")
PORT_BITS = 0x1FF                        # v1model's ingress_port is bit<9>
UINT32 = 0xFFFFFFFF


def packet_out(port: int, frame: bytes) -> bytes:
    """The message for a frame the switch sent on `port`."""
    return HEADER.pack(PACKET_OUT, port, len(frame)) + frame


@dataclass(frozen=True, slots=True)
class Handled:
    """What one message asks of the switch: at most one of a packet to run, a reply to send,
    or a problem to log (the message was refused)."""

    packet: tuple[int, bytes] | None = None     # (ingress port for the pipeline, frame)
    reply: bytes | None = None
    problem: str | None = None


class PacketInEndpoint:
    """The switch's side of the message set: turns messages into packets and replies, and
    keeps the ports the peer added (port -> up), as BMv2's port table."""

    def __init__(self) -> None:
        self.ports: dict[int, bool] = {}
        self.received = [0] * len(TYPE_NAMES)    # messages per type
        self.refused = 0

    def handle(self, message: bytes) -> Handled:
        if len(message) < HEADER.size:
            return self._refuse(f"a message of {len(message)} bytes, shorter than the "
                                f"{HEADER.size}-byte header (type, port, length)")
        kind, raw_port, more = HEADER.unpack_from(message)
        if not 0 <= kind < len(TYPE_NAMES):
            return self._refuse(f"unknown message type {kind}")
        self.received[kind] += 1
        port = raw_port & UINT32                 # BMv2's port_t is unsigned
        if kind == PACKET_IN:
            body = len(message) - HEADER.size
            if not 0 <= more <= body:
                return self._refuse(f"PACKET_IN on port {port} says {more} bytes, but "
                                    f"{body} follow the header")
            frame = message[HEADER.size:HEADER.size + more]
            return Handled(packet=(port & PORT_BITS, frame))
        if kind == PORT_ADD:
            self.ports.setdefault(port, True)
        elif kind == PORT_REMOVE:
            self.ports.pop(port, None)
        elif kind == PORT_SET_STATUS:
            if more not in (STATUS_DOWN, STATUS_UP):
                return self._refuse(f"PORT_SET_STATUS on port {port}: unknown status {more}")
            if port in self.ports:
                self.ports[port] = more == STATUS_UP
        elif kind == INFO_REQ:
            reply = HEADER.pack(INFO_REP, raw_port, more) + INFO_STATUS.pack(INFO_NOT_SUPPORTED)
            return Handled(reply=reply)
        else:
            return self._refuse(f"{TYPE_NAMES[kind]} received: only the switch sends it")
        return Handled()

    def _refuse(self, problem: str) -> Handled:
        self.refused += 1
        return Handled(problem=problem)


__all__ = ["HEADER", "Handled", "INFO_REP", "INFO_REQ", "PACKET_IN", "PACKET_OUT",
           "PORT_ADD", "PORT_REMOVE", "PORT_SET_STATUS", "PacketInEndpoint", "STATUS_DOWN",
           "STATUS_UP", "packet_out"]
