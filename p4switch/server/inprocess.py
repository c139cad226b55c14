"""P4Runtime without gRPC's transport, for a controller and switches in one process.

Why: in the simulator the controller and every switch share one process, and a gRPC server,
channel and arbitration stream per switch, HTTP/2 framing and a thread hop per call were most
of what configuring a fabric cost (~1 ms per unary call, ~5 ms to start a server and connect).
`LocalP4Runtime` serves one device with the very handlers a `P4RuntimeServer` registers
(`rpc_handlers`: the same servicer, the same deserializers); `LocalChannel` is what a client
holds instead of a grpc.Channel (the generated stub and `controller.client.SwitchClient` take it
unchanged).

What stays as over gRPC: every request is serialised by the client's serializer and parsed by
the server's deserializer, every reply serialised and parsed back, so both sides see exactly the
bytes they would on the wire; the status of a call (an abort, a code and details set by the
servicer, a servicer exception, a request or reply that fails to parse, an unknown method, a
message over the size limits) reaches the client as a `grpc.RpcError` with the code, details
and trailing metadata grpc's client reports for it; a StreamChannel is a stream whose servicer
reads the client's requests as they come (arbitration, packet I/O) and ends when the client
half-closes or cancels. What goes: the socket, HTTP/2, the server's thread pool (a unary call
runs in the caller's thread), deadlines (never set by this project's clients).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Iterable, Iterator

import grpc

from .p4runtime_server import MAX_MESSAGE_BYTES, rpc_handlers
from .service import P4RuntimeServicer
from .device import P4RuntimeDevice

log = logging.getLogger(__name__)

# grpc's client default (a channel made without options, as p4runtime-shell makes it)
CLIENT_MAX_RECEIVE_BYTES = 4 * 1024 * 1024


class LocalRpcError(grpc.RpcError):
    """A failed call, as grpc's client reports one (`code`, `details`, `trailing_metadata`)."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata=()) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code = code
        self._details = details
        self._trailing = tuple(trailing_metadata or ())

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self):
        return self._trailing

    def initial_metadata(self):
        return ()

    def debug_error_string(self) -> str:
        return f"in-process call: {self._code.name}: {self._details}"

    def __str__(self) -> str:
        return f"<LocalRpcError: {self._code.name}: {self._details}>"


class _Aborted(Exception):
    """Raised by `abort` (grpc raises a bare Exception there; the servicer may catch it)."""


class _Context:
    """The part of grpc.ServicerContext the servicer uses, with grpc's rules: `abort` records
    the status and raises; `set_code`/`set_details` are the status of a call that returns."""

    def __init__(self, peer: str) -> None:
        self.code: grpc.StatusCode | None = None
        self.details: str | None = None
        self.trailing: tuple = ()
        self.aborted = False
        self.callbacks: list[Callable[[], None]] = []
        self.active = True
        self._peer = peer
        self._ending = threading.Lock()     # the end of a stream and a cancel may race

    def abort(self, code: grpc.StatusCode, details: str):
        if code == grpc.StatusCode.OK:
            log.error("abort() called with StatusCode.OK; returning UNKNOWN")
            code, details = grpc.StatusCode.UNKNOWN, ""
        self.code, self.details, self.aborted = code, details, True
        raise _Aborted()

    def abort_with_status(self, status) -> None:
        self.trailing = tuple(status.trailing_metadata or ())
        self.abort(status.code, status.details)

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def set_trailing_metadata(self, metadata) -> None:
        self.trailing = tuple(metadata)

    def invocation_metadata(self):
        return ()

    def send_initial_metadata(self, _metadata) -> None:
        pass

    def peer(self) -> str:
        return self._peer

    def is_active(self) -> bool:
        return self.active

    def time_remaining(self):
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        if not self.active:
            return False
        self.callbacks.append(callback)
        return True

    def terminate(self) -> None:
        """The call ended (or was cancelled): run the callbacks once, as grpc does."""
        with self._ending:
            if not self.active:
                return
            self.active = False
        for callback in self.callbacks:
            callback()

    def failure(self, exception: BaseException, what: str) -> LocalRpcError:
        """The error a client sees for a servicer that raised `exception`, as grpc words it:
        the code set (by `abort` or `set_code`) or UNKNOWN; the details set, or for an abort
        without details "RPC Aborted", for any other exception `what: exception`."""
        code = self.code if self.code is not None else grpc.StatusCode.UNKNOWN
        if self.details is not None:
            details = self.details
        elif self.aborted:
            details = "RPC Aborted"
        else:
            log.error("%s: %r", what, exception)
            details = f"{what}: {exception}"
        return LocalRpcError(code, details, self.trailing)

    def status_error(self) -> LocalRpcError | None:
        """A call that returned: its error, if the servicer set a code other than OK."""
        if self.code is None or self.code == grpc.StatusCode.OK:
            return None
        return LocalRpcError(self.code, self.details or "", self.trailing)


