"""Hand-written BMv2 programs that exercise tables and the match kinds (see jsonbuild.py).

Each function returns a `Program`; its docstring is the P4 it stands for. The STF test next to
each JSON explains the expected packets.
"""

from __future__ import annotations

from jsonbuild import Program, assign, field, hexstr, param, prim, set_port
from programs_parser import ethernet


def ethernet_then(p: Program, header: str, header_type: str, fields: list[tuple],
                  ether_type: str = "0x88b6") -> None:
    """eth, then `header` when ether_type matches; deparsed in that order."""
    ethernet(p)
    p.header_type(header_type, fields)
    p.header(header, header_type)
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")], [(ether_type, None, "parse_k"), (None, None, None)])
    p.state("parse_k", [prim("extract", {"type": "regular", "value": header})])
    p.deparse("eth", header)


def setter(p: Program, name: str, target: tuple[str, str], width: int) -> None:
    p.action(name, [assign(field(*target), param(0))], params=[("v", width)])


def match_kinds() -> Program:
    """header k_h { bit<8> a; bit<16> b; bit<8> c; bit<8> r1; bit<8> r2; bit<8> r3; }
    table t_tern  { key = { hdr.k.a: ternary; hdr.k.b: ternary; } actions = { set_r1; NoAction; } }
    table t_range { key = { hdr.k.b: range; }                     actions = { set_r2; NoAction; } }
    table t_opt   { key = { hdr.k.a: optional; hdr.k.c: optional; }
                    actions = { set_r3; NoAction; } }
    ingress: smeta.egress_spec = 1; t_tern.apply(); t_range.apply(); t_opt.apply();
    """
    p = Program("match_kinds")
    ethernet_then(p, "k", "k_h", [("a", 8), ("b", 16), ("c", 8), ("r1", 8), ("r2", 8),
                                  ("r3", 8)])
    p.action("NoAction", [])
    for i in (1, 2, 3):
        setter(p, f"Ingress.set_r{i}", ("k", f"r{i}"), 8)
    p.action("forward", [set_port(1)])
    p.table("ingress", "Ingress.t_tern", [("hdr.k.a", "k", "a", "ternary"),
                                          ("hdr.k.b", "k", "b", "ternary")],
            ["Ingress.set_r1", "NoAction"], "NoAction", base_default_next="Ingress.t_range")
    p.table("ingress", "Ingress.t_range", [("hdr.k.b", "k", "b", "range")],
            ["Ingress.set_r2", "NoAction"], "NoAction", base_default_next="Ingress.t_opt")
    # BMv2 has no `optional` match type: p4c writes optional keys as `ternary` (an entry gives
    # a value, i.e. a full mask, or a wildcard), and so does this fixture
    p.table("ingress", "Ingress.t_opt", [("hdr.k.a", "k", "a", "ternary"),
                                         ("hdr.k.c", "k", "c", "ternary")],
            ["Ingress.set_r3", "NoAction"], "NoAction")
    p.start("ingress", p.call("ingress", "forward", "Ingress.t_tern"))
    return p


def const_entries() -> Program:
    """header k_h { bit<8> a; bit<32> ip; bit<8> r; bit<8> r2; }
    table t_port { key = { hdr.k.a: exact; } actions = { fwd; }
                   const entries = { 0x21: fwd(3); } default_action = fwd(1); }
    table t_tern { key = { hdr.k.a: ternary; } actions = { set_r; }
                   const entries = { 0x10 &&& 0xF0: set_r(1); 0x11 &&& 0xFF: set_r(2); }
                   const default_action = set_r(0xDD); }
    table t_lpm  { key = { hdr.k.ip: lpm; } actions = { set_r2; NoAction; }
                   const entries = { 0x0A000000 &&& 0xFF000000: set_r2(8);
                                     0x0A010000 &&& 0xFFFF0000: set_r2(16); } }
    """
    p = Program("const_entries")
    ethernet_then(p, "k", "k_h", [("a", 8), ("ip", 32), ("r", 8), ("r2", 8)])
    p.action("NoAction", [])
    p.action("Ingress.fwd", [assign(field("standard_metadata", "egress_spec"), param(0))],
             params=[("port", 9)])
    setter(p, "Ingress.set_r", ("k", "r"), 8)
    setter(p, "Ingress.set_r2", ("k", "r2"), 8)
    fwd, set_r, set_r2 = (p._action_id(n) for n in ("Ingress.fwd", "Ingress.set_r",
                                                    "Ingress.set_r2"))
    p.table("ingress", "Ingress.t_port", [("hdr.k.a", "k", "a", "exact")], ["Ingress.fwd"],
            "Ingress.fwd", default_data=(1,), base_default_next="Ingress.t_tern",
            entries=[{"match_key": [{"match_type": "exact", "key": "0x21"}],
                      "action_entry": {"action_id": fwd, "action_data": ["0x0003"]},
                      "priority": 1}])
    p.table("ingress", "Ingress.t_tern", [("hdr.k.a", "k", "a", "ternary")], ["Ingress.set_r"],
            "Ingress.set_r", default_data=(0xDD,), const_default=True,
            base_default_next="Ingress.t_lpm",
            entries=[{"match_key": [{"match_type": "ternary", "key": "0x10", "mask": "0xf0"}],
                      "action_entry": {"action_id": set_r, "action_data": ["0x01"]},
                      "priority": 1},
                     {"match_key": [{"match_type": "ternary", "key": "0x11", "mask": "0xff"}],
                      "action_entry": {"action_id": set_r, "action_data": ["0x02"]},
                      "priority": 2}])
    p.table("ingress", "Ingress.t_lpm", [("hdr.k.ip", "k", "ip", "lpm")],
            ["Ingress.set_r2", "NoAction"], "NoAction",
            entries=[{"match_key": [{"match_type": "lpm", "key": "0x0a000000",
                                     "prefix_length": 8}],
                      "action_entry": {"action_id": set_r2, "action_data": ["0x08"]},
                      "priority": 1},
                     {"match_key": [{"match_type": "lpm", "key": "0x0a010000",
                                     "prefix_length": 16}],
                      "action_entry": {"action_id": set_r2, "action_data": ["0x10"]},
                      "priority": 2}])
    p.start("ingress", "Ingress.t_port")
    return p


