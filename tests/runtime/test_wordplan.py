"""Word plans: a header read and written as struct words gives the fields the bit layout says."""

from __future__ import annotations

import random
import struct

import pytest

from p4switch.runtime import Switch
from p4switch.runtime.phv.layout import HeaderType
from p4switch.runtime.phv.wordplan import word_plan
from p4switch.runtime.state.hashes import csum16

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, std


def _htype(widths, signed=()) -> HeaderType:
    return HeaderType("h_t", [(f"x{i}", w, i in signed) for i, w in enumerate(widths)])


def _reference_fields(data: bytes, widths, signed) -> list[int]:
    value, total = int.from_bytes(data, "big"), 8 * len(data)
    out = []
    for i, width in enumerate(widths):
        total -= width
        x = (value >> total) & ((1 << width) - 1)
        if i in signed and x >> (width - 1):
            x -= 1 << width
        out.append(x)
    return out


def _roundtrip(widths, signed, rng) -> None:
    plan = word_plan(_htype(widths, signed), only_if_cheaper=False)
    assert plan is not None, widths
    data = bytes(rng.getrandbits(8) for _ in range(sum(widths) // 8))
    words = struct.unpack(plan.fmt, data)
    names = {f"u{k}": w for k, w in enumerate(words)}
    got = [eval(code, {}, names) for code in plan.field_codes(list(names))]  # noqa: S307
    want = _reference_fields(data, widths, signed)
    assert got == want, (widths, plan.fmt)
    fields = {f"x{i}": x for i, x in enumerate(want)}
    packed = struct.pack(plan.fmt, *[eval(code, {}, fields)  # noqa: S307
                                     for code in plan.word_codes(list(fields))])
    assert packed == data, (widths, plan.fmt)


@pytest.mark.parametrize("widths, fmt", [
    ([4, 4, 8, 16, 16, 3, 13, 8, 8, 16, 32, 32], ">BBHHHBBHII"),   # IPv4: no 160-bit int
    ([48, 48, 16], ">HIQ"),                                          # MACs span words
    ([8, 8, 16, 8, 8, 16, 32, 8, 24], ">BBHBBHII"),
    ([16, 16, 16, 16], ">HHHH"),
])
def test_common_headers_split_into_small_words(widths, fmt):
    plan = word_plan(_htype(widths), only_if_cheaper=False)
    assert plan.fmt == fmt
    _roundtrip(widths, (), random.Random(1))


def test_random_headers_round_trip():
    rng = random.Random(5)
    tried = 0
    while tried < 300:
        widths = [rng.choice([1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 20, 24, 32, 48, 64, 96, 128])
                  for _ in range(rng.randint(1, 8))]
        if sum(widths) % 8:
            continue
        signed = {i for i, w in enumerate(widths) if w in (8, 16, 32, 64) and rng.random() < .3}
        if word_plan(_htype(widths, signed), only_if_cheaper=False) is None:
            continue
        _roundtrip(widths, signed, rng)
        tried += 1


@pytest.mark.parametrize("widths, signed", [
    ([4, 4, 9, 7], {2}),       # a signed field sharing a word: the big-int code stays
    ([4, 64, 4], ()),          # the 64-bit field straddles every word boundary
    ([3, 5, 1], ()),           # not whole bytes
])
def test_headers_without_a_plan(widths, signed):
    assert word_plan(_htype(widths, signed), only_if_cheaper=False) is None


def test_few_fields_keep_the_big_int_unless_every_field_is_a_word():
    assert word_plan(_htype([48, 48, 16])) is None             # Ethernet: as cheap either way
    assert word_plan(_htype([4, 4, 8, 16, 16, 3, 13, 8, 8, 16, 32, 32])) is not None
    assert word_plan(_htype([8, 32])).direct


def test_a_switch_parses_and_emits_split_headers_exactly():
    """IPv4-shaped header: fields read through words, one field rewritten, bytes re-emitted."""
    prog = ethernet_program()
    widths = [4, 4, 8, 16, 16, 3, 13, 8, 8, 16, 32, 32]
    prog.header_type("ip_t", [(f"x{i}", w) for i, w in enumerate(widths)])
    prog.header("ip", "ip_t")
    prog.state("start", [prog.extract("eth"), prog.extract("ip")])
    ttl = fld("ip", "x7")
    act = prog.action("act", [assign(ttl, op("&", op("-", ttl, const(1)), const(0xFF))),
                              assign(std("egress_spec"), const(1))])
    prog.run("t", act)
    sw = Switch(prog.build())
    header = bytes.fromhex("45 00 00 54 12 34 40 00 40 01 ab cd 0a 00 00 01 0a 00 00 02")
    [(port, out)] = sw.receive(0, eth_frame(payload=header + b"tail"))
    assert port == 1
    assert out[14:] == header[:8] + b"\x3f" + header[9:] + b"tail"


def _checksum_program(widths) -> dict:
    """h{x0.., sum: 16}: sum = csum16(x0..) in the deparser; everything else as received."""
    prog = ethernet_program()
    prog.header_type("h_t", [(f"x{i}", w) for i, w in enumerate(widths)] + [("sum", 16)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    prog.calculation("c", "csum16", [fld("h", f"x{i}") for i in range(len(widths))])
    prog.checksum("c", ["h", "sum"], "c", verify=False)
    prog.run("t", prog.action("fwd", [assign(std("egress_spec"), const(1))]))
    return prog.build()


@pytest.mark.parametrize("widths", [
    [4, 4, 8, 16, 16, 3, 13, 8, 8, 32, 32],   # IPv4 without its checksum: word sums
    [16, 48, 32],                             # a field spanning three words
    [8, 8, 8],                                # 24 bits: the big-int code (padded to 32)
])
def test_internet_checksum_by_word_sums_matches_csum16(widths):
    sw = Switch(_checksum_program(widths))
    summed = "\n    s = 0\n" in sw.program.untraced.source
    assert summed == (sum(widths) % 16 == 0)
    rng = random.Random(3)
    nbytes = sum(widths) // 8
    samples = [bytes(nbytes), b"\xff" * nbytes] + \
        [bytes(rng.getrandbits(8) for _ in range(nbytes)) for _ in range(40)]
    for body in samples:
        [(_, out)] = sw.receive(0, eth_frame(payload=body + b"\x00\x00"))
        assert out[14:14 + nbytes] == body
        assert int.from_bytes(out[14 + nbytes:16 + nbytes], "big") == csum16(body), body.hex()
