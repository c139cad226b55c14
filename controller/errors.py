"""The controller's exceptions: one base class, and P4Runtime failures turned into readable errors.

Why: a gRPC `RpcError` prints as an opaque blob, and a failed Write batch hides its real reasons
(one `p4.v1.Error` per update) in the `grpc-status-details-bin` trailer. These classes unpack that
so a failure says which switch, which update and why.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2


class ControllerError(Exception):
    """Base class of everything the controller raises on purpose."""


class P4InfoError(ControllerError):
    """A P4Info file is unreadable, or names a table/action/field the request asked for do not exist."""


class EncodingError(ControllerError):
    """A value cannot be encoded for a field (too wide, wrong type, malformed address)."""


class TLSConfigError(ControllerError):
    """A TLS option names a file that cannot be used (unreadable, not PEM, a key that is not the
    certificate's); the message names the option, the file and why."""


class ConnectionFailed(ControllerError):
    """The switch's gRPC server did not answer, or refused the arbitration."""


@dataclass(frozen=True)
class UpdateError:
    """Why one update of a Write batch failed."""

    index: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"update {self.index}: {self.code}: {self.message}"


class P4RuntimeError(ControllerError):
    """An RPC failed. `code` is the gRPC status name; `updates` the per-update errors, if any."""

    def __init__(self, switch: str, rpc: str, code: str, details: str,
                 updates: tuple[UpdateError, ...] = (), labels: tuple[str, ...] = ()):
        self.switch = switch
        self.rpc = rpc
        self.code = code
        self.details = details
        self.updates = updates
        self.labels = labels  # a human label per update of the batch, for the message
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.switch}: {self.rpc} failed: {self.code}"
        if self.details:
            head += f": {self.details}"
        lines = [head]
        for u in self.updates:
            label = f" ({self.labels[u.index]})" if u.index < len(self.labels) else ""
            lines.append(f"  - {u}{label}")
        return "\n".join(lines)

    @classmethod
    def from_rpc_error(cls, switch: str, rpc: str, error: grpc.RpcError,
                       labels: tuple[str, ...] = ()) -> "P4RuntimeError":
        code = error.code().name if hasattr(error, "code") and error.code() else "UNKNOWN"
        details = error.details() if hasattr(error, "details") else str(error)
        return cls(switch, rpc, code, details or "", per_update_errors(error), labels)


def per_update_errors(error: grpc.RpcError) -> tuple[UpdateError, ...]:
    """The failed updates of a Write, from the `grpc-status-details-bin` trailer (skipping OKs)."""
    trailer = None
    metadata = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    for key, value in metadata or ():
        if key == "grpc-status-details-bin":
            trailer = value
            break
    if trailer is None:
        return ()
    status = status_pb2.Status()
    try:
        status.ParseFromString(trailer)
    except Exception:  # a malformed trailer must not hide the original error
        return ()
    errors = []
    for index, detail in enumerate(status.details):
        one = p4runtime_pb2.Error()
        if not detail.Unpack(one) or one.canonical_code == code_pb2.OK:
            continue
        code = code_pb2.Code.Name(one.canonical_code) if one.canonical_code in code_pb2.Code.values() \
            else str(one.canonical_code)
        errors.append(UpdateError(index, code, one.message))
    return tuple(errors)
