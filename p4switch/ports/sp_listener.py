"""Where a nanomsg socket of BMv2's listens: `ipc://PATH` or `tcp://HOST:PORT`, bound and
listening, with nanomsg's rules for an IPC path left behind (shared by the packet-in PAIR
socket and the notifications PUB socket). `option` names the command-line option in errors."""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path

from p4switch.ports import sp
from p4switch.ports.errors import PortConfigError, PortError


def parse_address(text: str, option: str = "--packet-in") -> tuple[str, str | tuple[str, int]]:
    """`ipc://PATH` -> ("ipc", PATH); `tcp://HOST:PORT` -> ("tcp", (HOST, PORT)) with `*` as
    every IPv4 address and `[V6]` for an IPv6 one. PortConfigError says what is wrong."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in (sp.IPC, sp.TCP):
        raise PortConfigError(f"{option} {text}: expected ipc://PATH or tcp://HOST:PORT "
                              "(a nanomsg address)")
    if scheme == sp.IPC:
        if not rest:
            raise PortConfigError(f"{option} {text}: no path after ipc://")
        return sp.IPC, rest
    host, sep, port_text = rest.rpartition(":")
    if not sep or not host:
        raise PortConfigError(f"{option} {text}: expected tcp://HOST:PORT")
    try:
        port = int(port_text, 10)
    except ValueError:
        port = -1
    if not 0 < port <= 65535:
        raise PortConfigError(f"{option} {text}: port '{port_text}' is not in 1..65535")
    if host == "*":
        host = "0.0.0.0"
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return sp.TCP, (host, port)


class Listener:
    """A listening socket on a parsed address; `close()` removes the IPC file it made (only
    that file: a later socket's file at the same path stays)."""

    def __init__(self, address: str, option: str) -> None:
        self.address = address
        self.option = option
        self.transport, self.target = parse_address(address, option)
        self.socket = self._bind()

    def _bind(self) -> socket.socket:
        self._ipc_inode: tuple[int, int] | None = None
        if self.transport == sp.IPC:
            path = Path(self.target)
            self._clear_stale(path)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listener.bind(str(path))
                listener.listen(4)
            except OSError as error:
                listener.close()
                raise PortError(f"{self.option} {self.address}: cannot bind: "
                                f"{error.strerror}") from None
            info = os.stat(path)
            self._ipc_inode = (info.st_dev, info.st_ino)
            return listener
        host, port = self.target
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        except socket.gaierror as error:
            raise PortError(f"{self.option} {self.address}: {error.strerror}") from None
        family, kind, proto, _, where = infos[0]
        listener = socket.socket(family, kind, proto)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(where)
            listener.listen(4)
        except OSError as error:
            listener.close()
            raise PortError(f"{self.option} {self.address}: cannot bind: "
                            f"{error.strerror}") from None
        return listener

    def _clear_stale(self, path: Path) -> None:
        """nanomsg's rule for an IPC path that exists: a socket nobody listens on is removed; a
        live one, or a file that is not a socket, stops the bind."""
        where = f"{self.option} {self.address}"
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return
        except OSError as error:
            raise PortError(f"{where}: {error.strerror}") from None
        if not stat.S_ISSOCK(info.st_mode):
            raise PortError(f"{where}: {path} exists and is not a socket")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError as error:
            if error.errno in (errno.ECONNREFUSED, errno.ENOENT):
                path.unlink(missing_ok=True)
                return
            raise PortError(f"{where}: {error.strerror}") from None
        finally:
            probe.close()
        raise PortError(f"{where}: another process listens on {path}")

    def close(self) -> None:
        self.socket.close()
        if self._ipc_inode is not None:
            path = Path(self.target)
            try:
                info = os.stat(path)
                if (info.st_dev, info.st_ino) == self._ipc_inode:
                    path.unlink()
            except OSError:
                pass


__all__ = ["Listener", "parse_address"]
