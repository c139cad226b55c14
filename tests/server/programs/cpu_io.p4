// The program that cpu_io.json and cpu_io.p4info.txtpb were written by hand to describe (they
// are not compiler output). It exercises every entity kind the P4Runtime server handles: a
// CPU port with packet_in/packet_out controller headers, tables of every match kind, a direct
// counter, a direct meter, an action selector, an indexed counter, a meter, a register, a
// table with const entries and a parser value set.
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 64;

@controller_header("packet_out") header packet_out_h { bit<9> egress_port; bit<7> pad; }
@controller_header("packet_in") header packet_in_h { bit<9> ingress_port; bit<7> pad; }
header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }

struct headers_t { packet_out_h packet_out; packet_in_h packet_in; ethernet_h eth; }
struct meta_t { bit<32> color; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t smeta) {
    value_set<bit<16>>(4) special_types;

    state start {
        transition select(smeta.ingress_port) { CPU_PORT: parse_packet_out; default: parse_eth; }
    }
    state parse_packet_out { pkt.extract(hdr.packet_out); transition parse_eth; }
    state parse_eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { special_types: special; default: accept; }
    }
    state special { meta.color = 1; transition accept; }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t smeta) {
    direct_counter(CounterType.packets_and_bytes) fwd_hits;
    direct_meter<bit<32>>(MeterType.packets) routes_meter;
    counter(8, CounterType.packets_and_bytes) port_pkts;
    meter(4, MeterType.bytes) rate;
    register<bit<32>>(8) scratch;
    action_selector(HashAlgorithm.crc16, 16, 14) ecmp_sel;

    action to_port(bit<9> port) { smeta.egress_spec = port; }
    action to_cpu() {
        smeta.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = smeta.ingress_port;
    }
    action drop() { mark_to_drop(smeta); }
    action set_mcast(bit<16> grp) { smeta.mcast_grp = grp; }

    table fwd {
        key = { smeta.ingress_port : exact; }
        actions = { to_port; to_cpu; drop; set_mcast; }
        default_action = drop();
        counters = fwd_hits;
        size = 64;
    }
    table acl {
        key = { hdr.eth.src : ternary; hdr.eth.ether_type : range; hdr.eth.dst : optional; }
        actions = { to_port; drop; NoAction; }
        default_action = NoAction();
    }
    table routes {
        key = { hdr.eth.dst : lpm; }
        actions = { to_port; @defaultonly NoAction; }
        default_action = NoAction();
        meters = routes_meter;
    }
    table ecmp {
        key = { hdr.eth.ether_type : exact; hdr.eth.src : selector; }
        actions = { to_port; NoAction; }
        implementation = ecmp_sel;
    }
    table blocked {
        key = { smeta.ingress_port : exact; }
        actions = { drop; NoAction; }
        const entries = { 9 : drop(); }
        default_action = NoAction();
        size = 4;
    }
    apply {
        port_pkts.count((bit<32>)smeta.ingress_port);
        if (hdr.packet_out.isValid()) {
            smeta.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            fwd.apply();
            acl.apply();
            routes.apply();
            ecmp.apply();
            blocked.apply();
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t smeta) {
    apply { }
}

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.packet_in); pkt.emit(hdr.eth); }
}

V1Switch(ParserImpl(), VerifyImpl(), Ingress(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
