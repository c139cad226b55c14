"""The C Internet checksum (cgen/nativeparse.py `checksum_c`, nativeprelude.py `cs_term`): a
sum of one term per input, each placed by the bits before it. Headers that may be missing and
are not whole 16-bit words long move every later input within its word, so those places are
counted at run time; a constant input is always there. The C parser's verify and the C
deparser's update must give what the Python ones give and what csum16 of the packed bits is,
for every combination of present headers, for all-zero, all-one and random fields."""

from __future__ import annotations

import random

import pytest

from p4switch.runtime.state.hashes import csum16_bits

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, std
from .test_native import _switch, native_cache  # noqa: F401 - the fixture

# optional headers: two not whole words long (8 and 40 bits), one 72 bits, one whole words
OPTIONAL = {"a": [5, 3], "b": [12, 4, 24], "c": [7, 1, 16, 48], "d": [16, 32]}
CONSTANT = (0xA5, 8)            # a constant input between a and b: always counted


def _program() -> dict:
    """eth, then s {sel: 8, err: 8, sum: 16}, then the optional headers whose bits are set in
    sel (a = 1, b = 2, c = 4, d = 8); sum is verified in the parser and updated in the
    deparser over a, the constant, b, c and d; err takes checksum_error."""
    prog = ethernet_program()
    prog.header_type("s_t", [("sel", 8), ("err", 8), ("sum", 16)])
    prog.header("s", "s_t")
    for name, widths in OPTIONAL.items():
        prog.header_type(f"{name}_t", [(f"x{i}", w) for i, w in enumerate(widths)])
        prog.header(name, f"{name}_t")
    names = list(OPTIONAL)
    prog.state("start", [prog.extract("eth"), prog.extract("s")],
               key=[{"type": "field", "value": ["s", "sel"]}],
               transitions=[(m, 0xFF, f"p{m}") for m in range(16)] + [(None, None, None)])
    for m in range(16):
        prog.state(f"p{m}", [prog.extract(n) for i, n in enumerate(names) if m >> i & 1])
    inputs = [{"type": "field", "value": ["a", f"x{i}"]} for i in range(2)]
    inputs.append({"type": "hexstr", "value": hex(CONSTANT[0]), "bitwidth": CONSTANT[1]})
    for name in names[1:]:
        inputs += [{"type": "field", "value": [name, f"x{i}"]}
                   for i in range(len(OPTIONAL[name]))]
    prog.calculation("c", "csum16", inputs)
    prog.checksum("c", ["s", "sum"], "c")
    prog.run("t", prog.action("fwd", [assign(fld("s", "err"), std("checksum_error")),
                                      assign(std("egress_spec"), const(1))]))
    return prog.build()


def _expected_sum(sel: int, values: dict[str, list[int]]) -> int:
    """csum16 of the inputs' bits as BMv2 packs them: present headers' fields and the
    constant, in order, MSB first."""
    packed, bits = 0, 0
    order = [("a", OPTIONAL["a"]), ("const", None), *[(n, OPTIONAL[n]) for n in "bcd"]]
    for name, widths in order:
        if name == "const":
            pieces = [CONSTANT]
        elif sel >> "abcd".index(name) & 1:
            pieces = list(zip(values[name], widths))
        else:
            continue
        for value, width in pieces:
            packed, bits = (packed << width) | value, bits + width
    return csum16_bits(packed, bits)


def _pack(values: list[int], widths: list[int]) -> bytes:
    packed = 0
    for value, width in zip(values, widths):
        packed = (packed << width) | value
    return packed.to_bytes(sum(widths) // 8, "big")


def _packets(rng: random.Random):
    for sel in range(16):
        for kind in ("zero", "ones", "random", "random", "random"):
            values = {}
            for name, widths in OPTIONAL.items():
                values[name] = [0 if kind == "zero" else (1 << w) - 1 if kind == "ones"
                                else rng.getrandbits(w) for w in widths]
            right = _expected_sum(sel, values)
            for received in (right, right ^ 0x0100):      # the right sum, then a wrong one
                body = bytes([sel, 0]) + received.to_bytes(2, "big") + b"".join(
                    _pack(values[n], w) for i, (n, w) in enumerate(OPTIONAL.items())
                    if sel >> i & 1)
                yield sel, values, received == right, eth_frame(payload=body + b"tail")


@pytest.mark.usefixtures("native_cache")
def test_c_checksum_equals_python_and_csum16_for_every_present_header_set(monkeypatch):
    doc = _program()
    python, native = _switch(doc, False, monkeypatch), _switch(doc, True, monkeypatch)
    rng = random.Random(11)
    seen_errors = 0
    for sel, values, right, frame in _packets(rng):
        want = python.receive(0, frame)
        got = native.receive(0, frame)
        assert got == want, (sel, values)
        [(port, out)] = got
        assert port == 1
        assert out[15] == (0 if right else 1), (sel, values)    # verify: checksum_error
        assert int.from_bytes(out[16:18], "big") == _expected_sum(sel, values), (sel, values)
        seen_errors += not right
    assert seen_errors == 16 * 5

