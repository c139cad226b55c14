"""scripts/wireshark/ina.lua is generated from hosts/ina_header.py: the committed file must be
the generator's output, so the dissector cannot drift from the header's definition."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hosts.ina_header import FIELD_OFFSETS, FLAG_FIELDS, LAYOUT, Kind
from inaemu.trace.wireshark import COMMAND, LUA_PATH, lua_dissector

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_dissector_is_the_generators_output():
    committed = (ROOT / LUA_PATH).read_text()
    assert committed == lua_dissector(), (
        f"{LUA_PATH} differs from what hosts/ina_header.py generates; regenerate it: {COMMAND}")


def test_the_module_writes_the_dissector_to_stdout():
    done = subprocess.run([sys.executable, "-m", "inaemu.trace.wireshark"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert done.stdout == lua_dissector()


def test_the_dissector_names_every_kind_and_reads_every_field_at_its_offset():
    lua = lua_dissector()
    for kind in Kind:
        assert f'[{int(kind)}] = "{kind.name}"' in lua
    for name, bits in LAYOUT:
        assert f'ProtoField.uint{bits}("ina.{name}"' in lua
        if name != "flags":
            assert f"subtree:add(f.{name}, buffer({FIELD_OFFSETS[name]}, {bits // 8}))" in lua
    for flag, mask, _ in FLAG_FIELDS:
        assert re.search(rf'"ina\.{flag}", .*0x{mask:02X}\)', lua), flag
    code = re.sub(r'"[^"\n]*"', '""', re.sub(r"--[^\n]*", "", lua))   # no comments, strings
    assert code.count("(") == code.count(")") and code.count("{") == code.count("}")
    # blocks: every `function`, `if ... then` and `for ... do` has its `end`
    opened = len(re.findall(r"\bfunction\b|\bthen\b|\bdo\b", code))
    assert opened == len(re.findall(r"\bend\b", code)) == 4
