// resources: the counting externs. A direct counter on a forwarding table (per entry, packets
// and bytes), a direct meter on a second table whose action reads the colour, and indexed
// packet and byte counters. Meters without configured rates mark everything green (0); a miss
// on the metered table leaves the sentinel 3 in place. Counter values are checked by the STF.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ctl_t {
    bit<8> idx;
    bit<8> dmeter_color;   // written: colour from the direct meter, or 3 when not metered
    bit<8> meter_color;    // written: colour from the indexed meter
}

struct headers {
    ethernet_t eth;
    ctl_t      ctl;
}
struct metadata {
    bit<2> dcolor;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_ctl;
            default: accept;
        }
    }
    state parse_ctl {
        pkt.extract(hdr.ctl);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    direct_counter(CounterType.packets_and_bytes) flow_counter;
    direct_meter<bit<2>>(MeterType.packets) flow_meter;
    counter(4, CounterType.packets) idx_counter;
    counter(4, CounterType.bytes) idx_bytes;
    meter(4, MeterType.packets) idx_meter;

    action fwd_counted(bit<9> port) {
        smeta.egress_spec = port;
    }
    table t_count {
        key = { hdr.eth.src : exact; }
        actions = { fwd_counted; NoAction; }
        counters = flow_counter;
        default_action = NoAction();
    }

    action read_meter() {
        flow_meter.read(meta.dcolor);
    }
    table t_meter {
        key = { hdr.ctl.idx : exact; }
        actions = { read_meter; NoAction; }
        meters = flow_meter;
        default_action = NoAction();
    }

    apply {
        t_count.apply();
        if (hdr.ctl.isValid()) {
            idx_counter.count((bit<32>)hdr.ctl.idx);
            idx_bytes.count((bit<32>)hdr.ctl.idx);
            meta.dcolor = 3;
            t_meter.apply();
            hdr.ctl.dmeter_color = (bit<8>)meta.dcolor;
            bit<2> color;
            idx_meter.execute_meter((bit<32>)hdr.ctl.idx, color);
            hdr.ctl.meter_color = (bit<8>)color;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ctl);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
