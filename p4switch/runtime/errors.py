"""Errors raised by the switch runtime.

Control-plane errors carry `.code`, the gRPC status name the P4Runtime server answers with, so the
server can map them without knowing the runtime's internals. `ConfigError` names the JSON path of
the problem; `AssertionFailure` is the data plane's `assert`/`assume` (BMv2 aborts there).
"""

from __future__ import annotations


class P4SwitchError(Exception):
    """Base of every error the runtime raises on purpose."""

    code = "UNKNOWN"


class ConfigError(P4SwitchError):
    """A BMv2 JSON document that is malformed or uses something this runtime does not support."""

    code = "INVALID_ARGUMENT"

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


class InvalidArgument(P4SwitchError):
    code = "INVALID_ARGUMENT"


class NotFound(P4SwitchError):
    code = "NOT_FOUND"


class AlreadyExists(P4SwitchError):
    code = "ALREADY_EXISTS"


class ResourceExhausted(P4SwitchError):
    code = "RESOURCE_EXHAUSTED"


class PermissionDenied(P4SwitchError):
    code = "PERMISSION_DENIED"


class FailedPrecondition(P4SwitchError):
    code = "FAILED_PRECONDITION"


class Unimplemented(P4SwitchError):
    code = "UNIMPLEMENTED"


class AssertionFailure(P4SwitchError):
    """A data-plane `assert` or `assume` evaluated to false."""

    code = "ABORTED"
