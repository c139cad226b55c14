"""Table entries the controller refuses before they reach a switch (`entities.entry_plan`'s
rules), and dotted quads read as `ipaddress` reads them."""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

from controller import entities
from controller.errors import ControllerError
from controller.p4info import P4InfoIndex

KINDS = {"exact": p4info_pb2.MatchField.EXACT, "lpm": p4info_pb2.MatchField.LPM,
         "ternary": p4info_pb2.MatchField.TERNARY, "range": p4info_pb2.MatchField.RANGE,
         "optional": p4info_pb2.MatchField.OPTIONAL}


def _index() -> P4InfoIndex:
    """Tables with every match kind, p4c-sized ids (0x02000001...) and small ones."""
    info = p4info_pb2.P4Info()
    action = info.actions.add()
    action.preamble.id, action.preamble.name = 0x01000005, "Ingress.set"
    for number, (name, width) in enumerate((("port", 9), ("mac", 48), ("flag", 1)), start=1):
        action.params.add(id=number * 100, name=name, bitwidth=width)
    none = info.actions.add()
    none.preamble.id, none.preamble.name = 3, "Ingress.nop"
    for table_id, (name, keys) in enumerate((
            ("Ingress.lpm", [("dst", "lpm", 32)]),
            ("Ingress.exact", [("a", "exact", 16), ("b", "exact", 128)]),
            ("Ingress.mixed", [("t", "ternary", 32), ("r", "range", 16), ("o", "optional", 8),
                               ("e", "exact", 9)])), start=0x02000001):
        table = info.tables.add(size=64)
        table.preamble.id, table.preamble.name = table_id if "mixed" not in name else 7, name
        for field_id, (key, kind, width) in enumerate(keys, start=1):
            table.match_fields.add(id=field_id * 70, name=key, bitwidth=width,
                                   match_type=KINDS[kind])
        table.action_refs.add(id=0x01000005)
        table.action_refs.add(id=3)
    return P4InfoIndex(info)



@pytest.mark.parametrize("table, keys, action, params, priority", [
    ("exact", {"a": 1}, "nop", {}, None),                     # exact key missing
    ("exact", {"a": 1 << 16, "b": 1}, "nop", {}, None),       # too wide
    ("lpm", {"dst": "10.0.1.1/24"}, "nop", {}, None),         # bits beyond the prefix
    ("mixed", {"e": 1}, "nop", {}, None),                     # needs a priority
    ("lpm", {"dst": "10.0.1.0/24"}, "nop", {}, 3),            # takes none
    ("lpm", {"dst": "10.0.1.0/24"}, "Ingress.set", {"port": 1}, None),   # missing params
    ("lpm", {"nope": 1}, "nop", {}, None),                    # no such key
])
def test_bad_entries_are_refused(table, keys, action, params, priority):
    with pytest.raises(ControllerError):
        entities.table_entry(_index(), table, keys, action, params, priority)


@pytest.mark.parametrize("text", ["0.0.0.0", "10.0.1.2", "255.255.255.255", "192.168.100.9",
                                  "1.2.3.256", "01.2.3.4", "1.2.3.-4", "1.2..4", "1.2.3.4.5",
                                  " 10.0.0.1 ", "10.0.0.١"])
def test_dotted_quads_read_as_ipaddress_reads_them(text):
    import ipaddress

    from controller.encoding import to_int
    from controller.errors import EncodingError
    try:
        expected = int(ipaddress.IPv4Address(text.strip()))
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(EncodingError):
            to_int(text)
    else:
        assert to_int(text) == expected
