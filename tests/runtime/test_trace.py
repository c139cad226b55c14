"""Tracing: the text log a person reads, and no tracing work at all without a trace."""

from __future__ import annotations

import io
import json

from p4switch.runtime import ExactKey, PacketTrace, Switch, TextTrace

from tests.conftest import SHARED_FIXTURES
from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, param, prim, std


def _program() -> dict:
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    fwd = prog.action("C.fwd", [assign(std("egress_spec"), param(0))], [("port", 9)])
    drop = prog.action("C.drop", [prim("mark_to_drop", {"type": "header",
                                                        "value": "standard_metadata"})])
    note = prog.action("C.note", [prim("log_msg", {"type": "string", "value": "type is {}"},
                                       {"type": "parameters_vector",
                                        "value": [fld("eth", "type")]})])
    prog.table("C.t", [("exact", ["eth", "dst"])], [fwd, drop], default=drop,
               next_tables={"C.fwd": "is_ip", "C.drop": None})
    prog.conditional("is_ip", op("==", fld("eth", "type"), const(0x800)), "note", None)
    prog.run("note", note)
    return prog.build()


def test_text_trace_tells_the_packet_story():
    log = io.StringIO()
    sw = Switch(_program(), trace=TextTrace(log))
    sw.table_add("t", [ExactKey(2)], "fwd", [7])
    assert sw.receive(3, eth_frame(dst=2)) == [(7, eth_frame(dst=2))]
    assert sw.receive(3, eth_frame(dst=9)) == []
    text = log.getvalue()
    for expected in ["packet in: port 3, 14 bytes", "parser state 'start'",
                     "extracted header 'eth'", "lookup key eth.dst=0x2",
                     "table 'C.t': hit entry 0",
                     "action 'C.fwd'(0x7)", "condition 'is_ip' is true",
                     "log_msg: type is 2048", "packet out: port 7, 14 bytes",
                     "table 'C.t': miss (default entry) -> action 'C.drop'",
                     "dropped: egress_spec is the drop port at the end of ingress"]:
        assert expected in text, expected


class Recorder(PacketTrace):
    def __init__(self):
        self.events = []

    def table(self, name, hit, entry, action, params, key=""):
        self.events.append(("table", name, hit, action, tuple(params)))

    def multicast(self, mgid, replicas):
        self.events.append(("multicast", mgid, tuple(replicas)))


def test_custom_trace_receives_events_and_can_be_detached():
    rec = Recorder()
    sw = Switch(_program(), trace=rec)
    sw.table_add("t", [ExactKey(2)], "fwd", [1])
    sw.receive(0, eth_frame(dst=2))
    assert ("table", "C.t", True, "C.fwd", (1,)) in rec.events
    sw.trace = None
    before = len(rec.events)
    sw.receive(0, eth_frame(dst=2))
    assert len(rec.events) == before


def test_untraced_code_has_no_trace_calls():
    sw = Switch(_program())
    assert "T." not in sw.program.untraced.source
    assert "T.table(" in sw.program.traced().source


def test_traced_variant_of_every_shared_fixture_compiles_and_agrees():
    for path in sorted(SHARED_FIXTURES.glob("*/*.json")):
        doc = json.loads(path.read_text())
        plain, traced = Switch(doc), Switch(doc, trace=TextTrace(io.StringIO()))
        for frame in (eth_frame(), eth_frame(ether_type=0x88B5, payload=bytes(8)), b"\x01"):
            assert plain.receive(0, frame) == traced.receive(0, frame), path
