"""simple_switch's `--packet-in` packet port: a nanomsg PAIR socket, used through ctypes.

With `--packet-in ipc://PATH` simple_switch takes every port's packets from one nanomsg socket
instead of network interfaces: no veths, no namespace, no kernel traffic mixed in. Each message
is three little-endian 32-bit integers (type, port, length) followed by the frame; type 3 is a
packet into the switch, 4 a packet out of it. The library is the one BMv2 itself links
(`libnanomsg.so.5`, installed with the reference toolchain), so nothing else is needed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct

AF_SP = 1
NN_PAIR = 16
NN_SOL_SOCKET = 0
NN_RCVTIMEO = 5
NN_SNDTIMEO = 4
ETIMEDOUT = 110
EAGAIN = 11

PACKET_IN = 3
PACKET_OUT = 4
_HEADER = struct.Struct("<iii")
_MAX_FRAME = 1 << 16


class NanomsgError(OSError):
    """The socket could not be opened, or a send/receive failed or timed out."""


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("nanomsg") or "libnanomsg.so.5"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise NanomsgError(f"cannot load libnanomsg ({exc}); install the reference toolchain "
                           f"(it installs Debian's libnanomsg5)") from None
    lib.nn_strerror.restype = ctypes.c_char_p
    return lib


class PacketSocket:
    """A connected PAIR socket to one simple_switch; `send` a frame, `receive` what it emits."""

    def __init__(self, address: str, timeout_s: float = 5.0):
        self._lib = _library()
        self._sock = self._lib.nn_socket(AF_SP, NN_PAIR)
        if self._sock < 0:
            raise NanomsgError(self._error("nn_socket"))
        millis = ctypes.c_int(int(timeout_s * 1000))
        for option in (NN_RCVTIMEO, NN_SNDTIMEO):
            self._lib.nn_setsockopt(self._sock, NN_SOL_SOCKET, option, ctypes.byref(millis), 4)
        if self._lib.nn_connect(self._sock, address.encode()) < 0:
            error = self._error(f"nn_connect {address}")
            self.close()
            raise NanomsgError(error)
        self._buffer = ctypes.create_string_buffer(_MAX_FRAME + _HEADER.size)

    def _error(self, what: str) -> str:
        errno = ctypes.get_errno()
        return f"{what}: {self._lib.nn_strerror(errno).decode()} (errno {errno})"

    def send(self, port: int, frame: bytes) -> None:
        self.send_message(_HEADER.pack(PACKET_IN, port, len(frame)) + frame)

    def send_message(self, message: bytes) -> None:
        """Any message, header included (a port addition, an info request, ...)."""
        if self._lib.nn_send(self._sock, message, len(message), 0) != len(message):
            raise NanomsgError(self._error("nn_send"))

    def receive_message(self) -> bytes:
        """The next message of any type. Raises NanomsgError on timeout."""
        n = self._lib.nn_recv(self._sock, self._buffer, len(self._buffer), 0)
        if n < 0:
            raise NanomsgError(self._error("nn_recv"))
        return self._buffer.raw[:n]

    def receive(self) -> tuple[int, bytes]:
        """The next packet out: (port, frame). Raises NanomsgError on timeout."""
        while True:
            raw = self.receive_message()
            kind, port, length = _HEADER.unpack_from(raw)
            if kind == PACKET_OUT:
                return port, raw[_HEADER.size:_HEADER.size + length]

    def close(self) -> None:
        if self._sock is not None and self._sock >= 0:
            self._lib.nn_close(self._sock)
        self._sock = None
