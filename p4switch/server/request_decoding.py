"""A request that does not parse is INTERNAL, as simple_switch_grpc (and gRPC's synchronous
server) answer, on gRPC's asyncio server too.

Why: the asyncio server reports an exception of a request deserializer as UNKNOWN ("Unexpected
DecodeError ..."), and for a StreamChannel message it ends the stream the same way. Here each
method's deserializer never raises: a request that does not parse becomes `CORRUPT`, and the
method answers it with INTERNAL "Exception deserializing request!" (the words of the
synchronous server, which the in-process transport repeats); a corrupt message on a stream ends
that stream with the same status.
"""

from __future__ import annotations

import logging

import grpc

from .errors import INTERNAL, RequestError

log = logging.getLogger(__name__)

DETAILS = "Exception deserializing request!"


class _Corrupt:
    def __repr__(self) -> str:
        return "CORRUPT"


CORRUPT = _Corrupt()


def _tolerant(deserialize):
    if deserialize is None:
        return None

    def parse(data: bytes):
        try:
            return deserialize(data)
        except Exception:        # every parse failure; the method answers it
            log.warning("P4Runtime: a request that does not parse was refused")
            return CORRUPT
    return parse


def _refuse(context: grpc.ServicerContext):
    context.abort(grpc.StatusCode.INTERNAL, DETAILS)


def _messages(requests):
    """A stream's requests; a corrupt one ends the stream (the servicer turns the RequestError
    into the stream's status)."""
    for request in requests:
        if request is CORRUPT:
            raise RequestError(INTERNAL, DETAILS)
        yield request


def _guard(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    if handler.unary_unary is not None:
        behaviour = handler.unary_unary

        def unary_unary(request, context):
            if request is CORRUPT:
                _refuse(context)
            return behaviour(request, context)
        return handler._replace(request_deserializer=_tolerant(handler.request_deserializer),
                                unary_unary=unary_unary)
    if handler.unary_stream is not None:
        streaming = handler.unary_stream

        def unary_stream(request, context):
            if request is CORRUPT:
                _refuse(context)
            yield from streaming(request, context)
        return handler._replace(request_deserializer=_tolerant(handler.request_deserializer),
                                unary_stream=unary_stream)
    if handler.stream_stream is not None:
        both = handler.stream_stream

        def stream_stream(requests, context):
            yield from both(_messages(requests), context)
        return handler._replace(request_deserializer=_tolerant(handler.request_deserializer),
                                stream_stream=stream_stream)
    return handler               # P4Runtime has no client-streaming method


class DecodingGuard(grpc.GenericRpcHandler):
    """`handlers` (rpc_handlers'), each method's request parsing guarded as above."""

    def __init__(self, handlers) -> None:
        self._handlers = tuple(handlers)
        self._cache: dict[str, grpc.RpcMethodHandler | None] = {}

    def service(self, handler_call_details):
        method = handler_call_details.method
        guarded = self._cache.get(method)
        if guarded is not None:
            return guarded
        for handlers in self._handlers:
            found = handlers.service(handler_call_details)
            if found is not None:          # only P4Runtime's methods are kept: a client
                guarded = self._cache[method] = _guard(found)     # cannot grow the cache
                return guarded
        return None


__all__ = ["CORRUPT", "DETAILS", "DecodingGuard"]
