"""The Internet checksum as a sum of terms (runtime/pygen/calcgen.py): a field that starts on a
16-bit word and is whole words long is added as it is (2**16 = 1 mod 0xFFFF), the rest is
packed into words. The terms' sum must equal the sum of the packed bits' 16-bit words modulo
0xFFFF, and be zero only when every word is."""

from __future__ import annotations

import random

from p4switch.runtime.pygen.calcgen import _csum16_terms

LAYOUTS = [
    [4, 4, 8, 16, 16, 3, 13, 8, 8, 32, 32],          # IPv4 without its checksum
    [48, 48, 16], [32, 16, 48, 8, 8, 16, 64], [1, 15, 32, 8, 24, 16], [16], [8, 8],
]


def _words_sum(values, widths) -> int:
    packed, bits = 0, 0
    for value, width in zip(values, widths):
        packed, bits = (packed << width) | value, bits + width
    return sum((packed >> shift) & 0xFFFF for shift in range(0, bits, 16))


def test_terms_sum_to_the_words_sum():
    rng = random.Random(4)
    for widths in LAYOUTS:
        parts = [(f"x[{i}]", w) for i, w in enumerate(widths)]
        terms = _csum16_terms(parts)
        assert terms is not None
        code = compile(" + ".join(terms), "terms", "eval")
        for _ in range(300):
            values = [rng.choice([0, (1 << w) - 1, rng.getrandbits(w)]) for w in widths]
            got = eval(code, {"x": values})          # noqa: S307 - our own generated code
            want = _words_sum(values, widths)
            assert got % 0xFFFF == want % 0xFFFF
            assert (got == 0) == (want == 0)
    assert _csum16_terms([("a", 8)]) is None          # not whole words: no plain sum
