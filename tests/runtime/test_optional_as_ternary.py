"""A P4 `optional` key reaches BMv2 JSON as `ternary` (BMv2 has no optional match type; p4c and
inaemu both write it so), while P4Runtime and the runtime API still speak `OptionalKey`. The
runtime takes an OptionalKey on such a field as a full-mask ternary value (or a wildcard), as
simple_switch_grpc does, and reads it back as it was written."""

from __future__ import annotations

from pathlib import Path

from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, OptionalKey, Switch

CORPUS = Path(__file__).resolve().parents[1] / "p4"


def _packets() -> list[tuple[int, bytes]]:
    packets = []
    for line in (CORPUS / "table_match.stf").read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["packet"]:
            packets.append((int(words[1]), bytes.fromhex("".join(words[2:]))))
    return packets


def test_optional_keys_on_a_ternary_json_field_act_as_the_const_entries_do():
    doc = compile_file(str(CORPUS / "table_match.p4")).bmv2
    with_const = Switch(doc)
    for pipeline in doc["pipelines"]:
        for table in pipeline["tables"]:
            if table["name"].endswith("t_opt"):
                assert [k["match_type"] for k in table["key"]] == ["ternary", "exact"]
                table.pop("entries")
    written = Switch(doc)
    table = next(name for name in written.program.tables if name.endswith("t_opt"))
    action = next(a.name for a in written.program.actions.values() if a.name.endswith("set_opt"))
    entries = [(OptionalKey(5), 1, 0x51, 30), (OptionalKey(None), 1, 0x01, 20),
               (OptionalKey(None), 2, 0x02, 10)]   # the program's const entries, first wins
    for opt, tag, value, priority in entries:
        written.table_add(table, [opt, ExactKey(tag)], action, [value], priority=priority)
    assert {e.keys[0] for e in written.table_entries(table)} == {OptionalKey(5),
                                                                 OptionalKey(None)}
    packets = _packets()
    assert len(packets) >= 3
    for port, data in packets:
        assert written.receive(port, data) == with_const.receive(port, data)
