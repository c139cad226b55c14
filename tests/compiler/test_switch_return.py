"""A `return` in a case of a `switch` on a value ends the apply block only when that case runs:
the statements after the switch run otherwise (the P4_16 specification). p4c 1.2.5 drops them
(difftest finding F21, oracle wrong by specification), so this is checked against the rule, not
against p4c's JSON."""

from __future__ import annotations

import json

import pytest

from p4switch.compiler import compile_source
from p4switch.runtime import Switch

from .helpers import program

INGRESS = """
    apply {
        sm.egress_spec = 1;
        switch (hdr.eth.ether_type[7:0]) {
            8w2: { return; }
            8w3: { hdr.eth.dst = 3; }
        }
        hdr.eth.src = 7;
    }"""


@pytest.mark.parametrize("ether_type, dst, src", [(2, 0xAA, 0xBB), (3, 3, 7), (4, 0xAA, 7)])
def test_statements_after_a_switch_run_unless_its_case_returned(ether_type, dst, src):
    switch = Switch(json.dumps(compile_source(program(INGRESS), "s.p4").bmv2))
    frame = (0xAA).to_bytes(6, "big") + (0xBB).to_bytes(6, "big") + \
        ether_type.to_bytes(2, "big") + bytes(4)
    ((port, out),) = switch.receive(0, frame)
    assert (port, int.from_bytes(out[:6], "big"), int.from_bytes(out[6:12], "big")) == \
        (1, dst, src)
