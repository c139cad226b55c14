"""The aggregation header's one definition (hosts/ina_header.py) against the P4 program, and the
Python modules that must derive from it rather than keep copies.

The P4 program cannot import Python, so these tests read `p4src/ina_headers.p4inc`'s
`header ina_t` and `p4src/ina.p4`'s kind, flag and format constants and compare them with the
definition; a drift fails with the differing fields or constants named.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from hosts import ina_header
from hosts.ina_header import (FIELD_OFFSETS, FLAG_FIELDS, HEADER, HEADER_BYTES, HEADER_FORMAT,
                              INA_UDP_PORT, LAYOUT, Format, Kind, format_flags)

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
HEADERS_P4 = P4SRC / "ina_headers.p4inc"
PROGRAM_P4 = P4SRC / "ina.p4"


def _without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", re.sub(r"//[^\n]*", "", text), flags=re.S)


def p4_header_fields(text: str, header: str = "ina_t") -> list[tuple[str, int]]:
    """(name, bits) of `header NAME { bit<W> field; ... }`, in order."""
    match = re.search(rf"\bheader\s+{header}\s*\{{(.*?)\}}", _without_comments(text), re.S)
    if match is None:
        raise AssertionError(f"no `header {header} {{ ... }}` found")
    fields = []
    for line in match.group(1).split(";"):
        if not line.strip():
            continue
        field = re.fullmatch(r"\s*bit<(\d+)>\s+(\w+)\s*", line)
        if field is None:
            raise AssertionError(f"header {header}: cannot read field {line.strip()!r}")
        fields.append((field.group(2), int(field.group(1))))
    return fields


def _number(expression: str) -> int | None:
    """The value of a constant expression of integer literals (+, -, *, <<, |), else None."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.LShift,
               ast.BitOr)
    if not all(isinstance(node, allowed) for node in ast.walk(tree)):
        return None
    return eval(compile(tree, "<p4 const>", "eval"))       # literals and operators only


def p4_constants(text: str) -> dict[str, int]:
    """`const bit<W> NAME = EXPR;` whose EXPR is made of integer literals."""
    found = {}
    for name, expression in re.findall(r"\bconst\s+bit<\d+>\s+(\w+)\s*=\s*([^;]+);",
                                       _without_comments(text)):
        value = _number(expression)
        if value is not None:
            found[name] = value
    return found


def expected_p4_constants() -> dict[str, int]:
    """The constants ina.p4 must define, by its naming: INA_<KIND>, INA_FLAG_<FLAG>,
    INA_FORMAT_<FORMAT> (the format's flag bits), the port and the header-only UDP length."""
    expected = {f"INA_{kind.name}": int(kind) for kind in Kind}
    expected.update({f"INA_FLAG_{name.upper()}": mask for name, mask, _ in FLAG_FIELDS})
    expected.update({f"INA_FORMAT_{code.name}": format_flags(code) for code in Format})
    expected["INA_UDP_PORT"] = INA_UDP_PORT
    expected["INA_HEADER_UDP_LENGTH"] = 8 + HEADER_BYTES
    return expected


def drift(p4_layout: list[tuple[str, int]], constants: dict[str, int]) -> list[str]:
    """Every disagreement between the P4 text's header and constants and the definition."""
    problems = []
    if p4_layout != list(LAYOUT):
        problems.append(f"header ina_t is {p4_layout}, hosts/ina_header.py LAYOUT is "
                        f"{list(LAYOUT)}")
    for name, value in expected_p4_constants().items():
        if name not in constants:
            problems.append(f"ina.p4 defines no `const ... {name}` (hosts/ina_header.py: {value})")
        elif constants[name] != value:
            problems.append(f"ina.p4 has {name} = {constants[name]}, hosts/ina_header.py {value}")
    prefixed = (("INA_FLAG_", {f"INA_FLAG_{n.upper()}" for n, _, _ in FLAG_FIELDS}),
                ("INA_FORMAT_", {f"INA_FORMAT_{c.name}" for c in Format}))
    for prefix, known in prefixed:
        for name in sorted(set(constants) - known):
            if name.startswith(prefix):
                problems.append(f"ina.p4 has {name} = {constants[name]}, unknown to "
                                "hosts/ina_header.py")
    return problems


