"""Hand-written BMv2 programs for the packet replication engine and the v1model externs.

Each function returns a `Program`; its docstring is the P4 it stands for. The STF test next to
each JSON explains the expected packets.
"""

from __future__ import annotations

from jsonbuild import Program, assign, cast, expr, field, hexstr, meta, prim, set_port, valid
from programs_control import ethernet_then, setter
from programs_parser import ethernet


def _instance_type_is(value: int) -> dict:
    return expr("==", meta("instance_type"), hexstr(value, 32))


def _mode_is(value: int) -> dict:
    return expr("==", field("t", "mode"), hexstr(value, 8))


def clone_resubmit() -> Program:
    """header t_h { bit<8> mode; bit<8> itype_in; bit<8> itype_eg; bit<8> meta_copy;
                    bit<8> passes; }
    struct meta_t { @field_list(1) bit<8> m; }
    ingress: hdr.t.passes = hdr.t.passes + 1; hdr.t.itype_in = (bit<8>)smeta.instance_type;
      mode 1: meta.m = 0x5A; egress_spec = 1; clone_preserving_field_list(CloneType.I2E, 5, 1);
      mode 2: if (instance_type == 0) { meta.m = 0x77; resubmit_preserving_field_list(1); }
              else { egress_spec = 2; }
      mode 3: egress_spec = 1;
    egress: hdr.t.meta_copy = meta.m;
      mode 1: hdr.t.itype_eg = (bit<8>)smeta.instance_type;
      mode 3: if (instance_type == 0) { meta.m = 0x33; hdr.t.meta_copy = meta.m;
                  hdr.t.itype_eg = (bit<8>)instance_type;
                  clone_preserving_field_list(CloneType.E2E, 6, 1); }
              else { hdr.t.itype_eg = (bit<8>)instance_type; truncate(19); }
    """
    p = Program("clone_resubmit")
    ethernet_then(p, "t", "t_h", [("mode", 8), ("itype_in", 8), ("itype_eg", 8),
                                  ("meta_copy", 8), ("passes", 8)])
    m = p.scalar("meta_t.m", 8)
    field_list = p.field_list([m])
    itype = cast(meta("instance_type"), 8)
    p.action("count_pass", [
        assign(field("t", "passes"), expr("&", expr("+", field("t", "passes"), hexstr(1, 8)),
                                          hexstr(0xFF, 8))),
        assign(field("t", "itype_in"), itype)])
    p.action("mode1", [assign(m, hexstr(0x5A, 8)), set_port(1),
                       prim("clone_ingress_pkt_to_egress", hexstr(5, 32),
                            {"type": "hexstr", "value": hex(field_list)})])
    p.action("resub", [assign(m, hexstr(0x77, 8)),
                       prim("resubmit", {"type": "hexstr", "value": hex(field_list)})])
    p.action("mode2b", [assign(meta("egress_spec"), hexstr(2, 9))])
    p.action("mode3", [set_port(1)])
    p.conditional("ingress", "node_first", _instance_type_is(0), p.call("ingress", "resub", None),
                  p.call("ingress", "mode2b", None))
    p.conditional("ingress", "node_mode2", _mode_is(2), "node_first",
                  p.call("ingress", "mode3", None))
    p.conditional("ingress", "node_mode1", _mode_is(1), p.call("ingress", "mode1", None),
                  "node_mode2")
    p.start("ingress", p.call("ingress", "count_pass", "node_mode1"))

    p.action("eg_common", [assign(field("t", "meta_copy"), m)])
    p.action("eg_itype", [assign(field("t", "itype_eg"), itype)])
    p.action("e2e", [assign(m, hexstr(0x33, 8)), assign(field("t", "meta_copy"), m),
                     assign(field("t", "itype_eg"), itype),
                     prim("clone_egress_pkt_to_egress", hexstr(6, 32),
                          {"type": "hexstr", "value": hex(field_list)})])
    p.action("trunc", [assign(field("t", "itype_eg"), itype),
                       prim("truncate", hexstr(19, 32))])
    p.conditional("egress", "node_eg3b", _instance_type_is(0), p.call("egress", "e2e", None),
                  p.call("egress", "trunc", None))
    p.conditional("egress", "node_eg3", _mode_is(3), "node_eg3b", None)
    p.conditional("egress", "node_eg1", _mode_is(1), p.call("egress", "eg_itype", None),
                  "node_eg3")
    p.start("egress", p.call("egress", "eg_common", "node_eg1"))
    return p


IPV4_FIELDS = [("version", 4), ("ihl", 4), ("diffserv", 8), ("total_len", 16),
               ("identification", 16), ("flags", 3), ("frag_offset", 13), ("ttl", 8),
               ("protocol", 8), ("hdr_checksum", 16), ("src_addr", 32), ("dst_addr", 32)]


