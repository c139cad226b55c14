"""The grpc servicer: adapts P4Runtime RPCs to `P4RuntimeDevice` and back. No semantics here.

Per-update Write errors follow the P4Runtime specification's error reporting, which is what
p4runtime-shell parses: gRPC status UNKNOWN, and trailing metadata `grpc-status-details-bin`
holding a `google.rpc.Status` whose `details` are one packed `p4.v1.Error` per update, in order,
the successful ones with code OK.
"""

from __future__ import annotations

import logging
import queue
import threading

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .device import P4RuntimeDevice
from .errors import RequestError

log = logging.getLogger(__name__)

_END = object()
MAX_PENDING_PACKETS = 10_000  # packet-ins waiting on one stream before new ones are dropped


class StreamOutbox:
    """Messages waiting to be sent on one stream. Packet-ins beyond `max_packets` waiting are
    refused (a client that stopped reading must not make the switch buffer without bound);
    control messages are always queued."""

    def __init__(self, max_packets: int = MAX_PENDING_PACKETS) -> None:
        self.max_packets = max_packets
        self._queue: queue.Queue = queue.Queue()

    def send(self, message: p4runtime_pb2.StreamMessageResponse) -> bool:
        if message.HasField("packet") and self._queue.qsize() >= self.max_packets:
            return False
        self._queue.put(message)
        return True

    def put_control(self, item) -> None:
        """The end-of-stream marker or an error that ends the stream."""
        self._queue.put(item)

    def get(self):
        return self._queue.get()


def _abort(context: grpc.ServicerContext, error: RequestError):
    context.abort(getattr(grpc.StatusCode, error.code), error.message)


def _guarded(method):
    """Turn RequestErrors into gRPC statuses; anything else is a server bug (INTERNAL)."""

    def handler(self, request, context):
        try:
            return method(self, request, context)
        except RequestError as error:
            _abort(context, error)
        except Exception as exc:  # a bug must not kill the server thread silently
            log.exception("P4Runtime %s failed", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")

    handler.__name__ = method.__name__
    handler.__doc__ = method.__doc__
    return handler


def write_error_status(errors: list[RequestError | None]) -> status_pb2.Status:
    """The google.rpc.Status for a batch with at least one failed update."""
    failed = sum(1 for e in errors if e is not None)
    status = status_pb2.Status(
        code=code_pb2.UNKNOWN, message=f"{failed} of {len(errors)} updates failed"
    )
    for error in errors:
        detail = p4runtime_pb2.Error()
        if error is None:
            detail.canonical_code = code_pb2.OK
        else:
            detail.canonical_code = error.numeric_code
            detail.message = error.message
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    return status


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: P4RuntimeDevice) -> None:
        self.device = device
        self._outboxes: set[StreamOutbox] = set()     # of the open StreamChannels
        self._outboxes_lock = threading.Lock()

    def end_streams(self) -> None:
        """End every open StreamChannel (the server is stopping): each handler returns and
        gives its thread back, whether or not its transport says the call ended."""
        with self._outboxes_lock:
            outboxes = list(self._outboxes)
        for outbox in outboxes:
            outbox.put_control(_END)

    @_guarded
    def Capabilities(self, request, context):
        return self.device.capabilities()

    @_guarded
    def SetForwardingPipelineConfig(self, request, context):
        return self.device.set_pipeline(request)

    @_guarded
    def GetForwardingPipelineConfig(self, request, context):
        return self.device.get_pipeline(request)

    @_guarded
    def Write(self, request, context):
        errors = self.device.write(request)
        if any(e is not None for e in errors):
            status = write_error_status(errors)
            context.set_trailing_metadata(
                (("grpc-status-details-bin", status.SerializeToString()),)
            )
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details(status.message + ": " + "; ".join(
                f"update {position}: {e.message}" for position, e in enumerate(errors)
                if e is not None
            ))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        try:
            responses = self.device.read(request)
        except RequestError as error:
            _abort(context, error)
        except Exception as exc:
            log.exception("P4Runtime Read failed")
            context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")
        yield from responses

    def StreamChannel(self, request_iterator, context):
        client = object()  # identity of this stream for arbitration
        outbox = StreamOutbox()
        try:
            self.device.stream_open(client, outbox.send)
        except RequestError as error:
            _abort(context, error)
        context.add_callback(lambda: outbox.put_control(_END))
        with self._outboxes_lock:
            self._outboxes.add(outbox)

        def pump() -> None:
            try:
                for message in request_iterator:
                    self.device.stream_message(client, message)
            except RequestError as error:
                outbox.put_control(error)
            except Exception:  # the client went away mid-read
                pass
            outbox.put_control(_END)

        threading.Thread(target=pump, name="p4rt-stream", daemon=True).start()
        try:
            while True:
                item = outbox.get()
                if item is _END:
                    return
                if isinstance(item, RequestError):
                    _abort(context, item)
                yield item
        finally:
            with self._outboxes_lock:
                self._outboxes.discard(outbox)
            self.device.stream_close(client)
