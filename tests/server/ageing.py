"""The idle-timeout tests' program and clock (P4Runtime: test_idle_timeout.py; Thrift:
tests/thrift/test_entry_ageing.py): one table that ages its entries, one that does not, and a
clock the test moves by hand."""

from __future__ import annotations

BODY = """
    action set_port(bit<9> p) { sm.egress_spec = p; }
    table ageing { key = { hdr.eth.dst : exact; } actions = { set_port; NoAction; }
                   support_timeout = true; default_action = NoAction; }
    table plain { key = { hdr.eth.src : exact; } actions = { set_port; } }
    apply { ageing.apply(); plain.apply(); }"""


class Clock:
    """A switch clock (seconds) that moves only when a test sets `now`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
