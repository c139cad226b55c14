"""A connection answers calls in order from any chunking of the stream (sans I/O), and a bug in
a call becomes the caller's TApplicationException, never a dropped connection."""

from __future__ import annotations

from p4switch.thrift import binary
from p4switch.thrift.connection import RuntimeConnection
from p4switch.thrift.errors import CallError
from p4switch.thrift.idl import (APPLICATION_EXCEPTION, SERVICES, InvalidRegisterOperation,
                                 RegisterError)


class Service:
    """Answers register reads with the index times ten; index 3 is a bug, index 4 an error."""

    def __init__(self):
        self.calls = []

    def call(self, service, name, args):
        self.calls.append((service, name, args))
        if args["idx"] == 3:
            raise KeyError("a bug")
        if args["idx"] == 4:
            raise CallError(InvalidRegisterOperation, RegisterError.INVALID_INDEX, "index 4")
        return args["idx"] * 10


READ = SERVICES["standard"]["bm_register_read"]


def call_bytes(seqid: int, idx: int) -> bytes:
    w = binary.Writer()
    w.message_begin("standard:bm_register_read", binary.CALL, seqid)
    w.struct(READ.args, {"cxt_id": 0, "register_array_name": "r", "idx": idx})
    return bytes(w.out)


def replies(data: bytes) -> list[tuple[int, int, dict]]:
    r, out = binary.Reader(data), []
    while r.pos < len(data):
        name, mtype, seqid = r.message_begin()
        assert name == "bm_register_read"
        body = r.struct(APPLICATION_EXCEPTION if mtype == binary.EXCEPTION
                        else READ.result_struct())
        out.append((mtype, seqid, body))
    return out


def test_calls_split_anywhere_are_answered_in_order():
    stream = b"".join(call_bytes(i, i) for i in (0, 1, 2))
    for step in (1, 3, 7, len(stream)):
        service, log = Service(), []
        conn = RuntimeConnection(service, log.append)
        out = b"".join(conn.receive(stream[i:i + step]) for i in range(0, len(stream), step))
        assert [(m, s, b) for m, s, b in replies(out)] == [
            (binary.REPLY, i, {"success": i * 10}) for i in (0, 1, 2)]
        assert not conn.pending and len(service.calls) == 3


def test_a_bug_and_a_declared_error_are_answered_and_the_stream_goes_on():
    log = []
    conn = RuntimeConnection(Service(), log.append)
    out = conn.receive(call_bytes(7, 3) + call_bytes(8, 4) + call_bytes(9, 5))
    (m1, s1, b1), (m2, s2, b2), (m3, s3, b3) = replies(out)
    assert (m1, s1) == (binary.EXCEPTION, 7) and "internal error" in b1["message"]
    assert (m2, s2, b2) == (binary.REPLY, 8, {"ouch": {"code": RegisterError.INVALID_INDEX}})
    assert (m3, s3, b3) == (binary.REPLY, 9, {"success": 50})
    assert any("a bug" in line for line in log) and any("index 4" in line for line in log)
