"""TLS in front of the P4Runtime gRPC server, so that the switch can say whom it refused and why.

Why not gRPC's own TLS: it refuses a client inside its C core and tells the application
nothing, not even the peer's address. Here the switch's address is served by this front (one
asyncio thread): each connection's TLS handshake is done with Python's `ssl` (OpenSSL); a
refused one is one warning naming the peer and the reason (no client certificate, one from
another CA, a plaintext client, a client that does not trust the switch's certificate, a
stalled handshake), at most `refusal_lines` lines a second (refusal_log.py: a port scan does not
flood stderr; `refused` counts them all); an accepted one is relayed byte for byte to the gRPC server, which listens
only on a Unix socket in a private directory (mode 0700).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from concurrent.futures import Future

from .refusal_log import PER_SECOND, RefusalLog

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0   # a client that starts a handshake and stalls is cut after this
CHUNK = 256 * 1024
STOP_TIMEOUT_S = 5.0


class FrontStartError(Exception):
    """The front cannot listen on its address."""


class TLSFront:
    """Listens on `host:port` (port 0: a free one, `start()` returns it), terminates TLS with
    `context`, relays each accepted connection to the Unix socket `backend`."""

    def __init__(self, address: str, backend: str, context: ssl.SSLContext,
                 refusal_lines: int = PER_SECOND) -> None:
        self.address = address
        self.backend = backend
        self.context = context
        self.refused = 0                     # connections refused at the handshake (all)
        self.refusal_lines = refusal_lines   # of which at most this many logged a second
        self._refusals: RefusalLog | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task] = set()

    # -- lifecycle (any thread) -------------------------------------------------------------------
    def start(self) -> int:
        sockets = _listen(self.address)
        port = sockets[0].getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._refusals = RefusalLog(log, self.refusal_lines, schedule=self._loop.call_later)
        started: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(sockets, started), daemon=True,
                                        name="p4rt-tls")
        self._thread.start()
        started.result()
        return port

    def close_listeners(self) -> None:
        """Accept no new connection; the ones open keep going."""
        if self._loop is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close_listeners(), self._loop).result(
                STOP_TIMEOUT_S)

    def stop(self) -> None:
        """Close the listeners and every relayed connection; end the thread."""
        if self._loop is None:
            return
        loop, self._loop = self._loop, None
        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(STOP_TIMEOUT_S)
            finally:
                loop.call_soon_threadsafe(loop.stop)
                self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            loop.close()

    # -- the loop's thread ------------------------------------------------------------------------
    def _run(self, sockets: list[socket.socket], started: Future) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            for sock in sockets:
                self._servers.append(self._loop.run_until_complete(
                    asyncio.start_server(self._accept, sock=sock, limit=CHUNK)))
        except BaseException as error:       # nothing is served: say so to start()
            for sock in sockets:
                sock.close()
            started.set_exception(error)
            return
        started.set_result(None)
        self._loop.run_forever()

    async def _close_listeners(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    async def _shutdown(self) -> None:
        self._refusals.flush()
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT_S)
        self._servers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        peer = _peer_name(writer.get_extra_info("peername"))
        try:
            try:
                await writer.start_tls(self.context, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
            except (OSError, EOFError) as error:   # ssl.SSLError is an OSError
                self.refused += 1
                self._refusals.refused(peer, refusal_reason(error))
                return
            log.info("P4Runtime TLS: %s connected%s", peer, _subject(writer))
            await self._relay(peer, reader, writer)
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _relay(self, peer: str, reader, writer) -> None:
        try:
            backend_reader, backend_writer = await asyncio.open_unix_connection(
                self.backend, limit=CHUNK)
        except OSError as error:
            log.warning("P4Runtime TLS: %s: the P4Runtime service is not reachable: %s",
                        peer, error.strerror or error)
            return
        pumps = [asyncio.create_task(_pump(reader, backend_writer)),
                 asyncio.create_task(_pump(backend_reader, writer))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            backend_writer.close()


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until either side ends (HTTP/2 never half-closes, so one end closes both)."""
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
    except (OSError, EOFError):
        pass


def refusal_reason(error: BaseException) -> str:
    """What a failed server-side handshake means, in the words of the switch's options."""
    reason = getattr(error, "reason", None) or ""
    if isinstance(error, ssl.SSLCertVerificationError) or reason == "CERTIFICATE_VERIFY_FAILED":
        detail = getattr(error, "verify_message", "") or "not valid"
        return (f"its client certificate is not trusted ({detail}): it is not signed by the "
                "CA of --grpc-server-cacert")
    if reason in ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "TLSV13_ALERT_CERTIFICATE_REQUIRED"):
        return "it sent no client certificate (--grpc-server-with-client-auth requires one)"
    if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST",
                  "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
        return "it does not speak TLS (a plaintext gRPC client? this switch requires TLS)"
    if reason.startswith(("TLSV1_ALERT_", "SSLV3_ALERT_", "TLSV13_ALERT_")):
        alert = reason.split("ALERT_", 1)[1].lower().replace("_", " ")
        return (f"it refused the switch's certificate (TLS alert: {alert}); does it trust the "
                "CA that signed --grpc-server-cert, and does the certificate name the address "
                "it connects to?")
    if "NO_APPLICATION_PROTOCOL" in reason or "NO_SHARED_CIPHER" in reason or \
            "UNSUPPORTED_PROTOCOL" in reason or "VERSION_TOO_LOW" in reason:
        return f"no common TLS parameters ({reason}); gRPC needs TLS 1.2+ with ALPN h2"
    if isinstance(error, ConnectionAbortedError) and "handshake" in str(error).lower():
        return f"no TLS handshake within {HANDSHAKE_TIMEOUT_S:g} s"
    if isinstance(error, (ConnectionError, EOFError)) or reason == "UNEXPECTED_EOF_WHILE_READING":
        return ("it closed the connection during the TLS handshake (as a client does that "
                "does not trust the switch's certificate)")
    return f"TLS handshake failed: {reason or error}"


def _subject(writer: asyncio.StreamWriter) -> str:
    certificate = writer.get_extra_info("peercert")
    if not certificate:
        return ""
    names = [value for rdn in certificate.get("subject", ()) for key, value in rdn
             if key == "commonName"]
    return f" (client certificate CN={names[0]})" if names else " (client certificate)"


def _peer_name(peer) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = f"[{peer[0]}]" if ":" in str(peer[0]) else str(peer[0])
        return f"{host}:{peer[1]}"
    return str(peer or "unknown peer")


def _listen(address: str) -> list[socket.socket]:
    """Listening sockets for every address `host` resolves to, all on the same port (with port
    0, the one the first bind picked), as grpc binds; `FrontStartError` if any cannot bind."""
    host, _, port_text = address.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except (ValueError, OSError) as error:
        raise FrontStartError(f"cannot bind P4Runtime server to {address}: {error}") from None
    sockets: list[socket.socket] = []
    seen = set()
    try:
        for family, kind, proto, _, where in infos:
            if (family, where[0]) in seen:
                continue
            seen.add((family, where[0]))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((where[0], port, *where[2:]))
            sock.listen(128)
            port = port or sock.getsockname()[1]
            sock.setblocking(False)
    except OSError as error:
        for sock in sockets:
            sock.close()
        raise FrontStartError(f"cannot bind P4Runtime server to {address}: "
                              f"{error.strerror or error}") from None
    return sockets


__all__ = ["FrontStartError", "TLSFront", "refusal_reason"]
