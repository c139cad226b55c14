"""Reading and writing a header as big-endian machine words with one `struct` call.

Splitting a header's bytes into 1-, 2-, 4- and 8-byte words lets `struct` do the byte work in C,
leaving a shift and a mask per field that shares a word with others, on small ints. That beats
one big int per header (IPv4's 160 bits) shifted and masked once per field, both when parsing
and when emitting. A field may also span several whole words (a 48-bit MAC address as 16 + 32
bits). `word_plan` picks the split with the fewest words and field operations; headers it cannot
split (a signed field sharing or spanning words, a varbit field, a width no split fits) keep the
big-int code.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from .layout import HeaderType

WORD_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}
SIGNED_CODES = {8: "b", 16: "h", 32: "i", 64: "q"}


@dataclass(frozen=True)
class WordPlan:
    words: tuple[tuple[int, int], ...]          # (first bit, bits) per word, in header order
    fields: tuple[tuple[int, int, bool], ...]   # (first bit, bits, signed) per field
    fmt: str                                    # the struct format of the words

    @property
    def direct(self) -> bool:
        """Every field is exactly one word: fields and words are the same sequence."""
        return self.words == tuple((start, bits) for start, bits, _ in self.fields)

    def field_codes(self, word: list[str]) -> list[str]:
        """Code for each field's value, given code for each word's value (unsigned)."""
        out = []
        for start, bits, _ in self.fields:
            end = start + bits
            first, last = self._word_index(start), self._word_index(end - 1)
            if first == last:
                w_start, w_bits = self.words[first]
                shift = w_start + w_bits - end
                code = word[first]
                if shift:
                    code = f"({code} >> {shift})"
                if start != w_start:
                    code = f"({code} & {(1 << bits) - 1})"
                out.append(code)
                continue
            parts = []
            for k in range(first, last + 1):
                w_start, w_bits = self.words[k]
                shift = end - (w_start + w_bits)
                parts.append(f"({word[k]} << {shift})" if shift else word[k])
            out.append("(" + " | ".join(parts) + ")")
        return out

    def word_codes(self, field: list[str]) -> list[str]:
        """Code for each word's value, given code for each field's value."""
        out = []
        for w_start, w_bits in self.words:
            w_end = w_start + w_bits
            parts = []
            for i, (start, bits, _) in enumerate(self.fields):
                end = start + bits
                if end <= w_start or start >= w_end:
                    continue
                code = field[i]
                if start >= w_start and end <= w_end:       # the field lies in this word
                    shift = w_end - end
                    parts.append(f"({code} << {shift})" if shift else code)
                else:                                       # this word is a part of the field
                    shift = end - w_end
                    code = f"({code} >> {shift})" if shift else code
                    if start != w_start:
                        code = f"({code} & {(1 << w_bits) - 1})"
                    parts.append(code)
            out.append(parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")")
        return out

    def _word_index(self, bit: int) -> int:
        for k, (w_start, w_bits) in enumerate(self.words):
            if w_start <= bit < w_start + w_bits:
                return k
        raise ValueError(bit)


def word_plan(htype: HeaderType, only_if_cheaper: bool = True,
              sizes: tuple[int, ...] = tuple(WORD_CODES)) -> WordPlan | None:
    """The cheapest split of the header into struct words, or None if there is none (or, with
    `only_if_cheaper`, if the big-int code is as cheap: a few fields, like Ethernet's).
    `sizes` limits the word sizes (16 alone: words an Internet checksum can add up)."""
    if not htype.fields or any(w is None for _, w, _ in htype.fields):
        return None
    shape = tuple((width, bool(signed)) for _, width, signed in htype.fields)
    return _plan(shape, only_if_cheaper, tuple(sizes))


@lru_cache(maxsize=256)
def _plan(shape: tuple[tuple[int, bool], ...], only_if_cheaper: bool,
          sizes: tuple[int, ...]) -> WordPlan | None:
    fields = []
    bit = 0
    for width, signed in shape:
        fields.append((bit, width, signed))
        bit += width
    total = bit
    if total % 8:
        return None
    if all(width in sizes for width, _ in shape):  # every field a word: nothing is cheaper
        return _with_format(tuple((start, bits) for start, bits, _ in fields), fields)
    starts = [start for start, _, _ in fields]

    def field_at(position: int) -> int:
        return bisect_right(starts, position) - 1

    def allowed(p: int, q: int) -> bool:
        """May [p, q) be a word, given that p is a word boundary?"""
        first, last = field_at(p), field_at(q - 1)
        start, bits, _ = fields[first]
        if start < p and q > start + bits:
            return False  # a field spanning words must end on a word boundary
        if q < total:
            start, bits, _ = fields[field_at(q)]
            if p < start < q < start + bits:
                return False  # q cuts a field that starts inside this word
        for start, bits, signed in fields[first:last + 1]:
            if signed and (start, bits) != (p, q - p):
                return False  # signed fields must be exactly one word
        return True

    def cost(p: int, q: int) -> int:
        """About the bytecodes a word costs: storing and loading it, a shift and/or mask per
        field that does not fill it; 64-bit words are multi-digit ints, a little slower."""
        ops = sum(1 for start, bits, _ in fields[field_at(p):field_at(q - 1) + 1]
                  if (start, bits) != (p, q - p))
        return 2 + 3 * ops + (q - p == 64)

    best: dict[int, tuple[int, int]] = {0: (0, -1)}   # boundary -> (cost, previous boundary)
    for p in range(0, total, 8):
        if p not in best:
            continue
        for size in sizes:
            q = p + size
            if q > total or not allowed(p, q):
                continue
            candidate = best[p][0] + cost(p, q)
            if q not in best or candidate < best[q][0]:
                best[q] = (candidate, p)
    if total not in best:
        return None
    words = []
    q = total
    while q:
        p = best[q][1]
        words.append((p, q - p))
        q = p
    words.reverse()
    operations = sum(1 for start, bits, _ in fields if (start, bits) not in set(words))
    if only_if_cheaper and operations and len(words) + operations >= 2 * len(fields):
        return None  # the big int: one shift and one mask per field
    return _with_format(tuple(words), fields)


def _with_format(words: tuple[tuple[int, int], ...], fields: list) -> WordPlan:
    exact_signed = {(start, bits) for start, bits, signed in fields if signed}
    codes = [(SIGNED_CODES if word in exact_signed else WORD_CODES)[word[1]] for word in words]
    return WordPlan(words, tuple(fields), ">" + "".join(codes))


def split_fields(htype: HeaderType, base: str, source: str) -> list[str]:
    """Lines assigning each field of a header from the packed int `source`."""
    lines = []
    shift = htype.fixed_bits
    for i, (_, width, signed) in enumerate(htype.fields):
        shift -= width
        slot = f"{base} + {i}" if not base.isdigit() else str(int(base) + i)
        value = f"({source} >> {shift})" if shift else source
        if i > 0 or signed:
            value = f"({value} & {(1 << width) - 1})"
        if signed:
            half = 1 << (width - 1)
            value = f"(({value} + {half}) & {(1 << width) - 1}) - {half}"
        lines.append(f"f[{slot}] = {value}")
    return lines