def hash_checksum() -> Program:
    """IPv4 with verify_checksum/update_checksum (csum16, if hdr.ipv4.isValid()), then
    header out_h { bit<16> crc16; bit<32> crc32; bit<16> csum; bit<16> ident; bit<8> err; }
    ingress (when out is valid): ttl = ttl - 1; out.err = (bit<8>)smeta.checksum_error;
      hash(out.crc16, crc16, 16w0x100, {src_addr, dst_addr}, 32w0x1000);
      hash(out.crc32, crc32, 32w0, {src_addr, dst_addr}, 64w0x100000000);
      hash(out.csum, csum16, 16w0, {src_addr, dst_addr}, 32w0x10000);
      hash(out.ident, identity, 16w5, {identification}, 32w0x10000);   egress_spec = 1
    """
    p = Program("hash_checksum")
    ethernet(p)
    p.header_type("ipv4_h", IPV4_FIELDS)
    p.header("ipv4", "ipv4_h")
    p.header_type("out_h", [("crc16", 16), ("crc32", 32), ("csum", 16), ("ident", 16),
                            ("err", 8)])
    p.header("out", "out_h")
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")], [("0x0800", None, "parse_ipv4"), (None, None, None)])
    p.state("parse_ipv4", [prim("extract", {"type": "regular", "value": "ipv4"}),
                           prim("extract", {"type": "regular", "value": "out"})])
    p.deparse("eth", "ipv4", "out")
    header_fields = [field("ipv4", n) for n, _ in IPV4_FIELDS if n != "hdr_checksum"]
    addresses = [field("ipv4", "src_addr"), field("ipv4", "dst_addr")]
    for cid, (name, algo, inputs) in enumerate((
            ("calc", "csum16", header_fields), ("calc_0", "csum16", header_fields),
            ("calc_1", "crc16", addresses), ("calc_2", "crc32", addresses),
            ("calc_3", "csum16", addresses),
            ("calc_4", "identity", [field("ipv4", "identification")]))):
        p.calculations.append({"name": name, "id": cid, "algo": algo, "input": inputs})
    for cid, (name, calc, verify) in enumerate((("cksum", "calc", False),
                                                ("cksum_0", "calc_0", True))):
        p.checksums.append({"name": name, "id": cid, "target": ["ipv4", "hdr_checksum"],
                            "type": "generic", "calculation": calc, "verify": verify,
                            "update": not verify, "if_cond": valid("ipv4")})

    def hashed(dst: str, width: int, base: int, calc: str, size: int) -> dict:
        return prim("modify_field_with_hash_based_offset", field("out", dst),
                    hexstr(base, width), {"type": "calculation", "value": calc},
                    hexstr(size, 64 if size > 0xFFFFFFFF else 32))

    p.action("do_hashes", [
        assign(field("ipv4", "ttl"), expr("&", expr("+", field("ipv4", "ttl"), hexstr(0xFF, 8)),
                                          hexstr(0xFF, 8))),
        assign(field("out", "err"), cast(meta("checksum_error"), 8)),
        hashed("crc16", 16, 0x100, "calc_1", 0x1000),
        hashed("crc32", 32, 0, "calc_2", 0x100000000),
        hashed("csum", 16, 0, "calc_3", 0x10000),
        hashed("ident", 16, 5, "calc_4", 0x10000),
        set_port(1)])
    p.action("just_forward", [set_port(1)])
    p.conditional("ingress", "node_2", valid("out"), p.call("ingress", "do_hashes", None),
                  p.call("ingress", "just_forward", None))
    p.start("ingress", "node_2")
    return p


def meters_counters() -> Program:
    """header k_h { bit<8> idx; bit<8> color; bit<8> r; }
    meter(4, MeterType.packets) m;  counter(4, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets_and_bytes) dc;
    ingress: m.execute_meter(hdr.k.idx, hdr.k.color); c.count(hdr.k.idx);
             log_msg("meter {} gave color {}", {hdr.k.idx, hdr.k.color}); egress_spec = 1;
             t_dc.apply();   // key hdr.k.idx exact, counters = dc, actions = { set_r; NoAction; }
    """
    p = Program("meters_counters")
    ethernet_then(p, "k", "k_h", [("idx", 8), ("color", 8), ("r", 8)])
    p.meter_arrays.append({"name": "Ingress.m", "id": 0, "is_direct": False, "size": 4,
                           "rate_count": 2, "type": "packets"})
    p.counter_arrays.extend([
        {"name": "Ingress.dc", "id": 0, "is_direct": True, "binding": "Ingress.t_dc"},
        {"name": "Ingress.c", "id": 1, "size": 4, "is_direct": False}])
    p.action("NoAction", [])
    setter(p, "Ingress.set_r", ("k", "r"), 8)
    idx = field("k", "idx")
    p.action("meter_and_count", [
        prim("execute_meter", {"type": "meter_array", "value": "Ingress.m"}, idx,
             field("k", "color")),
        prim("count", {"type": "counter_array", "value": "Ingress.c"}, idx),
        prim("log_msg", {"type": "string", "value": "meter {} gave color {}"},
             {"type": "parameters_vector", "value": [idx, field("k", "color")]}),
        set_port(1)])
    p.table("ingress", "Ingress.t_dc", [("hdr.k.idx", "k", "idx", "exact")],
            ["Ingress.set_r", "NoAction"], "NoAction", with_counters=True)
    p.start("ingress", p.call("ingress", "meter_and_count", "Ingress.t_dc"))
    return p


