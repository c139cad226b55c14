"""The one error type of the P4Runtime server: a gRPC status code name plus a message.

Every layer below the servicer (P4Info lookups, byte strings, entity translation, arbitration)
raises `RequestError`; the servicer turns it into a gRPC status or a per-update `p4.v1.Error`.
Errors raised by the switch runtime carry a `.code` with the same vocabulary, so `from_runtime`
only has to wrap them and say which request they belong to.
"""

from __future__ import annotations

from google.rpc import code_pb2

# Status code names as used by grpc.StatusCode and google.rpc.Code.
OK = "OK"
UNKNOWN = "UNKNOWN"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
NOT_FOUND = "NOT_FOUND"
ALREADY_EXISTS = "ALREADY_EXISTS"
PERMISSION_DENIED = "PERMISSION_DENIED"
RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
FAILED_PRECONDITION = "FAILED_PRECONDITION"
OUT_OF_RANGE = "OUT_OF_RANGE"
UNIMPLEMENTED = "UNIMPLEMENTED"
INTERNAL = "INTERNAL"

_KNOWN_CODES = frozenset(code_pb2.Code.keys())


class RequestError(Exception):
    """A request (or one update of it) that the server refuses; nothing was changed."""

    def __init__(self, code: str, message: str) -> None:
        if code not in _KNOWN_CODES:
            raise ValueError(f"not a google.rpc.Code name: {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def numeric_code(self) -> int:
        return code_pb2.Code.Value(self.code)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def within(self, context: str) -> "RequestError":
        """The same error with `context` (e.g. which table) prefixed to its message."""
        return RequestError(self.code, f"{context}: {self.message}")


def from_runtime(exc: Exception, context: str) -> RequestError:
    """Wrap an error raised by the switch runtime: keep its code when it has a known one."""
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or code not in _KNOWN_CODES or code == OK:
        code = INVALID_ARGUMENT
    return RequestError(code, f"{context}: {exc}")
