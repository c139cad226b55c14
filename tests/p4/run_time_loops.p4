// run_time_loops: `for` loops whose bounds come from the packet, in actions and in functions
// (BMv2 runs them with jumps, as p4c writes them): a sum, nested loops, `break`, `continue`, a
// body that steps the loop variable itself, a condition with no loop variable (a function
// counting set bits), and a `return` from inside a loop. The functions are called from an
// action: p4c's JSON for a function called straight from an apply block runs a loop's body
// once (inaemu's runs it as written). Loops with constant bounds are still unrolled; a loop
// written in an apply block must have constant bounds.
#include <core.p4>
#include <v1model.p4>

header job_t {
    bit<8>  op;      // which action the table runs
    bit<8>  n;
    bit<8>  m;
    bit<16> result;  // the action's
    bit<8>  bits;    // set bits of n
    bit<8>  first;   // lowest set bit of m below bit n, 0xFF if none
}

struct headers { job_t j; }
struct metadata { }

bit<8> popcount(in bit<8> v) {
    bit<8> count = 0;
    bit<8> rest = v;
    for (; rest != 0; rest = rest >> 1) {
        count = count + (bit<8>)rest[0:0];
    }
    return count;
}

bit<8> first_set(in bit<8> v, in bit<8> limit) {
    for (bit<8> i = 0; i < limit; i = i + 1) {
        if (((v >> i) & 1) == 1) {
            return i;
        }
    }
    return 0xFF;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.j); transition accept; }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action sum_to() {                    // 1 + 2 + ... + n
        hdr.j.result = 0;
        for (bit<8> i = 1; i <= hdr.j.n; i = i + 1) {
            hdr.j.result = hdr.j.result + (bit<16>)i;
        }
    }
    action product() {                   // n * m by counting
        hdr.j.result = 0;
        for (bit<8> i = 0; i < hdr.j.n; i = i + 1) {
            for (bit<8> k = 0; k < hdr.j.m; k = k + 1) {
                hdr.j.result = hdr.j.result + 1;
            }
        }
    }
    action stop_at_five() {              // min(n, 5), by break
        hdr.j.result = 0;
        for (bit<8> i = 0; i < hdr.j.n; i = i + 1) {
            if (i == 5) {
                break;
            }
            hdr.j.result = hdr.j.result + 1;
        }
    }
    action odd_below() {                 // how many odd numbers are below n, by continue
        hdr.j.result = 0;
        for (bit<8> i = 0; i < hdr.j.n; i = i + 1) {
            if (i[0:0] == 0) {
                continue;
            }
            hdr.j.result = hdr.j.result + 1;
        }
    }
    action by_twos() {                   // the body steps i too: iterations of i = 0, 3, 6, ...
        hdr.j.result = 0;
        for (bit<8> i = 0; i < hdr.j.n; i = i + 1) {
            i = i + 2;
            hdr.j.result = hdr.j.result + 1;
        }
    }
    table pick {
        key = { hdr.j.op : exact; }
        actions = { sum_to; product; stop_at_five; odd_below; by_twos; NoAction; }
        const entries = {
            1 : sum_to();
            2 : product();
            3 : stop_at_five();
            4 : odd_below();
            5 : by_twos();
        }
        default_action = NoAction();
    }
    action summary() {
        hdr.j.bits = popcount(hdr.j.n);
        hdr.j.first = first_set(hdr.j.m, hdr.j.n);
    }
    apply {
        pick.apply();
        summary();
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.j); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
