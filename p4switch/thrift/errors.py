"""How a runtime call fails over Thrift: a declared exception and its code, or an application error.

`CallError` is a method's declared exception (`InvalidTableOperation(DUPLICATE_ENTRY)`): the
server puts it in the reply's exception field, where simple_switch_CLI prints its code's name.
`ApplicationFailure` is Thrift's own `TApplicationException`, for what BMv2 answers with one
(a context other than 0, a port map that is not bits) or a method inaemu does not serve; its
message says which and why. `detail` says what a code cannot: the switch's log gets it.
"""

from __future__ import annotations

import enum
from contextlib import contextmanager

from p4switch.runtime import P4SwitchError
from p4switch.thrift.binary import Struct
from p4switch.thrift.idl import ApplicationErrorType


class CallError(Exception):
    def __init__(self, exception: Struct, code: enum.IntEnum, detail: str = ""):
        self.exception = exception
        self.code = code
        self.detail = detail
        super().__init__(f"{exception.name}({code.name})" + (f": {detail}" if detail else ""))


class ApplicationFailure(Exception):
    def __init__(self, message: str,
                 kind: ApplicationErrorType = ApplicationErrorType.INTERNAL_ERROR):
        self.kind = kind
        super().__init__(message)


@contextmanager
def runtime_errors(exception: Struct, codes: dict[type, enum.IntEnum], fallback: enum.IntEnum):
    """Turn the runtime's errors into `exception` with the code `codes` gives for their class
    (else `fallback`), keeping the runtime's message as the detail."""
    try:
        yield
    except P4SwitchError as e:
        for cls in type(e).__mro__:
            if cls in codes:
                raise CallError(exception, codes[cls], str(e)) from None
        raise CallError(exception, fallback, str(e)) from None