def test_the_p4_header_and_constants_match_the_definition():
    problems = drift(p4_header_fields(HEADERS_P4.read_text()),
                     p4_constants(PROGRAM_P4.read_text()))
    assert not problems, ("p4src and hosts/ina_header.py disagree (change both, then "
                          "regenerate scripts/wireshark/ina.lua):\n  " + "\n  ".join(problems))


def test_every_kind_ina_p4_compares_with_is_a_kind_of_the_definition():
    text = _without_comments(PROGRAM_P4.read_text())
    used = set(re.findall(r"hdr\.ina\.kind\s*(?:==|!=|>=|<=|>|<|=|\|)\s*(INA_\w+)", text))
    assert used, "found no comparison of hdr.ina.kind in ina.p4"
    kinds = {f"INA_{kind.name}" for kind in Kind}
    assert used <= kinds, f"ina.p4 uses kind constants {sorted(used - kinds)} unknown here"
    assert "INA_NACK" in used and max(Kind) == Kind.NACK       # `kind > INA_NACK` = bad kind


def test_the_drift_check_names_what_differs():
    text = HEADERS_P4.read_text().replace("bit<16> slot;", "bit<24> slot;")
    constants = p4_constants(PROGRAM_P4.read_text())
    constants["INA_NACK"] = 6
    constants["INA_FLAG_URGENT"] = 0x40
    del constants["INA_QUERY"]
    problems = drift(p4_header_fields(text), constants)
    assert len(problems) == 4
    assert "('slot', 24)" in problems[0] and "('slot', 16)" in problems[0]
    assert "no `const ... INA_QUERY`" in problems[1]
    assert "INA_NACK = 6" in problems[2] and "INA_FLAG_URGENT" in problems[3]


def test_the_layout_gives_the_struct_and_the_offsets():
    assert HEADER_FORMAT == "!BBHBBHIHH" and HEADER is ina_header.HEADER
    assert HEADER_BYTES == HEADER.size == sum(bits for _, bits in LAYOUT) // 8 == 16
    assert [FIELD_OFFSETS[name] for name, _ in LAYOUT] == [0, 1, 2, 4, 5, 6, 8, 12, 14]
    assert [int(k) for k in Kind] == list(range(6))
    assert (Kind.QUERY, Kind.NACK) == (4, 5)
    masks = [mask for _, mask, _ in FLAG_FIELDS]
    assert all(a & b == 0 for i, a in enumerate(masks) for b in masks[i + 1:])
    assert [format_flags(code) for code in Format] == [0x00, 0x04, 0x08]


def test_the_users_import_the_definition_instead_of_copying_it():
    from hosts import fallback, ina_wire
    from inaemu.trace import events, scapy_ina, wireshark

    assert ina_wire.Kind is Kind and ina_wire.HEADER is HEADER
    assert (ina_wire.FLAG_VER, ina_wire.FLAG_RETX, ina_wire.FLAG_FORMAT, ina_wire.FLAG_OVERFLOW,
            ina_wire.FLAG_NEXT) == tuple(mask for _, mask, _ in FLAG_FIELDS)
    assert fallback.HEADER is HEADER and fallback.Kind is Kind
    assert events.KIND_NAMES == {int(kind): kind.name for kind in Kind}
    assert scapy_ina.KINDS == events.KIND_NAMES
    assert [f.name for f in scapy_ina.Ina.fields_desc[:len(LAYOUT)]] == [n for n, _ in LAYOUT]
    for module in (ina_wire, fallback, events, scapy_ina, wireshark):
        source = inspect.getsource(module)
        assert "struct.Struct(" not in source, f"{module.__name__} defines its own header struct"
        copied = re.search(r"^(FLAG_\w+|INA_UDP_PORT|KIND\w*)\s*=\s*(0x|\d|\{\s*\d)", source,
                           re.M)
        assert not copied, f"{module.__name__} defines header constants of its own: {copied[0]}"


@pytest.mark.parametrize("kind", list(Kind))
def test_every_kind_round_trips_through_the_wire_codec(kind):
    from hosts.ina_wire import InaPacket, decode, encode
    values = [] if kind in ina_header.HEADER_ONLY_KINDS else [1, -2, 3, -4]
    packet = InaPacket(kind=kind, job=9, worker=2, slot=3, chunk=4, values=values, ver=1,
                       retx=True)
    payload = encode(packet)
    assert HEADER.unpack_from(payload)[:2] == (kind, 0x03)
    assert decode(payload) == packet
