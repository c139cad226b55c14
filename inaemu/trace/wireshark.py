"""The Wireshark / tshark Lua dissector, generated from the header's one definition
(`hosts/ina_header.py`): Lua cannot import Python, so the dissector is written out from it.

    python -m inaemu.trace.wireshark > scripts/wireshark/ina.lua

`tests/trace/test_wireshark_lua.py` checks that the committed `scripts/wireshark/ina.lua` is
exactly this output: change the header in `hosts/ina_header.py`, then regenerate.
"""

from __future__ import annotations

import sys

from hosts.ina_header import (FIELD_OFFSETS, FLAG_FIELDS, FLAG_FORMAT, FLAG_RETX, FLAG_VER,
                              FORMAT_SHIFT, HEADER_BYTES, INA_UDP_PORT, LANE_BITS, LAYOUT, Format,
                              Kind)

LUA_PATH = "scripts/wireshark/ina.lua"
COMMAND = f"python -m inaemu.trace.wireshark > {LUA_PATH}"

# How Wireshark shows each header field: (label, base); flags get a subtree of their bits.
FIELD_DISPLAY = {
    "kind": ("Kind", "DEC"),
    "flags": ("Flags", "HEX"),
    "job": ("Job", "DEC"),
    "worker": ("Worker", "DEC"),
    "pad": ("Padding", "HEX"),
    "slot": ("Slot", "DEC"),
    "chunk": ("Chunk", "DEC"),
    "count": ("Count", "DEC"),
    "bmax": ("Block max (bfloat16)", "HEX"),
}

_PREAMBLE = f"""\
-- Wireshark / tshark dissector for inaemu's aggregation packets (docs/protocol.md §1).
--
-- GENERATED from hosts/ina_header.py (the header's one definition): do not edit. Change the
-- header there and regenerate: `{COMMAND}`
-- (tests/trace/test_wireshark_lua.py checks this file is the generator's output).
--
--   tshark -X lua_script:scripts/wireshark/ina.lua -r s1-eth1_in.pcap -V
--   tshark -X lua_script:scripts/wireshark/ina.lua -r s1-eth1_in.pcap -Y 'ina.retx == 1' \\
--          -T fields -e frame.time_relative -e ina.kind -e ina.worker -e ina.slot -e ina.chunk
--
-- Or copy it into Wireshark's personal plugins folder. UDP port {INA_UDP_PORT} (either direction)
-- dissects as INA; k (values per packet) follows from the UDP payload length.
"""


def _lua_table(prefix: str, mapping: dict[int, str], width: int = 96) -> list[str]:
    """`prefix{ [key] = "value", ... }` as lines of at most about `width` characters."""
    items = [f'[{key}] = "{value}"' for key, value in sorted(mapping.items())]
    lines, line = [], prefix + "{ "
    for index, item in enumerate(items):
        item += ", " if index < len(items) - 1 else " }"
        if len(line) + len(item) > width and not line.endswith("{ "):
            lines.append(line.rstrip())
            line = " " * (len(prefix) + 2)
        line += item
    return lines + [line]


def _msb_bitfield(mask: int) -> tuple[int, int]:
    """(position from the most significant bit, width) of a contiguous mask in one byte, as
    TvbRange:bitfield counts."""
    low = (mask & -mask).bit_length() - 1
    width = bin(mask).count("1")
    return 8 - low - width, width


def lua_dissector() -> str:
    """The text of scripts/wireshark/ina.lua."""
    offsets = FIELD_OFFSETS
    sizes = {name: bits // 8 for name, bits in LAYOUT}
    formats = {code: "invalid" for code in range((FLAG_FORMAT >> FORMAT_SHIFT) + 1)}
    formats.update({int(code): code.name.lower() for code in Format})
    lines = [_PREAMBLE, 'local ina = Proto("ina", "inaemu in-network aggregation")', ""]
    lines += _lua_table("local kinds = ", {int(kind): kind.name for kind in Kind})
    lines += _lua_table("local formats = ", formats)
    lines += ["", "local f = ina.fields"]
    flag_bits = dict(LAYOUT)["flags"]
    assert flag_bits == 8, "the flags' bitfield positions below assume one byte"
    for name, bits in LAYOUT:
        label, base = FIELD_DISPLAY[name]
        table = ", kinds" if name == "kind" else ""
        lines.append(f'f.{name} = ProtoField.uint{bits}("ina.{name}", "{label}", base.{base}'
                     f'{table})')
        if name == "flags":
            for flag, mask, flag_label in FLAG_FIELDS:
                values = "formats" if mask == FLAG_FORMAT else "nil"
                lines.append(f'f.{flag} = ProtoField.uint{flag_bits}("ina.{flag}", '
                             f'"{flag_label}", base.DEC, {values}, 0x{mask:02X})')
    lines.append('f.k = ProtoField.uint16("ina.k", "Values (k)", base.DEC)')
    lines.append(f'f.value = ProtoField.int{LANE_BITS}("ina.value", "Value", base.DEC)')
    lines += ["", f"local HEADER = {HEADER_BYTES}", f"local LANE = {LANE_BITS // 8}", ""]

    def rng(name: str) -> str:
        return f"buffer({offsets[name]}, {sizes[name]})"

    lines += [
        "function ina.dissector(buffer, pinfo, tree)",
        "    if buffer:len() < HEADER then return 0 end",
        '    pinfo.cols.protocol = "INA"',
        "    local k = math.floor((buffer:len() - HEADER) / LANE)",
        "    local subtree = tree:add(ina, buffer(0, HEADER + LANE * k))",
    ]
    for name, _bits in LAYOUT:
        if name == "flags":
            lines.append(f"    local flags = subtree:add(f.flags, {rng('flags')})")
            lines += [f"    flags:add(f.{flag}, {rng('flags')})" for flag, _, _ in FLAG_FIELDS]
        else:
            lines.append(f"    subtree:add(f.{name}, {rng(name)})")
    ver_at, ver_width = _msb_bitfield(FLAG_VER)
    retx_at, retx_width = _msb_bitfield(FLAG_RETX)
    lines += [
        "    subtree:add(f.k, k):set_generated()",
        "    if k > 0 then                 -- QUERY and NACK are the header alone",
        "        local values = subtree:add(buffer(HEADER, LANE * k),",
        '                                   string.format("Values (%d)", k))',
        "        for i = 0, k - 1 do",
        "            values:add(f.value, buffer(HEADER + LANE * i, LANE))",
        "        end",
        "    end",
        f"    local kind = {rng('kind')}:uint()",
        f"    local ver = {rng('flags')}:bitfield({ver_at}, {ver_width})",
        f"    local retx = {rng('flags')}:bitfield({retx_at}, {retx_width}) == 1",
        '    pinfo.cols.info = string.format("%s job=%d worker=%d slot=%d v%d chunk=%d%s",',
        f'        kinds[kind] or ("kind " .. kind), {rng("job")}:uint(), {rng("worker")}:uint(),',
        f"        {rng('slot')}:uint(), ver, {rng('chunk')}:uint(),",
        '        retx and " retx" or "")',
        "    return HEADER + LANE * k",
        "end",
        "",
        f'DissectorTable.get("udp.port"):add({INA_UDP_PORT}, ina)',
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(lua_dissector())
    return 0


if __name__ == "__main__":
    sys.exit(main())
