"""A small client of BMv2's Thrift runtime, for tests and scripts that have no Thrift library.

    with RuntimeClient("127.0.0.1", 9090) as c:
        h = c.call("standard", "bm_mt_add_entry", cxt_id=0, table_name="MyIngress.t", ...)

It talks to real simple_switch and to `inaemu switch --thrift-port` alike: the same `idl.py`
declarations, the same binary protocol. A declared exception is raised as `RuntimeCallError`
(its struct's name and code); a Thrift application exception as `ApplicationError`.
"""

from __future__ import annotations

import socket

from p4switch.thrift import binary
from p4switch.thrift.idl import APPLICATION_EXCEPTION, ERROR_ENUMS, SERVICES


class RuntimeCallError(Exception):
    """The server raised the method's declared exception."""

    def __init__(self, exception: str, code: int, name: str):
        self.exception = exception
        self.code = code
        self.name = name         # the code's name in its enum, e.g. "DUPLICATE_ENTRY"
        super().__init__(f"{exception}({name})")


class ApplicationError(Exception):
    """The server answered with TApplicationException (an unknown method, an internal error)."""

    def __init__(self, message: str, kind: int):
        self.kind = kind
        super().__init__(message)


class RuntimeClient:
    def __init__(self, host: str = "127.0.0.1", port: int = 9090, timeout: float = 30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.seqid = 0
        self.pending = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RuntimeClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, service: str, name: str, **args):
        method = SERVICES[service][name]
        self.seqid += 1
        w = binary.Writer()
        w.message_begin(f"{service}:{name}", binary.CALL, self.seqid)
        w.struct(method.args, args)
        self.sock.sendall(w.out)
        mname, mtype, seqid, body = self._reply(method)
        if mtype == binary.EXCEPTION:
            raise ApplicationError(body.get("message", ""), body.get("type", 0))
        if seqid != self.seqid or mname != name:
            raise binary.ProtocolError(f"reply {mname!r} #{seqid} to {name!r} #{self.seqid}")
        if "ouch" in body:
            code = body["ouch"].get("code", 0)
            enum = ERROR_ENUMS[method.raises]
            try:
                label = enum(code).name
            except ValueError:
                label = str(code)
            raise RuntimeCallError(method.raises.name, code, label)
        return body.get("success")

    def _reply(self, method):
        while True:
            r = binary.Reader(self.pending)
            try:
                mname, mtype, seqid = r.message_begin()
                stype = APPLICATION_EXCEPTION if mtype == binary.EXCEPTION else \
                    method.result_struct()
                body = r.struct(stype)
            except binary.Incomplete:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("the server closed the connection") from None
                self.pending += chunk
                continue
            del self.pending[:r.pos]
            return mname, mtype, seqid, body