class _Details:
    """grpc.HandlerCallDetails for a handler lookup."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


def _too_large(size: int, limit: int, side: str = "") -> LocalRpcError:
    """RESOURCE_EXHAUSTED in grpc's words (the client's side: as grpc 1.85 words it)."""
    details = f"Received message larger than max ({size} vs. {limit})"
    if side == "client":
        details = f"Stream removed (CLIENT: {details})"
    return LocalRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, details)


class LocalP4Runtime:
    """A P4Runtime device served in-process: `channel()` gives a client its connection.
    Constructed like a `P4RuntimeServer` minus the address; `stop()` refuses later calls
    (UNAVAILABLE) and cancels open streams, as a stopped server does."""

    def __init__(self, switch, *, device_id: int, cpu_port: int | None = None,
                 packet_out: Callable[[bytes], None]) -> None:
        self.device = P4RuntimeDevice(switch, device_id=device_id, packet_out=packet_out)
        self.cpu_port = cpu_port
        self._handlers = rpc_handlers(P4RuntimeServicer(self.device))
        self._found: dict[str, object] = {}
        self._streams: set[_StreamCall] = set()
        self._lock = threading.Lock()
        self.stopped = False

    def channel(self) -> "LocalChannel":
        return LocalChannel(self)

    def stop(self, grace: float | None = None) -> None:
        """Refuse further calls and end open streams with UNAVAILABLE, as a client of a
        stopped gRPC server sees it (`grace` is accepted for P4RuntimeServer's signature:
        no call is ever in flight on another thread's behalf here)."""
        with self._lock:
            self.stopped = True
            streams = list(self._streams)
        for stream in streams:
            stream.end(grpc.StatusCode.UNAVAILABLE, "the in-process server stopped")
        self.device.close()

    def packet_in(self, data: bytes) -> None:
        self.device.packet_in(data)

    @property
    def packets_in_dropped(self) -> int:
        return self.device.packets_in_dropped

    # -- dispatch ---------------------------------------------------------------------------

    def handler(self, method: str):
        """The RpcMethodHandler grpc would pick for `method` (the first handler that knows
        it), or None."""
        found = self._found.get(method)
        if found is None:
            details = _Details(method)
            for generic in self._handlers:
                found = generic.service(details)
                if found is not None:
                    self._found[method] = found
                    break
        return found

    def _check_open(self) -> None:
        if self.stopped:
            raise LocalRpcError(grpc.StatusCode.UNAVAILABLE, "the in-process server is stopped")

    def _request(self, handler, data: bytes):
        if len(data) > MAX_MESSAGE_BYTES:
            raise _too_large(len(data), MAX_MESSAGE_BYTES)
        try:
            return handler.request_deserializer(data)
        except Exception:
            log.exception("Exception deserializing request!")
            raise LocalRpcError(grpc.StatusCode.INTERNAL,
                                "Exception deserializing request!") from None

    def unary(self, method: str, data: bytes) -> bytes:
        """One unary call: request bytes in, reply bytes out, or a LocalRpcError."""
        self._check_open()
        handler = self._method(method, "unary_unary")
        request = self._request(handler, data)
        context = _Context("local")
        try:
            response = handler.unary_unary(request, context)
        except Exception as exception:
            raise context.failure(exception, "Exception calling application") from None
        finally:
            context.terminate()
        error = context.status_error()
        if error is not None:
            raise error
        return self._reply(handler, response)

    def unary_stream(self, method: str, data: bytes) -> Iterator[bytes]:
        """A server-streaming call: the reply bytes, one by one, then its status."""
        self._check_open()
        handler = self._method(method, "unary_stream")
        request = self._request(handler, data)
        context = _Context("local")
        try:
            try:
                responses = handler.unary_stream(request, context)
                for response in responses:
                    yield self._reply(handler, response)
            except LocalRpcError:
                raise
            except Exception as exception:
                raise context.failure(exception, "Exception iterating responses") from None
            error = context.status_error()
            if error is not None:
                raise error
        finally:
            context.terminate()

    def stream(self, method: str, requests: Iterable[bytes]) -> "_StreamCall":
        self._check_open()
        handler = self._method(method, "stream_stream")
        call = _StreamCall(self, handler, requests)
        with self._lock:
            self._streams.add(call)
        return call

    def _method(self, method: str, kind: str):
        handler = self.handler(method)
        if handler is None or getattr(handler, kind) is None:
            raise LocalRpcError(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        return handler

    @staticmethod
    def _reply(handler, response) -> bytes:
        try:
            data = handler.response_serializer(response)
        except Exception:
            data = None
        if data is None:
            raise LocalRpcError(grpc.StatusCode.INTERNAL, "Failed to serialize response!")
        return data

    def _ended(self, call: "_StreamCall") -> None:
        with self._lock:
            self._streams.discard(call)


class _StreamCall:
    """A bidirectional stream: the servicer's generator runs as the client iterates it (in the
    client's receive thread); requests are taken from the client's iterator as the servicer
    reads them. `cancel()` ends it from any thread; the iteration then raises CANCELLED."""

    def __init__(self, server: LocalP4Runtime, handler, requests: Iterable[bytes]) -> None:
        self._server = server
        self._handler = handler
        self._context = _Context("local")
        self._cancelled = False
        self._ended_by: LocalRpcError | None = None     # why the server ended it
        self._requests = iter(requests)
        self._responses = None
        self._done = False

    def _incoming(self):
        deserialize = self._handler.request_deserializer
        for data in self._requests:
            if self._cancelled:
                return
            yield deserialize(data)

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        if self._done:
            raise StopIteration
        if self._responses is None:
            self._responses = iter(self._handler.stream_stream(self._incoming(), self._context))
        try:
            if self._cancelled:
                raise StopIteration
            response = next(self._responses)
        except StopIteration:
            self._finish()
            if self._cancelled:
                raise self._cancellation() from None
            error = self._context.status_error()
            if error is not None:
                raise error from None
            raise
        except Exception as exception:
            self._finish()
            if self._cancelled:
                raise self._cancellation() from None
            raise self._context.failure(exception, "Exception iterating responses") from None
        return self._server._reply(self._handler, response)

    def _finish(self) -> None:
        self._done = True
        self._context.terminate()
        self._server._ended(self)

    def _cancellation(self) -> LocalRpcError:
        return self._ended_by or LocalRpcError(grpc.StatusCode.CANCELLED,
                                               "Locally cancelled by application!")

    def cancel(self) -> bool:
        """Cancel from any thread: the servicer's end callbacks run (ours end its generator)."""
        if self._done or self._cancelled:
            return False
        self._cancelled = True
        self._context.terminate()
        return True

    def end(self, code: grpc.StatusCode, details: str) -> None:
        """The server ends the stream (it stops): the client's iteration raises `code`."""
        self._ended_by = LocalRpcError(code, details)
        self.cancel()

    def is_active(self) -> bool:
        return not self._done and not self._cancelled


class LocalChannel:
    """What a client holds instead of a grpc.Channel: the generated stub's methods (unary,
    server-streaming, bidirectional) with serializers, always ready, `close()`d like one."""

    def __init__(self, server: LocalP4Runtime) -> None:
        self._server = server
        self._closed = False

    # connectivity, as grpc.channel_ready_future asks for it
    def subscribe(self, callback, try_to_connect: bool = False) -> None:
        callback(grpc.ChannelConnectivity.READY)

    def unsubscribe(self, callback) -> None:
        pass

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> "LocalChannel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open(self) -> LocalP4Runtime:
        if self._closed:
            raise ValueError("Cannot invoke RPC on closed channel!")
        return self._server

    def unary_unary(self, method: str, request_serializer=None, response_deserializer=None,
                    **_options):
        def call(request, timeout=None, metadata=None, **_kwargs):
            data = self._open().unary(method, _serialize(request, request_serializer))
            return _deserialize(data, response_deserializer)
        return call

    def unary_stream(self, method: str, request_serializer=None, response_deserializer=None,
                     **_options):
        def call(request, timeout=None, metadata=None, **_kwargs):
            replies = self._open().unary_stream(method, _serialize(request, request_serializer))
            return (_deserialize(data, response_deserializer) for data in replies)
        return call

    def stream_stream(self, method: str, request_serializer=None, response_deserializer=None,
                      **_options):
        def call(request_iterator, timeout=None, metadata=None, **_kwargs):
            requests = (_serialize(r, request_serializer) for r in request_iterator)
            return _ClientStream(self._open().stream(method, requests), response_deserializer)
        return call

    def stream_unary(self, method: str, request_serializer=None, response_deserializer=None,
                     **_options):
        def call(request_iterator, timeout=None, metadata=None, **_kwargs):
            raise LocalRpcError(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        return call


class _ClientStream:
    """The client's side of a stream: deserialised replies; `cancel()` as on a grpc call."""

    def __init__(self, call: _StreamCall, deserializer) -> None:
        self._call = call
        self._deserializer = deserializer

    def __iter__(self):
        return self

    def __next__(self):
        return _deserialize(next(self._call), self._deserializer)

    def cancel(self) -> bool:
        return self._call.cancel()

    def is_active(self) -> bool:
        return self._call.is_active()


def _serialize(message, serializer) -> bytes:
    data = message if serializer is None else serializer(message)
    if not isinstance(data, bytes):
        raise LocalRpcError(grpc.StatusCode.INTERNAL, "Exception serializing request!")
    return data


def _deserialize(data: bytes, deserializer):
    if len(data) > CLIENT_MAX_RECEIVE_BYTES:
        raise _too_large(len(data), CLIENT_MAX_RECEIVE_BYTES, "client")
    if deserializer is None:
        return data
    try:
        return deserializer(data)
    except Exception:
        raise LocalRpcError(grpc.StatusCode.INTERNAL,
                            "Exception deserializing response!") from None
