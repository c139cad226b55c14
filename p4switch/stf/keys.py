"""STF key values -> match keys of the switch API, given each key field's match type and width.

The same text means different things per match type, as in p4c's BMv2 driver: `0x0A******` is
10.0.0.0/8 for an LPM key (the prefix counts the non-`*` digits) and value 0x0A000000 with mask
0xFF000000 for a ternary key (the mask covers exactly the digits written). Keys the entry does
not mention are wildcards (ternary, LPM, range, optional) or 0 (exact), as p4c's driver fills them.
The result is neutral tuples, turned into runtime key objects by the runner:
("exact", v) ("lpm", v, prefix_len) ("ternary", v, mask) ("range", low, high) ("optional", v|None).
"""

from __future__ import annotations

from .commands import KeyMatch, MaskedValue, Number, PlainValue, PrefixValue, RangeValue
from .program import resolve_name, UnknownName

KeySpec = tuple


class KeyValueError(ValueError):
    """A key value that does not fit its field's match type or width."""


def _fits(n: int, width: int, field: str, what: str = "value") -> int:
    if n >= 1 << width:
        raise KeyValueError(f"{what} {n:#x} of key '{field}' does not fit in {width} bits")
    return n


def _prefix_len(number: Number, width: int, field: str) -> int:
    """Non-`*` bits within the field: they must form a prefix (no `*` before a digit)."""
    if number.has_wildcards and number.written_bits < width:
        raise KeyValueError(f"'{number.text}' covers {number.written_bits} bits but LPM key "
                        f"'{field}' has {width}: write every digit so the prefix is unambiguous")
    care = number.care_mask & ((1 << width) - 1)
    length = bin(care).count("1")
    expected = ((1 << length) - 1) << (width - length) if length else 0
    if number.has_wildcards and care != expected:
        raise KeyValueError(f"'{number.text}' is not a prefix for LPM key '{field}' "
                        f"('*' digits must all be at the end)")
    if not number.has_wildcards and number.written_bits < width:
        return min(width, number.written_bits)
    return length


def key_spec(match_type: str, width: int, field: str, value) -> KeySpec:
    """The key for one field; `value` is a KeyValue from the parser."""
    full = (1 << width) - 1
    if isinstance(value, RangeValue):
        if match_type != "range":
            raise KeyValueError(f"'LOW->HIGH' is for range keys; '{field}' is {match_type}")
        low = _fits(value.low.value, width, field, "low end")
        high = _fits(value.high.value, width, field, "high end")
        if low > high:
            raise KeyValueError(f"empty range {low}->{high} for key '{field}'")
        return ("range", low, high)
    if isinstance(value, MaskedValue):
        if match_type != "ternary":
            raise KeyValueError(f"'VALUE&&&MASK' is for ternary keys; '{field}' is {match_type}")
        return ("ternary", _fits(value.number.value, width, field),
                _fits(value.mask.value, width, field, "mask"))
    if isinstance(value, PrefixValue):
        if match_type not in ("lpm", "ternary"):
            raise KeyValueError(f"'VALUE/PREFIX' is for LPM keys; '{field}' is {match_type}")
        if value.prefix_len > width:
            raise KeyValueError(f"prefix length {value.prefix_len} is longer than key '{field}' "
                            f"({width} bits)")
        v = _fits(value.number.value, width, field)
        if match_type == "lpm":
            return ("lpm", v, value.prefix_len)
        return ("ternary", v, full ^ ((1 << (width - value.prefix_len)) - 1))
    assert isinstance(value, PlainValue)
    number = value.number
    v = _fits(number.value, width, field)
    if match_type in ("exact", "valid"):
        if number.has_wildcards:
            raise KeyValueError(f"'*' digits in '{number.text}': key '{field}' is exact")
        return ("exact", v)
    if match_type == "lpm":
        if number.care_mask is None:
            return ("lpm", v, width)
        return ("lpm", v, _prefix_len(number, width, field))
    if match_type == "ternary":
        mask = full if number.care_mask is None else number.care_mask & full
        return ("ternary", v, mask)
    if match_type == "optional":
        if not number.has_wildcards:
            return ("optional", v)
        if number.care_mask & full == 0:
            return ("optional", None)
        raise KeyValueError(f"'{number.text}': an optional key is all '*' or no '*'")
    if match_type == "range":
        if not number.has_wildcards:
            return ("range", v, v)
        if number.care_mask & full == 0:
            return ("range", 0, full)
        raise KeyValueError(f"'{number.text}': write a range key as LOW->HIGH")
    raise KeyValueError(f"unsupported match type '{match_type}' of key '{field}'")


def wildcard_spec(match_type: str, width: int) -> KeySpec:
    """What an entry that does not mention a key field gets (p4c's driver defaults)."""
    return {
        "ternary": ("ternary", 0, 0),
        "lpm": ("lpm", 0, 0),
        "range": ("range", 0, (1 << width) - 1),
        "optional": ("optional", None),
    }.get(match_type, ("exact", 0))


def build_keys(table_keys: list[tuple[str, str, int]], aliases: list[tuple[str, ...]],
               matches: tuple[KeyMatch, ...]) -> list[KeySpec]:
    """Keys in the table's order from the STF `FIELD:VALUE` list (any order, names by suffix).

    `table_keys` is the switch's [(field_name, match_type, bitwidth)]; `aliases` per key are the
    other names the JSON gives the same field (its `name` and its `target`).
    """
    names_per_key = []
    for i, (field_name, _, _) in enumerate(table_keys):
        names = {field_name, *(aliases[i] if i < len(aliases) else ())}
        names_per_key.append(names)
    all_names = {n: i for i, names in enumerate(names_per_key) for n in names}
    chosen: dict[int, KeyMatch] = {}
    for match in matches:
        wanted = _stack_notation(match.field)
        try:
            index = _key_index(wanted, all_names)
        except UnknownName as exc:
            if not wanted.endswith(".valid"):      # p4c's driver: `h.valid` is `h.$valid$`
                raise KeyValueError(str(exc)) from None
            try:
                index = _key_index(wanted[:-5] + "$valid$", all_names)
            except UnknownName:
                raise KeyValueError(str(exc)) from None
        if index in chosen:
            raise KeyValueError(f"key field '{table_keys[index][0]}' is given twice")
        chosen[index] = match
    specs = []
    for i, (field_name, match_type, width) in enumerate(table_keys):
        if i in chosen:
            specs.append(key_spec(match_type, width, field_name, chosen[i].value))
        else:
            specs.append(wildcard_spec(match_type, width))
    return specs


def _key_index(wanted: str, all_names: dict[str, int]) -> int:
    """The key a name means, by `resolve_name`'s rules, where the several names of one key (its
    P4 name and its JSON target) are one candidate: only names of different keys are ambiguous."""
    if wanted in all_names:
        return all_names[wanted]
    for suffix_rule in (lambda n: n.endswith("." + wanted), lambda n: n.endswith(wanted)):
        found = [n for n in all_names if suffix_rule(n)]
        if len({all_names[n] for n in found}) == 1:
            return all_names[found[0]]
        if found:
            raise UnknownName(f"key field '{wanted}' is ambiguous: {', '.join(sorted(found))}")
    return all_names[resolve_name(wanted, list(all_names), "key field")]   # raises, listing all


def _stack_notation(field: str) -> str:
    """p4c's STF may write stack elements as `stack$0`; the JSON says `stack[0]`."""
    out = []
    for part in field.split("."):
        head, sep, index = part.partition("$")
        if sep and index.isdigit() and head:
            part = f"{head}[{index}]"
        out.append(part)
    return ".".join(out)
