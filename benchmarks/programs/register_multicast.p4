// Benchmark (b): the aggregation hot path. Each packet carries a slot and 32 int32 values;
// ingress adds each value into its register at the slot (read-add-write), writes the running
// sum back into the packet and multicasts it to group 1 (4 ports in the benchmark).
// register_multicast.json is its BMv2 JSON, written by hand in p4c's shape.
#include <core.p4>
#include <v1model.p4>

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
header agg_h {
    bit<32> slot;
    bit<32> v0;
    bit<32> v1;
    bit<32> v2;
    bit<32> v3;
    bit<32> v4;
    bit<32> v5;
    bit<32> v6;
    bit<32> v7;
    bit<32> v8;
    bit<32> v9;
    bit<32> v10;
    bit<32> v11;
    bit<32> v12;
    bit<32> v13;
    bit<32> v14;
    bit<32> v15;
    bit<32> v16;
    bit<32> v17;
    bit<32> v18;
    bit<32> v19;
    bit<32> v20;
    bit<32> v21;
    bit<32> v22;
    bit<32> v23;
    bit<32> v24;
    bit<32> v25;
    bit<32> v26;
    bit<32> v27;
    bit<32> v28;
    bit<32> v29;
    bit<32> v30;
    bit<32> v31;
}
struct headers_t { ethernet_h eth; agg_h agg; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x88B6: parse_agg; default: accept; }
    }
    state parse_agg { pkt.extract(hdr.agg); transition accept; }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control IngressImpl(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t smeta) {
    register<bit<32>>(1024) acc0;
    register<bit<32>>(1024) acc1;
    register<bit<32>>(1024) acc2;
    register<bit<32>>(1024) acc3;
    register<bit<32>>(1024) acc4;
    register<bit<32>>(1024) acc5;
    register<bit<32>>(1024) acc6;
    register<bit<32>>(1024) acc7;
    register<bit<32>>(1024) acc8;
    register<bit<32>>(1024) acc9;
    register<bit<32>>(1024) acc10;
    register<bit<32>>(1024) acc11;
    register<bit<32>>(1024) acc12;
    register<bit<32>>(1024) acc13;
    register<bit<32>>(1024) acc14;
    register<bit<32>>(1024) acc15;
    register<bit<32>>(1024) acc16;
    register<bit<32>>(1024) acc17;
    register<bit<32>>(1024) acc18;
    register<bit<32>>(1024) acc19;
    register<bit<32>>(1024) acc20;
    register<bit<32>>(1024) acc21;
    register<bit<32>>(1024) acc22;
    register<bit<32>>(1024) acc23;
    register<bit<32>>(1024) acc24;
    register<bit<32>>(1024) acc25;
    register<bit<32>>(1024) acc26;
    register<bit<32>>(1024) acc27;
    register<bit<32>>(1024) acc28;
    register<bit<32>>(1024) acc29;
    register<bit<32>>(1024) acc30;
    register<bit<32>>(1024) acc31;
    apply {
        if (hdr.agg.isValid()) {
            bit<32> t0; acc0.read(t0, hdr.agg.slot); t0 = t0 + hdr.agg.v0;
            acc0.write(hdr.agg.slot, t0); hdr.agg.v0 = t0;
            bit<32> t1; acc1.read(t1, hdr.agg.slot); t1 = t1 + hdr.agg.v1;
            acc1.write(hdr.agg.slot, t1); hdr.agg.v1 = t1;
            bit<32> t2; acc2.read(t2, hdr.agg.slot); t2 = t2 + hdr.agg.v2;
            acc2.write(hdr.agg.slot, t2); hdr.agg.v2 = t2;
            bit<32> t3; acc3.read(t3, hdr.agg.slot); t3 = t3 + hdr.agg.v3;
            acc3.write(hdr.agg.slot, t3); hdr.agg.v3 = t3;
            bit<32> t4; acc4.read(t4, hdr.agg.slot); t4 = t4 + hdr.agg.v4;
            acc4.write(hdr.agg.slot, t4); hdr.agg.v4 = t4;
            bit<32> t5; acc5.read(t5, hdr.agg.slot); t5 = t5 + hdr.agg.v5;
            acc5.write(hdr.agg.slot, t5); hdr.agg.v5 = t5;
            bit<32> t6; acc6.read(t6, hdr.agg.slot); t6 = t6 + hdr.agg.v6;
            acc6.write(hdr.agg.slot, t6); hdr.agg.v6 = t6;
            bit<32> t7; acc7.read(t7, hdr.agg.slot); t7 = t7 + hdr.agg.v7;
            acc7.write(hdr.agg.slot, t7); hdr.agg.v7 = t7;
            bit<32> t8; acc8.read(t8, hdr.agg.slot); t8 = t8 + hdr.agg.v8;
            acc8.write(hdr.agg.slot, t8); hdr.agg.v8 = t8;
            bit<32> t9; acc9.read(t9, hdr.agg.slot); t9 = t9 + hdr.agg.v9;
            acc9.write(hdr.agg.slot, t9); hdr.agg.v9 = t9;
            bit<32> t10; acc10.read(t10, hdr.agg.slot); t10 = t10 + hdr.agg.v10;
            acc10.write(hdr.agg.slot, t10); hdr.agg.v10 = t10;
            bit<32> t11; acc11.read(t11, hdr.agg.slot); t11 = t11 + hdr.agg.v11;
            acc11.write(hdr.agg.slot, t11); hdr.agg.v11 = t11;
            bit<32> t12; acc12.read(t12, hdr.agg.slot); t12 = t12 + hdr.agg.v12;
            acc12.write(hdr.agg.slot, t12); hdr.agg.v12 = t12;
            bit<32> t13; acc13.read(t13, hdr.agg.slot); t13 = t13 + hdr.agg.v13;
            acc13.write(hdr.agg.slot, t13); hdr.agg.v13 = t13;
            bit<32> t14; acc14.read(t14, hdr.agg.slot); t14 = t14 + hdr.agg.v14;
            acc14.write(hdr.agg.slot, t14); hdr.agg.v14 = t14;
            bit<32> t15; acc15.read(t15, hdr.agg.slot); t15 = t15 + hdr.agg.v15;
            acc15.write(hdr.agg.slot, t15); hdr.agg.v15 = t15;
            bit<32> t16; acc16.read(t16, hdr.agg.slot); t16 = t16 + hdr.agg.v16;
            acc16.write(hdr.agg.slot, t16); hdr.agg.v16 = t16;
            bit<32> t17; acc17.read(t17, hdr.agg.slot); t17 = t17 + hdr.agg.v17;
            acc17.write(hdr.agg.slot, t17); hdr.agg.v17 = t17;
            bit<32> t18; acc18.read(t18, hdr.agg.slot); t18 = t18 + hdr.agg.v18;
            acc18.write(hdr.agg.slot, t18); hdr.agg.v18 = t18;
            bit<32> t19; acc19.read(t19, hdr.agg.slot); t19 = t19 + hdr.agg.v19;
            acc19.write(hdr.agg.slot, t19); hdr.agg.v19 = t19;
            bit<32> t20; acc20.read(t20, hdr.agg.slot); t20 = t20 + hdr.agg.v20;
            acc20.write(hdr.agg.slot, t20); hdr.agg.v20 = t20;
            bit<32> t21; acc21.read(t21, hdr.agg.slot); t21 = t21 + hdr.agg.v21;
            acc21.write(hdr.agg.slot, t21); hdr.agg.v21 = t21;
            bit<32> t22; acc22.read(t22, hdr.agg.slot); t22 = t22 + hdr.agg.v22;
            acc22.write(hdr.agg.slot, t22); hdr.agg.v22 = t22;
            bit<32> t23; acc23.read(t23, hdr.agg.slot); t23 = t23 + hdr.agg.v23;
            acc23.write(hdr.agg.slot, t23); hdr.agg.v23 = t23;
            bit<32> t24; acc24.read(t24, hdr.agg.slot); t24 = t24 + hdr.agg.v24;
            acc24.write(hdr.agg.slot, t24); hdr.agg.v24 = t24;
            bit<32> t25; acc25.read(t25, hdr.agg.slot); t25 = t25 + hdr.agg.v25;
            acc25.write(hdr.agg.slot, t25); hdr.agg.v25 = t25;
            bit<32> t26; acc26.read(t26, hdr.agg.slot); t26 = t26 + hdr.agg.v26;
            acc26.write(hdr.agg.slot, t26); hdr.agg.v26 = t26;
            bit<32> t27; acc27.read(t27, hdr.agg.slot); t27 = t27 + hdr.agg.v27;
            acc27.write(hdr.agg.slot, t27); hdr.agg.v27 = t27;
            bit<32> t28; acc28.read(t28, hdr.agg.slot); t28 = t28 + hdr.agg.v28;
            acc28.write(hdr.agg.slot, t28); hdr.agg.v28 = t28;
            bit<32> t29; acc29.read(t29, hdr.agg.slot); t29 = t29 + hdr.agg.v29;
            acc29.write(hdr.agg.slot, t29); hdr.agg.v29 = t29;
            bit<32> t30; acc30.read(t30, hdr.agg.slot); t30 = t30 + hdr.agg.v30;
            acc30.write(hdr.agg.slot, t30); hdr.agg.v30 = t30;
            bit<32> t31; acc31.read(t31, hdr.agg.slot); t31 = t31 + hdr.agg.v31;
            acc31.write(hdr.agg.slot, t31); hdr.agg.v31 = t31;
            smeta.mcast_grp = 1;
        } else {
            mark_to_drop(smeta);
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t smeta) { apply { } }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.agg); }
}

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(),
         ComputeImpl(), DeparserImpl()) main;
