"""Table entries written as bytes (`entities.table_entry_bytes`, controller/wire.py) are byte
for byte what protobuf's serializer makes of `entities.table_entry`'s message, for every match
kind, ids and values of one to five varint bytes, wildcards left out; and both refuse the same
bad entries with the same errors (one set of rules: `entities.entry_plan`). The fabric and the
job installers write these bytes."""

from __future__ import annotations

import itertools

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller import entities, wire
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


ACTIONS = [("Ingress.set", {"port": 0, "mac": "00:00:00:00:00:00", "flag": 1}),
           ("Ingress.set", {"port": 511, "mac": "ff:ee:dd:cc:bb:aa", "flag": 0}),
           ("nop", {})]
MATCHES = [
    ("lpm", {"dst": "10.0.1.0/24"}, None), ("lpm", {"dst": (0, 0)}, None),
    ("lpm", {"dst": ("10.1.2.3", 32)}, None), ("lpm", {}, None),
    ("exact", {"a": 0, "b": 2**127 + 5}, None), ("exact", {"a": 65535, "b": b"\x00\x01"}, None),
    ("mixed", {"t": (0x0A000000, 0xFF000000), "r": (1, 1000), "o": 7, "e": 0}, 1),
    ("mixed", {"t": (5, 0), "e": 300}, 2**31 - 1),
    ("mixed", {"r": (0, 65535), "e": 1}, 200),
]


@pytest.mark.parametrize("match, action", list(itertools.product(MATCHES, ACTIONS)))
def test_entry_bytes_are_the_serializers(match, action):
    index = _index()
    table, keys, priority = match
    name, params = action
    message = entities.table_entry(index, table, keys, name, params, priority)
    written = entities.table_entry_bytes(index, table, keys, name, params, priority)
    assert isinstance(written, wire.TableEntryBytes)
    assert written == message.SerializeToString()
    assert p4runtime_pb2.TableEntry.FromString(written) == message


def test_a_write_of_entry_bytes_is_the_write_of_the_messages():
    index = _index()
    header = p4runtime_pb2.WriteRequest(device_id=3)
    header.election_id.low = 1
    messages = [entities.table_entry(index, t, k, "nop", {}, p) for t, k, p in MATCHES]
    written = [entities.table_entry_bytes(index, t, k, "nop", {}, p) for t, k, p in MATCHES]
    insert = p4runtime_pb2.Update.INSERT
    assert wire.write_request_bytes(header, [(insert, w) for w in written]) == \
        wire.write_request_bytes(header, [(insert, m) for m in messages])


@pytest.mark.parametrize("table, keys, action, params, priority", [
    ("exact", {"a": 1}, "nop", {}, None),                     # exact key missing
    ("exact", {"a": 1 << 16, "b": 1}, "nop", {}, None),       # too wide
    ("lpm", {"dst": "10.0.1.1/24"}, "nop", {}, None),         # bits beyond the prefix
    ("mixed", {"e": 1}, "nop", {}, None),                     # needs a priority
    ("lpm", {"dst": "10.0.1.0/24"}, "nop", {}, 3),            # takes none
    ("lpm", {"dst": "10.0.1.0/24"}, "Ingress.set", {"port": 1}, None),   # missing params
    ("lpm", {"nope": 1}, "nop", {}, None),                    # no such key
])
def test_both_refuse_the_same_entries_alike(table, keys, action, params, priority):
    index = _index()
    errors = []
    for build in (entities.table_entry, entities.table_entry_bytes):
        with pytest.raises(ControllerError) as error:
            build(index, table, keys, action, params, priority)
        errors.append((type(error.value), str(error.value)))
    assert errors[0] == errors[1]


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
