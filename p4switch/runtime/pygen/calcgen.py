"""Calculations (`calculations` in the JSON; also selector hashes) compiled into functions.

A calculation packs its inputs MSB-first into one int (fields of invalid headers are skipped, as
BMv2 does), turns that into bytes zero-padded at the end, and runs the named algorithm on it.
A `payload` input appends the packet's payload, the bytes the parser did not extract: what
simple_switch sums (its deparser updates checksums before it puts the headers back, and its
parser verifies them after it took them off), so a header parsed after the summed ones is not
part of it.
"""

from __future__ import annotations

from ..config import MAX_WIDTH, Node
from ..phv.layout import HeaderInstance
from ..state.hashes import BITS_VARIANTS, csum16_bits
from .exprgen import CodeScope


def compile_calculation(name: str, algo: str, inputs: list[Node], scope: CodeScope,
                        algorithms: dict, where: Node) -> str:
    """Add `def calc_N(f, v, payload) -> int` to the generated source; return its name."""
    if algo not in algorithms:
        raise where.error(f"unsupported hash algorithm '{algo}' (supported: "
                          f"{', '.join(sorted(algorithms))})")
    algorithm = algorithms[algo]
    if algo.endswith("_custom"):
        # each calculation owns its CRC so the control plane can set its parameters alone
        customs = scope.namespace["__custom_crcs__"]
        if name not in customs:
            customs[name] = algorithm.copy()
        algorithm = customs[name]
    fn = scope.bind("calcname", object())  # reserve a unique name
    lines = [f"def {fn}(f, v, payload):", "    x = 0", "    n = 0"]
    groups: list[tuple[HeaderInstance | None, list[tuple[str, int]]]] = []
    has_payload = False
    for item in inputs:
        kind, value = item.type_value()
        if kind == "field":
            ref = scope.layout.field(value[0].str(), value[1].str(), value)
            if ref.width is None:  # varbit: its current length is in a slot of its own
                _add(groups, ref.header, f"f[{ref.slot}]", f"f[{ref.header.varbit_len_slot}]")
                continue
            code = f"v[{ref.header.index}]" if ref.is_valid_bit else f"f[{ref.slot}]"
            if ref.signed:
                code = f"({code} & {(1 << ref.width) - 1})"
            _add(groups, ref.header, code, ref.width)
        elif kind == "header":
            inst = scope.layout.header(value.str(), value)
            for i, (_, width, signed) in enumerate(inst.htype.fields):
                code = f"f[{inst.base + i}]"
                if width is None:
                    _add(groups, inst, code, f"f[{inst.varbit_len_slot}]")
                    continue
                _add(groups, inst, f"({code} & {(1 << width) - 1})" if signed else code, width)
        elif kind == "hexstr":
            width = item["bitwidth"].int(1, MAX_WIDTH)
            _add(groups, None, str(value.hexstr() & ((1 << width) - 1)), width)
        elif kind == "payload":
            has_payload = True
        else:
            raise item.error(f"unsupported calculation input type '{kind}'")
    if algorithm in BITS_VARIANTS and BITS_VARIANTS[algorithm] is csum16_bits and \
            not has_payload:
        summed = _csum16_by_words(fn, groups)
        if summed is not None:
            scope.namespace.setdefault("__source__", []).append("\n".join(summed[0]))
            # [(validity index of the header or None, [term code])]: multicast replicas add
            # the terms egress cannot change only once (deparsergen)
            scope.namespace.setdefault(SUM_TERMS, {})[fn] = summed[1]
            return fn
    for header, parts in groups:
        indent = "    "
        if header is not None and not header.metadata:
            lines.append(f"    if v[{header.index}]:")
            indent = "        "
        if any(isinstance(w, str) for _, w in parts):  # a varbit part: lengths known at run time
            for code, width in parts:
                lines.append(f"{indent}x = (x << {width}) | {code}")
                lines.append(f"{indent}n += {width}")
            continue
        total = sum(w for _, w in parts)
        packed = " | ".join(f"({code} << {shift})" if shift else code
                            for code, shift in _shifts(parts))
        lines.append(f"{indent}x = (x << {total}) | {packed}")
        lines.append(f"{indent}n += {total}")
    if has_payload:
        algo_name = scope.bind("algo", algorithm)
        lines.append(f"    return {algo_name}(_bits_to_bytes(x, n) + payload)")
    elif algorithm in BITS_VARIANTS:
        lines.append(f"    return {scope.bind('algo', BITS_VARIANTS[algorithm])}(x, n)")
    else:
        lines.append(f"    return {scope.bind('algo', algorithm)}(_bits_to_bytes(x, n))")
    scope.namespace.setdefault("__source__", []).append("\n".join(lines))
    return fn


SUM_TERMS = "__sum_terms__"       # namespace key: calculation name -> its sum's terms


def _csum16_by_words(fn: str, groups) -> tuple[list[str], list] | None:
    """The Internet checksum as a plain sum of 16-bit words built from the fields.

    2**16 = 1 (mod 0xFFFF), so the packed bits modulo 0xFFFF are the sum of their 16-bit words
    modulo 0xFFFF: no big int at all. Needs every group (a header's fields, present or not)
    to be whole 16-bit words, so the words line up whichever headers are valid."""
    lines = [f"def {fn}(f, v, payload):", "    s = 0"]
    structure: list[tuple[int | None, list[str]]] = []
    for header, parts in groups:
        widths = [w for _, w in parts]
        if any(isinstance(w, str) for w in widths) or sum(widths) % 16:
            return None
        terms = _csum16_terms(parts)
        if terms is None:
            return None
        words = " + ".join(terms)
        index = header.index if header is not None and not header.metadata else None
        structure.append((index, terms))
        if header is not None and not header.metadata:
            lines += [f"    if v[{header.index}]:", f"        s += {words}"]
        else:
            lines.append(f"    s += {words}")
    # csum16_bits: 0xFFFF for all-zero input, else ~(x % 0xFFFF or 0xFFFF) & 0xFFFF
    lines.append("    return 65535 if not s else ~(s % 65535 or 65535) & 65535")
    return lines, structure


def _csum16_terms(parts: list[tuple[str, int]]) -> list[str] | None:
    """Terms whose sum is the parts' 16-bit words' sum modulo 0xFFFF: the parts cut where a
    word starts, each piece packed into one int. A piece that starts on a word and is whole
    words long is the sum of its words modulo 0xFFFF (2**16 = 1), so a 32-bit address is one
    term as it is. None if the parts do not end on a word."""
    terms: list[str] = []
    pending: list[tuple[str, int]] = []
    position = 0
    for code, width in parts:
        pending.append((code, width))
        position += width
        if position % 16 == 0:
            terms.append(pending[0][0] if len(pending) == 1 else
                         "(" + " | ".join(f"({c} << {shift})" if shift else c
                                          for c, shift in _shifts(pending)) + ")")
            pending = []
    return None if pending else terms


def _add(groups, header, code: str, width: int | str) -> None:
    """Append a part; `width` is an int, or code for a varbit field's run-time length."""
    if groups and groups[-1][0] is header:
        groups[-1][1].append((code, width))
    else:
        groups.append((header, [(code, width)]))


def _shifts(parts: list[tuple[str, int]]):
    shift = sum(w for _, w in parts)
    for code, width in parts:
        shift -= width
        yield code, shift