def action_profiles() -> Program:
    """header k_h { bit<8> tag; bit<8> sel; bit<8> r; }
    action_profile(128) ap;   action_selector(HashAlgorithm.identity, 128, 8) as;
    table t_ap { key = { hdr.k.tag: exact; } actions = { set_r; NoAction; } implementation = ap; }
    table t_as { key = { hdr.k.tag: exact; hdr.k.sel: selector; } actions = { set_port; }
                 implementation = as; }
    ingress: smeta.egress_spec = 1; t_ap.apply(); t_as.apply();
    """
    p = Program("action_profiles")
    ethernet_then(p, "k", "k_h", [("tag", 8), ("sel", 8), ("r", 8)])
    p.action("NoAction", [])
    setter(p, "Ingress.set_r", ("k", "r"), 8)
    p.action("Ingress.set_port", [assign(field("standard_metadata", "egress_spec"), param(0))],
             params=[("p", 9)])
    p.action("forward", [set_port(1)])
    p.pipelines["ingress"]["action_profiles"] = [
        {"name": "Ingress.ap", "id": 0, "max_size": 128},
        {"name": "Ingress.as", "id": 1, "max_size": 128,
         "selector": {"algo": "identity", "input": [field("k", "sel")]}},
    ]
    p.table("ingress", "Ingress.t_ap", [("hdr.k.tag", "k", "tag", "exact")],
            ["Ingress.set_r", "NoAction"], "NoAction", base_default_next="Ingress.t_as",
            table_type="indirect", action_profile="Ingress.ap")
    p.table("ingress", "Ingress.t_as", [("hdr.k.tag", "k", "tag", "exact")],
            ["Ingress.set_port"], "Ingress.set_port", table_type="indirect_ws",
            action_profile="Ingress.as")
    p.start("ingress", p.call("ingress", "forward", "Ingress.t_ap"))
    return p


def hit_miss() -> Program:
    """header k_h { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; }
    action a1() { hdr.k.r3 = 1; }  action a2() { hdr.k.r3 = 2; }  action b1() {}  action b2() {}
    ingress: smeta.egress_spec = 1;
      if (t1.apply().hit) { hdr.k.r1 = 0x11; } else { hdr.k.r1 = 0x22; }
      switch (t2.apply().action_run) { b1: { hdr.k.r2 = 0xB1; } b2: { hdr.k.r2 = 0xB2; } }
    """
    p = Program("hit_miss")
    ethernet_then(p, "k", "k_h", [("a", 8), ("b", 8), ("r1", 8), ("r2", 8), ("r3", 8)])
    p.action("NoAction", [])
    p.action("Ingress.a1", [assign(field("k", "r3"), hexstr(1, 8))])
    p.action("Ingress.a2", [assign(field("k", "r3"), hexstr(2, 8))])
    p.action("Ingress.b1", [])
    p.action("Ingress.b2", [])
    for name, target, value in (("on_hit", "r1", 0x11), ("on_miss", "r1", 0x22),
                                ("after_b1", "r2", 0xB1), ("after_b2", "r2", 0xB2)):
        p.action(name, [assign(field("k", target), hexstr(value, 8))])
    p.action("forward", [set_port(1)])
    hit = p.call("ingress", "on_hit", "Ingress.t2")
    miss = p.call("ingress", "on_miss", "Ingress.t2")
    p.table("ingress", "Ingress.t1", [("hdr.k.a", "k", "a", "exact")],
            ["Ingress.a1", "Ingress.a2", "NoAction"], "NoAction",
            next_tables={"__HIT__": hit, "__MISS__": miss})
    p.table("ingress", "Ingress.t2", [("hdr.k.b", "k", "b", "exact")],
            ["Ingress.b1", "Ingress.b2", "NoAction"], "NoAction",
            next_tables={"Ingress.b1": p.call("ingress", "after_b1", None),
                         "Ingress.b2": p.call("ingress", "after_b2", None),
                         "NoAction": None})
    p.start("ingress", p.call("ingress", "forward", "Ingress.t1"))
    return p


PROGRAMS = [match_kinds, const_entries, action_profiles, hit_miss]
