"""Learn samples (p4switch/runtime/learning.py): what a packet's digest hands to the switch's
learn handler, on the Python and on the C packet code, checked against simple_switch's rules:
one sample after ingress of the last learn list asked for, the data as it was at the call, none
for a packet that asked for none."""

from __future__ import annotations

import json

import pytest

from p4switch.compiler import compile_source
from p4switch.runtime import Switch
from p4switch.runtime.learning import LearnList

from ..compiler.helpers import program

DECLS = "struct pair_t { bit<48> mac; bit<9> port; }"
INGRESS = """
    apply {
        meta.p.mac = hdr.eth.src; meta.p.port = sm.ingress_port;
        if (hdr.eth.ether_type != 0) { digest<pair_t>(1, meta.p); }
        meta.p.mac = 0;                                    // after the call: not in the sample
        if (hdr.eth.ether_type == 2) { digest<pair_t>(1, {hdr.eth.dst, 7}); }  // the last wins
        if (hdr.eth.ether_type == 3) { resubmit_preserving_field_list(0); }
        sm.egress_spec = 1;
    }"""


def frame(ether_type: int) -> bytes:
    return bytes.fromhex("112233445566aabbccddeeff") + ether_type.to_bytes(2, "big") + bytes(20)


@pytest.fixture(params=[True, False], ids=["native", "python"])
def switch(request, monkeypatch, tmp_path):
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    monkeypatch.setenv("INAEMU_NATIVE", "1" if request.param else "0")
    result = compile_source(program(INGRESS, decls=DECLS, meta_fields="pair_t p;"), "l.p4")
    sw = Switch(json.dumps(result.bmv2))
    assert bool(sw.program.untraced.native_in_use) == request.param
    samples: list[tuple[str, bytes]] = []
    sw.learn_handler = lambda learn_list, sample: samples.append((learn_list.name, sample))
    return sw, samples


def test_a_sample_of_the_data_at_the_call(switch):
    sw, samples = switch
    assert sw.receive(5, frame(1)) == [(1, frame(1))]
    assert samples == [("pair_t", bytes.fromhex("aabbccddeeff") + (5).to_bytes(2, "big"))]


def test_the_last_digest_of_a_packet_wins(switch):
    sw, samples = switch
    sw.receive(5, frame(2))
    assert samples == [("pair_t", bytes.fromhex("112233445566") + (7).to_bytes(2, "big"))]


def test_no_digest_no_sample(switch):
    sw, samples = switch
    sw.receive(5, frame(0))
    assert samples == []


def test_each_ingress_pass_of_a_resubmitted_packet_gives_its_own_sample(switch):
    """simple_switch learns before it resubmits; the resubmitted pass asks again (its
    ingress_port reset to 0 with the rest of its metadata) until the limit of passes."""
    sw, samples = switch
    sw.receive(5, frame(3))
    mac = bytes.fromhex("aabbccddeeff")
    assert samples == [("pair_t", mac + b"\x00\x05")] + [("pair_t", mac + b"\x00\x00")] * 63


def test_a_sample_holds_each_field_in_whole_bytes_big_endian():
    learn_list = LearnList(1, "l", ((0, 9), (1, 1), (2, 16), (-1, 1)))
    assert learn_list.sample_size == 6
    assert learn_list.sample([0x1FF, 1, 0xABCD], [0]) == bytes.fromhex("01ff01abcd00")