def registers_exit() -> Program:
    """header k_h { bit<8> op; bit<8> idx; bit<32> val; }   headers: eth, k, copy (a k_h)
    register<bit<32>>(8) reg;
    state parse_k { pkt.advance(16); pkt.extract(hdr.k); transition accept; }   // 2 pad bytes
    ingress: reg.read(meta.old, (bit<32>)hdr.k.idx); reg.write((bit<32>)hdr.k.idx, hdr.k.val);
             hdr.k.val = meta.old; smeta.egress_spec = 1;
             if (hdr.k.op == 1) { exit; }
             hdr.copy = hdr.k; hdr.copy.op = 0xCC; hdr.k.idx = hdr.k.idx + 0x10;
    egress:  hdr.eth.src = 0xE;
    """
    p = Program("registers_exit")
    ethernet(p)
    p.header_type("k_h", [("op", 8), ("idx", 8), ("val", 32)])
    p.header("k", "k_h")
    p.header("copy", "k_h")
    old = p.scalar("old", 32)
    p.register_arrays.append({"name": "Ingress.reg", "id": 0, "size": 8, "bitwidth": 32})
    reg = {"type": "register_array", "value": "Ingress.reg"}
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")], [("0x88b6", None, "parse_k"), (None, None, None)])
    p.state("parse_k", [prim("advance", hexstr(16, 32)),
                        prim("extract", {"type": "regular", "value": "k"})])
    p.deparse("eth", "k", "copy")
    p.action("access", [prim("register_read", old, reg, field("k", "idx")),
                        prim("register_write", reg, field("k", "idx"), field("k", "val")),
                        assign(field("k", "val"), old), set_port(1)])
    p.action("leave", [prim("exit")])
    p.action("copy_k", [
        prim("assign_header", {"type": "header", "value": "copy"},
             {"type": "header", "value": "k"}),
        assign(field("copy", "op"), hexstr(0xCC, 8)),
        assign(field("k", "idx"), expr("&", expr("+", field("k", "idx"), hexstr(0x10, 8)),
                                       hexstr(0xFF, 8)))])
    p.action("mark_egress", [assign(field("eth", "src"), hexstr(0xE, 48))])
    p.conditional("ingress", "node_op", expr("==", field("k", "op"), hexstr(1, 8)),
                  p.call("ingress", "leave", None), p.call("ingress", "copy_k", None))
    p.conditional("ingress", "node_k", valid("k"), p.call("ingress", "access", "node_op"), None)
    p.start("ingress", "node_k")
    p.start("egress", p.call("egress", "mark_egress", None))
    return p


def direct_meter() -> Program:
    """header k_h { bit<8> tag; bit<8> dcolor; }
    direct_meter<bit<8>>(MeterType.packets) dm;
    action mark() { dm.read(hdr.k.dcolor); }
    table t_dm { key = { hdr.k.tag: exact; } actions = { mark; NoAction; } meters = dm; }
    ingress: smeta.egress_spec = 1; t_dm.apply();
    (p4c turns dm.read into the meter's result_target; the action body is empty)
    """
    p = Program("direct_meter")
    ethernet_then(p, "k", "k_h", [("tag", 8), ("dcolor", 8)])
    p.meter_arrays.append({"name": "Ingress.dm", "id": 0, "is_direct": True, "rate_count": 2,
                           "type": "packets", "size": 1024, "binding": "Ingress.t_dm",
                           "result_target": ["k", "dcolor"]})
    p.action("NoAction", [])
    p.action("Ingress.mark", [])
    p.action("forward", [set_port(1)])
    p.table("ingress", "Ingress.t_dm", [("hdr.k.tag", "k", "tag", "exact")],
            ["Ingress.mark", "NoAction"], "NoAction", direct_meters="Ingress.dm")
    p.start("ingress", p.call("ingress", "forward", "Ingress.t_dm"))
    return p


def clone_multicast() -> Program:
    """header k_h { bit<8> itype; bit<16> rid; }
    ingress: smeta.egress_spec = 1; clone(CloneType.I2E, 9);   // session 9: a multicast group
    egress:  hdr.k.itype = (bit<8>)smeta.instance_type; hdr.k.rid = smeta.egress_rid;
    """
    p = Program("clone_multicast")
    ethernet_then(p, "k", "k_h", [("itype", 8), ("rid", 16)])
    empty = p.field_list([])        # p4c gives a plain clone() an empty field list
    p.action("forward_and_clone", [set_port(1),
                                   prim("clone_ingress_pkt_to_egress", hexstr(9, 32),
                                        {"type": "hexstr", "value": hex(empty)})])
    p.action("record", [assign(field("k", "itype"), cast(meta("instance_type"), 8)),
                        assign(field("k", "rid"), meta("egress_rid"))])
    p.start("ingress", p.call("ingress", "forward_and_clone", None))
    p.conditional("egress", "node_k", valid("k"), p.call("egress", "record", None), None)
    p.start("egress", "node_k")
    return p


PROGRAMS = [clone_resubmit, hash_checksum, meters_counters, registers_exit, direct_meter,
            clone_multicast]
