"""One Thrift runtime connection, sans I/O: bytes received in, bytes to send out.

A client (simple_switch_CLI, bmv2stf.py, `client.RuntimeClient`) writes calls back to back on
one stream; `receive` takes whatever arrived, answers every call that is now whole, in order,
and keeps the rest for the next chunk. A stream that is not Thrift's binary protocol raises
`binary.ProtocolError`: the connection cannot be resynchronized and the caller closes it.
"""

from __future__ import annotations

from collections.abc import Callable

from p4switch.thrift import binary
from p4switch.thrift.errors import ApplicationFailure, CallError
from p4switch.thrift.idl import APPLICATION_EXCEPTION, SERVICES, ApplicationErrorType


class RuntimeConnection:
    def __init__(self, service, log: Callable[[str], None] | None = None):
        self.service = service            # RuntimeService (or anything with .call)
        self.log = log or (lambda line: None)
        self.pending = bytearray()

    def receive(self, data: bytes) -> bytes:
        """Answer every whole call in what has arrived; the replies' bytes."""
        self.pending += data
        out = bytearray()
        while self.pending:
            reader = binary.Reader(self.pending)
            try:
                reply = self._one(reader)
            except binary.Incomplete:
                break
            del self.pending[:reader.pos]
            out += reply
        return bytes(out)

    def _one(self, reader: binary.Reader) -> bytes:
        full_name, mtype, seqid = reader.message_begin()
        service_name, sep, name = full_name.partition(":")
        method = SERVICES.get(service_name, {}).get(name) if sep else None
        if mtype not in (binary.CALL, binary.ONEWAY):
            reader.skip(binary.STRUCT)
            return self._failure(full_name, seqid, ApplicationFailure(
                f"message type {mtype} where a call was expected",
                ApplicationErrorType.INVALID_MESSAGE_TYPE))
        if method is None:
            reader.skip(binary.STRUCT)
            why = (f"no service name in {full_name!r} (calls are 'service:method')" if not sep
                   else f"unknown method {full_name!r}")
            return self._failure(name or full_name, seqid, ApplicationFailure(
                why, ApplicationErrorType.UNKNOWN_METHOD))
        args = reader.struct(method.args)
        try:
            result = self.service.call(service_name, name, args)
        except CallError as e:
            self.log(f"thrift {full_name}: {e}")
            body = {"ouch": {"code": int(e.code)}}
        except ApplicationFailure as e:
            self.log(f"thrift {full_name}: {e}")
            return self._failure(name, seqid, e)
        except Exception as e:           # a bug of inaemu's: say so, keep the connection
            self.log(f"thrift {full_name}: internal error: {e!r}")
            return self._failure(name, seqid, ApplicationFailure(
                f"{full_name}: internal error of inaemu's switch: {e!r}"))
        else:
            body = {"success": result}
        writer = binary.Writer()
        writer.message_begin(name, binary.REPLY, seqid)
        try:
            writer.struct(method.result_struct(), body)
        except (ValueError, TypeError, AttributeError) as e:     # a result Thrift cannot carry
            return self._failure(name, seqid, ApplicationFailure(
                f"{full_name}: the result cannot be sent: {e}"))
        return bytes(writer.out)

    @staticmethod
    def _failure(name: str, seqid: int, failure: ApplicationFailure) -> bytes:
        writer = binary.Writer()
        writer.message_begin(name, binary.EXCEPTION, seqid)
        writer.struct(APPLICATION_EXCEPTION, {"message": str(failure), "type": int(failure.kind)})
        return bytes(writer.out)
