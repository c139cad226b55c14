"""Names to P4Runtime messages and back, without a switch."""

from __future__ import annotations

import pytest

from controller import entities
from controller.encoding import encode, to_int
from controller.errors import EncodingError, P4InfoError
from controller.p4info import P4InfoIndex
from controller.routing import L3_FORWARD, Route, arp_entries, host_routes
from p4info_sample import SAMPLE_P4INFO
from topologies.builders import fat_tree, leaf_spine, linear, star


@pytest.fixture(scope="module")
def index() -> P4InfoIndex:
    return P4InfoIndex.from_text(SAMPLE_P4INFO)


def test_values_encode_canonically():
    assert encode(0, 9) == b"\x00"
    assert encode(1, 9) == b"\x01"
    assert encode("10.0.0.1", 32) == b"\x0a\x00\x00\x01"
    assert encode("02:00:0a:00:00:01", 48) == b"\x02\x00\x0a\x00\x00\x01"
    assert encode("0x1ff", 9) == b"\x01\xff"
    assert to_int(b"\x00\x00\x05") == 5
    with pytest.raises(EncodingError, match="port: 512 does not fit in 9 bits"):
        encode(512, 9, where="port")
    with pytest.raises(EncodingError, match="not an IPv4 address"):
        encode("10.0.0.256", 32)
    with pytest.raises(EncodingError, match="cannot read 'ten'"):
        encode("ten", 32)


def test_names_resolve_by_full_name_alias_or_suffix(index):
    assert index.table("ipv4_lpm").id == 101
    assert index.table("MyIngress.ipv4_lpm").id == 101
    assert index.table("MyEgress.acl").id == 103
    assert index.action("ipv4_forward").param("port").bitwidth == 9
    assert index.counter("rx_port_counter").size == 512
    assert index.register("slots").bitwidth == 32
    with pytest.raises(P4InfoError, match="ambiguous: MyEgress.acl, MyIngress.acl"):
        index.table("acl")
    with pytest.raises(P4InfoError, match=r"no table named 'ipv4' \(known: "):
        index.table("ipv4")


def test_route_entry_carries_ids_and_canonical_bytes(index):
    route = Route("s1", "h2", "10.0.0.2", 32, 2, "02:00:0a:00:00:02")
    entry = L3_FORWARD.entry(index, route)
    assert entry.table_id == 101
    (fm,) = entry.match
    assert (fm.field_id, fm.lpm.value, fm.lpm.prefix_len) == (1, b"\x0a\x00\x00\x02", 32)
    assert entry.action.action.action_id == 201
    assert [(p.param_id, p.value) for p in entry.action.action.params] == [
        (1, b"\x02\x00\x0a\x00\x00\x02"), (2, b"\x02")]
    view = entities.describe_table_entry(index, entry)
    assert view.match == {"hdr.ipv4.dstAddr": (0x0A000002, 32)}
    assert view.params == {"dstAddr": 0x02000A000002, "port": 2}


def test_wildcards_are_omitted_and_priorities_checked(index):
    default_route = entities.table_entry(index, "ipv4_lpm", {"dstAddr": "0.0.0.0/0"}, "drop")
    assert len(default_route.match) == 0
    with pytest.raises(EncodingError, match="bits set beyond the /8 prefix"):
        entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.1/8"}, "drop")
    with pytest.raises(EncodingError, match="need a priority"):
        entities.table_entry(index, "MyIngress.acl", {"srcAddr": ("10.0.0.0", "255.0.0.0"),
                                                      "ingress_port": 1}, "drop")
    entry = entities.table_entry(index, "MyIngress.acl", {"srcAddr": (0, 0), "ingress_port": 3},
                                 "drop", priority=7)
    assert [m.field_id for m in entry.match] == [2] and entry.priority == 7
    with pytest.raises(EncodingError, match="exact key standard_metadata.ingress_port"):
        entities.table_entry(index, "MyIngress.acl", {}, "drop", priority=1)
    with pytest.raises(EncodingError, match="takes no priority"):
        entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.0/8"}, "drop", priority=3)


def test_action_and_parameter_problems_are_named(index):
    with pytest.raises(P4InfoError, match="not allowed in table MyEgress.acl"):
        entities.table_entry(index, "MyEgress.acl", {"srcAddr": 1}, "ipv4_forward",
                             {"dstAddr": 1, "port": 1})
    with pytest.raises(EncodingError, match="missing parameter"):
        entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.1/32"}, "ipv4_forward",
                             {"dstAddr": 1})
    with pytest.raises(P4InfoError, match="no parameter of action MyIngress.ipv4_forward named 'prt'"):
        entities.table_entry(index, "ipv4_lpm", {"dstAddr": "10.0.0.1/32"}, "ipv4_forward",
                             {"dstAddr": 1, "prt": 1})
    with pytest.raises(EncodingError, match="outside 0..7"):
        entities.register_request(index, "slots", 8)


@pytest.mark.parametrize("topo", [leaf_spine(3, 2, 2), fat_tree(4)], ids=["leaf_spine", "fat_tree"])
def test_routes_cover_every_host_on_every_switch_without_loops(topo):
    routes = host_routes(topo)
    for switch, table in routes.items():
        assert sorted(r.host for r in table) == sorted(h.name for h in topo.hosts)
    next_hop = {(r.switch, r.host): r.port for table in routes.values() for r in table}
    for host in topo.hosts:                     # follow the routes from every switch to the host
        for switch in topo.switches:
            node, hops = switch.name, 0
            while topo.is_switch(node):
                port = next_hop[(node, host.name)]
                node = next(n.node for n in topo.neighbours(node) if n.port == port)
                hops += 1
                assert hops <= len(topo.switches)
            assert node == host.name
    assert [(r.host, r.port) for r in host_routes(linear(2))["s1"]] == [("h1", 1), ("h2", 3)]


def test_static_arp_lists_every_other_host():
    arp = arp_entries(star(3))
    assert arp["h1"] == [("10.0.0.2", "02:00:0a:00:00:02"), ("10.0.0.3", "02:00:0a:00:00:03")]
    assert all(len(v) == 2 for v in arp.values())
