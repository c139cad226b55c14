// ina: in-network integer aggregation (SwitchML-style) on top of plain IPv4 routing (v1model).
//
// Aggregation packets (UDP to port 48879 at one of this switch's aggregator addresses) are summed
// lane by lane into a pool of register cells; when every worker of a job has contributed to a
// cell, the sum goes back to all of them as a RESULT. Every other packet is routed exactly as
// l3_forward.p4 routes it (the same forwarding.p4inc: LPM routes, ECMP groups, ARP flooding).
// docs/protocol.md is the contract (wire format and algorithm); docs/p4-walkthrough.md explains
// this program piece by piece.
//
// Compile-time constants (-D NAME=VALUE):
//   INA_K      values per packet, a multiple of 4 from 4 to 364 (default 32); 364 fills a
//              1500-byte MTU: IPv4 20 + UDP 8 + INA header 16 + 4 x 364 = 1500 bytes
//   INA_CELLS  aggregator cells in the pool shared by all jobs (default 2048)
//   INA_JOBS   job ids 0..INA_JOBS-1 have their own counter index (default 1024)
//   INA_MEMBERS  members (workers or child switches) one switch aggregates per job: the width
//              of the `ina_seen` bitmap, 8 to 254 (default 64)
#include <core.p4>
#include <v1model.p4>

#ifndef INA_K
#define INA_K 32
#endif
#ifndef INA_CELLS
#define INA_CELLS 2048
#endif
#ifndef INA_JOBS
#define INA_JOBS 1024
#endif
#if INA_K < 4 || INA_K > 364 || INA_K % 4 != 0
#error "INA_K must be a multiple of 4 between 4 and 364"
#endif
#if INA_CELLS < 1
#error "INA_CELLS must be positive"
#endif
#if INA_JOBS < 1 || INA_JOBS > 65535
#error "INA_JOBS must be between 1 and 65535"
#endif
#ifndef INA_MEMBERS
#define INA_MEMBERS 64
#endif
#if INA_MEMBERS < 8 || INA_MEMBERS > 254
#error "INA_MEMBERS must be between 8 and 254"
#endif
typedef bit<INA_MEMBERS> members_t;   // one bit per member of a job at this switch

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_ARP  = 0x0806;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;
const bit<32> NUM_PORTS = 512;

const bit<16> INA_UDP_PORT = 48879;
// UDP length of an aggregation packet: UDP header, aggregation header, k values.
const bit<16> INA_UDP_LENGTH = 8 + 16 + 4 * INA_K;
// UDP length of a QUERY or NACK: no values.
const bit<16> INA_HEADER_UDP_LENGTH = 8 + 16;
const bit<16> INA_IPV4_LENGTH = 20 + INA_UDP_LENGTH;
const bit<8>  INA_CONTRIB     = 0;
const bit<8>  INA_RESULT      = 1;
const bit<8>  INA_MAX_CONTRIB = 2;
const bit<8>  INA_MAX_RESULT  = 3;
const bit<8>  INA_QUERY       = 4;  // "has my chunk's cell everything from me?" (no values)
const bit<8>  INA_NACK        = 5;  // "no: send your contribution again" (no values)
const bit<8>  INA_FLAG_VER    = 1;
// INA_FLAG_RETX: in a CONTRIB or QUERY, a retransmission; in a RESULT (or MAX_RESULT), the
// result waited for a recovery: its cell, at some tier, took a retransmitted piece, or it
// answers a duplicate or a query (docs/protocol.md §1, §3; workers take no RTT sample from it)
const bit<8>  INA_FLAG_RETX   = 2;
// flags bits 2-3: the lane format (docs/formats.md); bit 4: a sub-lane sum of the cell overflowed
const bit<8>  INA_FLAG_FORMAT = 0x0C;
const bit<8>  INA_FORMAT_INT32 = 0x00;  // one value per 32-bit lane, sums wrap (as before)
const bit<8>  INA_FORMAT_INT16 = 0x04;  // two per lane, summed per sub-lane, overflow flagged
const bit<8>  INA_FORMAT_INT8  = 0x08;  // four per lane, likewise (0x0C is refused: bad kind)
const bit<8>  INA_FLAG_OVERFLOW = 0x10;
// INA_FLAG_NEXT (hashed sharing, docs/protocol.md §3.3): in a CONTRIB, claim a cell for this
// slot's next use (chunk + pool_size); in a multicast RESULT, that claim was made
const bit<8>  INA_FLAG_NEXT = 0x20;
// the flag bits a cell keeps (sticky until the first contribution of its next round)
const bit<8>  INA_CELL_FLAGS = INA_FLAG_OVERFLOW | INA_FLAG_RETX;
// pending value of a cell on a non-root switch that is complete locally and waits for the
// parent's RESULT (n <= INA_MEMBERS <= 254, so it is never a count of missing contributions).
const bit<8>  INA_WAIT_PARENT = 0xFF;
// Counter index of packets whose job id is >= INA_JOBS or that are too short to carry one.
const bit<32> INA_OTHER_JOBS = INA_JOBS;
const bit<8>  INA_RESULT_TTL = 64;
// A MAX probe (a MAX_CONTRIB duplicate) at a cell waiting for its parent climbs only from the
// members below this (docs/protocol.md §6): every member probes the MAX round on the same
// schedule (rto_min, doubling), so when each member's climbed, a barrier longer than rto_min
// sent every worker's probe to the root (16,000 at a fat-tree k = 40: its input queue full of
// them for ~17 ms, every first data timer expired behind them; docs/scale.md). Two, not one:
// a second member's probe still climbs when member 0's is lost (with member 0's alone the
// 16-worker fat-tree at 10 % loss took up to 8.3x its lossless time, against 6x; with two,
// whose edge and aggregation switches have two members, it runs as before; docs/loss.md).
const bit<8>  INA_MAX_PROBE_MEMBERS = 2;

// Headers (Ethernet, IPv4, UDP, the aggregation header and its k values) and metadata.
#include "ina_headers.p4inc"

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        // Only unfragmented (or first-fragment) UDP without IP options can aggregate.
        transition select(hdr.ipv4.ihl, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (5, 0, PROTO_UDP): parse_udp;
            (5, 0, PROTO_TCP): parse_tcp;
            default: accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.fwd.l4_src = hdr.tcp.srcPort;
        meta.fwd.l4_dst = hdr.tcp.dstPort;
        transition accept;
    }
    state parse_udp {
        packet.extract(hdr.udp);
        meta.fwd.l4_src = hdr.udp.srcPort;
        meta.fwd.l4_dst = hdr.udp.dstPort;
        transition select(hdr.udp.dstPort) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        // A packet too short for the header stops here with PacketTooShort; ingress sees
        // hdr.ina invalid and counts it as a bad length.
        packet.extract(hdr.ina);
        transition select(hdr.udp.length) {
            INA_UDP_LENGTH: parse_ina_values;
            default: accept;  // wrong length: hdr.vals stays invalid
        }
    }
    state parse_ina_values {
        packet.extract(hdr.vals);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(NUM_PORTS, CounterType.packets_and_bytes) rx_port_counter;

    // ---- aggregation state: cell c of the pool is (ina_value_0[c] .. ina_value_<k-1>[c],
    // ina_seen[c], ina_pending[c]). One register per lane keeps every lane's access a plain
    // index by the cell number (see docs/p4-walkthrough.md, "Why one register per lane").
#define INA_LANE(V, R) register<bit<32>>(INA_CELLS) R;
#include "ina_lanes.p4inc"
#undef INA_LANE
    register<members_t>(INA_CELLS) ina_seen;  // bit w set: worker w's contribution is in
    register<bit<8>>(INA_CELLS)  ina_pending; // contributions still missing; 0 = complete/idle
    // the largest `bmax` of the cell's contributions: the agreed max of the block that
    // next uses the slot (one step ahead, docs/protocol.md §5.2)
    register<bit<16>>(INA_CELLS) ina_bmax;
    // The cell's sticky flags (INA_CELL_FLAGS), until the cell is reused, carried by every
    // RESULT of the cell: INA_FLAG_OVERFLOW if a packed (int16/int8) sum overflowed
    // (docs/formats.md), INA_FLAG_RETX if a piece of it came by a retransmission (§3)
    register<bit<8>>(INA_CELLS)  ina_overflow;
    // Hashed sharing (docs/protocol.md §3.3): the tag (job ++ slot ++ chunk) of the chunk that
    // owns the cell, 0 when free. Cells of static slices never have an owner.
    register<bit<64>>(INA_CELLS) ina_owner;

    // ---- per-job counters (packets), index = job id (INA_OTHER_JOBS for the rest)
    counter(INA_JOBS + 1, CounterType.packets) ina_contributions;
    counter(INA_JOBS + 1, CounterType.packets) ina_duplicates;
    counter(INA_JOBS + 1, CounterType.packets) ina_results_multicast;
    counter(INA_JOBS + 1, CounterType.packets) ina_results_unicast;
    counter(INA_JOBS + 1, CounterType.packets) ina_partials_up;
    counter(INA_JOBS + 1, CounterType.packets) ina_queries;
    counter(INA_JOBS + 1, CounterType.packets) ina_nacks;
    counter(INA_JOBS + 1, CounterType.packets) ina_drop_unknown_job;
    counter(INA_JOBS + 1, CounterType.packets) ina_drop_bad_worker;
    counter(INA_JOBS + 1, CounterType.packets) ina_drop_bad_slot;
    counter(INA_JOBS + 1, CounterType.packets) ina_drop_bad_length;
    counter(INA_JOBS + 1, CounterType.packets) ina_drop_bad_kind;
    counter(INA_JOBS + 1, CounterType.packets) ina_fallbacks;  // to the host aggregator

    // ---- plain routing: drop, ipv4_forward, ecmp_group, ipv4_lpm, ecmp_nhop, flood, arp_flood
#include "forwarding.p4inc"

    // ---- the tables the controller fills for aggregation
    action ina_aggregate_here() { }

    // This switch's aggregator addresses: UDP 48879 to one of them is aggregated here.
    table ina_aggregator_addresses {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { ina_aggregate_here; NoAction; }
        size = 64;
        default_action = NoAction();
    }

    // A job aggregated at the top of its tree (or a flat job): results go to the workers.
    action ina_root_job(bit<32> base, bit<16> pool_size, bit<8> n, bit<16> mgid,
                        bit<16> result_count) {
        meta.ina.base = base;
        meta.ina.pool_size = (bit<32>)pool_size;
        meta.ina.n = n;
        meta.ina.mgid = mgid;
        meta.ina.result_count = result_count;
        meta.ina.parent = 0;
        meta.ina.child_index = 0;
    }

    // A job this switch pre-aggregates for a parent aggregator (docs/protocol.md §6).
    action ina_child_job(bit<32> base, bit<16> pool_size, bit<8> n, bit<16> mgid,
                         bit<16> result_count, ip4Addr_t parent, bit<8> child_index) {
        meta.ina.base = base;
        meta.ina.pool_size = (bit<32>)pool_size;
        meta.ina.n = n;
        meta.ina.mgid = mgid;
        meta.ina.result_count = result_count;
        meta.ina.parent = parent;
        meta.ina.child_index = child_index;
    }

    table ina_jobs {
        key = { hdr.ipv4.dstAddr : exact; hdr.ina.job : exact; }
        actions = { ina_root_job; ina_child_job; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    // Where a unicast RESULT to this worker leaves (its address is set in egress).
    action ina_worker_port(egressSpec_t port) {
        meta.ina.worker_port = port;
        meta.ina.worker_known = 1;
    }

    table ina_workers {
        key = { hdr.ina.job : exact; hdr.ina.worker : exact; }
        actions = { ina_worker_port; NoAction; }
        size = 4096;
        default_action = NoAction();
    }

    // Best effort when the switch is full (docs/fallback.md): a job may hold fewer slots here
    // than its workers use. A contribution or query for a slot >= pool_size goes to the job's
    // host aggregator at (server, port); a RESULT from `server` for such a slot is multicast to
    // the job's workers. Without an entry such a slot is a bad slot, as before.
    action ina_fall_back(ip4Addr_t server, bit<16> port) {
        meta.ina.fallback_known = 1;
        meta.ina.fallback_server = server;
        meta.ina.fallback_port = port;
    }

    // Routed as a plain packet from the aggregator address (a worker's own address as the
    // source would be dropped by a host aggregator on that worker's host: a local source).
    action ina_to_host_aggregator() {
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = meta.ina.fallback_server;
        hdr.udp.dstPort = meta.ina.fallback_port;
        hdr.udp.checksum = 0;
        meta.ina.route = 1;
        ina_fallbacks.count(meta.ina.counter_index);
    }

    table ina_fallback {
        key = { hdr.ina.job : exact; }
        actions = { ina_fall_back; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    // Hashed sharing (docs/protocol.md §3.3): the job's data chunks hash into the shared pool
    // of `pool_pairs` cell pairs from cell `pool_base`, instead of its own slice at `base`
    // (which then holds only its MAX pair).
    action ina_share_pool(bit<32> pool_base, bit<32> pool_pairs) {
        meta.ina.hashed = 1;
        meta.ina.pool_base = pool_base;
        meta.ina.pool_pairs = pool_pairs;
    }

    table ina_sharing {
        key = { hdr.ina.job : exact; }
        actions = { ina_share_pool; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    // ---- per-lane work on cell meta.ina.idx; afterwards the packet carries the cell's values
    // The block max travels like one more lane: written, max-combined and read with the values.
    action ina_overwrite() {
        ina_bmax.write(meta.ina.idx, hdr.ina.bmax);
        ina_overflow.write(meta.ina.idx, hdr.ina.flags & INA_CELL_FLAGS);
#define INA_LANE(V, R) R.write(meta.ina.idx, hdr.vals.V);
#include "ina_lanes.p4inc"
#undef INA_LANE
    }

    // bfloat16 patterns of non-negative numbers: unsigned order is numeric order.
    action ina_bmax_max() {
        bit<16> stored;
        ina_bmax.read(stored, meta.ina.idx);
        hdr.ina.bmax = (stored > hdr.ina.bmax) ? stored : hdr.ina.bmax;
        ina_bmax.write(meta.ina.idx, hdr.ina.bmax);
    }

    // The cell's flags: what it had, what the packet brings (its retx; a child's partial sum's
    // overflow and retx), and whether this packed add overflowed; the packet carries them.
    action ina_overflow_merge() {
        bit<8> stored;
        ina_overflow.read(stored, meta.ina.idx);
        bit<8> seen_now = ((meta.ina.overflow_bits & meta.ina.sign_bits) != 0) ?
                          INA_FLAG_OVERFLOW : 8w0;
        hdr.ina.flags = hdr.ina.flags | stored | seen_now;
        ina_overflow.write(meta.ina.idx, hdr.ina.flags & INA_CELL_FLAGS);
    }

    // int32 lanes: plain sums modulo 2^32 (the hosts' scale keeps them in range).
    action ina_add() {
        ina_bmax_max();
        bit<32> lane;
#define INA_LANE(V, R) R.read(lane, meta.ina.idx); \
        hdr.vals.V = hdr.vals.V + lane; R.write(meta.ina.idx, hdr.vals.V);
#include "ina_lanes.p4inc"
#undef INA_LANE
        ina_overflow_merge();
    }

    // int16/int8 lanes: each 32-bit lane holds 2 or 4 values; one SWAR add sums them without
    // carries crossing sub-lanes (add the bits below each sign bit, then xor the sign bits in),
    // and a sub-lane overflowed where both addends have one sign and the sum the other.
    action ina_add_packed() {
        ina_bmax_max();
        bit<32> lane;
        bit<32> sum;
        bit<32> low_bits = ~meta.ina.sign_bits;
#define INA_LANE(V, R) R.read(lane, meta.ina.idx); \
        sum = ((lane & low_bits) + (hdr.vals.V & low_bits)) ^ \
              ((lane ^ hdr.vals.V) & meta.ina.sign_bits); \
        meta.ina.overflow_bits = meta.ina.overflow_bits | (~(lane ^ hdr.vals.V) & (lane ^ sum)); \
        hdr.vals.V = sum; R.write(meta.ina.idx, sum);
#include "ina_lanes.p4inc"
#undef INA_LANE
        ina_overflow_merge();
    }

    // Unsigned maximum: for non-negative float32 bit patterns it is the numeric maximum.
    action ina_max() {
        ina_bmax_max();
        bit<32> lane;
#define INA_LANE(V, R) R.read(lane, meta.ina.idx); \
        hdr.vals.V = (lane > hdr.vals.V) ? lane : hdr.vals.V; R.write(meta.ina.idx, hdr.vals.V);
#include "ina_lanes.p4inc"
#undef INA_LANE
        ina_overflow_merge();       // the retx bit (no overflow: nothing is added)
    }

    action ina_read() {
        ina_bmax.read(hdr.ina.bmax, meta.ina.idx);
        bit<8> overflow;
        ina_overflow.read(overflow, meta.ina.idx);
        hdr.ina.flags = (hdr.ina.flags & ~INA_FLAG_OVERFLOW) | overflow;   // retx: or-ed
#define INA_LANE(V, R) R.read(hdr.vals.V, meta.ina.idx);
#include "ina_lanes.p4inc"
#undef INA_LANE
    }

    // ---- steps of the algorithm
    // Which counter index the packet counts under, and whether it is a contribution.
    action ina_classify() {
        meta.ina.counter_index = (hdr.ina.isValid() && hdr.ina.job < INA_JOBS) ?
                                 (bit<32>)hdr.ina.job : INA_OTHER_JOBS;
        meta.ina.is_contribution =
            (hdr.ina.kind == INA_CONTRIB || hdr.ina.kind == INA_MAX_CONTRIB) ? 1w1 : 1w0;
        meta.ina.is_query = hdr.ina.kind == INA_QUERY ? 1w1 : 1w0;
        bool header_only = hdr.ina.kind == INA_QUERY || hdr.ina.kind == INA_NACK;
        meta.ina.length_ok = (header_only ? hdr.udp.length == INA_HEADER_UDP_LENGTH :
                              hdr.vals.isValid()) ? 1w1 : 1w0;
        bit<8> format = hdr.ina.flags & INA_FLAG_FORMAT;
        meta.ina.format_ok = (format != INA_FLAG_FORMAT) ? 1w1 : 1w0;
        meta.ina.sign_bits = (format == INA_FORMAT_INT8) ? 32w0x80808080 :
                             ((format == INA_FORMAT_INT16) ? 32w0x80008000 : 32w0x80000000);
    }

    // Cells of slot s (version v) are base + 2s + v; the MAX round uses the pair after the pool.
    // A cell outside the registers (a job the controller placed badly) counts as a bad slot.
    // A hashed job's data chunks use the pair their (job, slot) hashes to in the shared pool
    // (§3.3), its MAX round the pair at `base`.
    action ina_locate() {
        bool max_round = hdr.ina.kind == INA_MAX_CONTRIB || hdr.ina.kind == INA_MAX_RESULT;
        bit<32> slot = max_round ? meta.ina.pool_size : (bit<32>)hdr.ina.slot;
        meta.ina.hashed_data = (meta.ina.hashed == 1 && !max_round) ? 1w1 : 1w0;
        bit<32> own_pair = meta.ina.hashed == 1 ? meta.ina.base : meta.ina.base + (slot << 1);
        bit<32> pair = meta.ina.hashed_data == 1 ? meta.ina.hashed_pair : own_pair;
        bit<32> version = (bit<32>)(hdr.ina.flags & INA_FLAG_VER);
        meta.ina.idx = pair + version;
        meta.ina.other = pair + (version ^ 1);
        meta.ina.worker_bit = (members_t)1 << hdr.ina.worker;
        meta.ina.shadow_bit = meta.ina.hashed_data == 1 ? (members_t)0 : meta.ina.worker_bit;
        meta.ina.tag = hdr.ina.job ++ hdr.ina.slot ++ hdr.ina.chunk;
        meta.ina.wants_next = (hdr.ina.flags & INA_FLAG_NEXT) != 0 ? 1w1 : 1w0;
        meta.ina.slot_ok = ((max_round || slot < meta.ina.pool_size) && pair < INA_CELLS - 1) ?
                           1w1 : 1w0;
    }

    // (job, slot) -> a pair of the shared pool; a pool of 0 pairs leaves it past the registers.
    action ina_hash_slot() {
        bit<32> h;
        hash(h, HashAlgorithm.crc32, (bit<32>)0, { hdr.ina.job, hdr.ina.slot },
             meta.ina.pool_pairs);
        meta.ina.hashed_pair = meta.ina.pool_pairs == 0 ? (bit<32>)INA_CELLS :
                               meta.ina.pool_base + (h << 1);
    }

    action ina_load_owner() {
        ina_owner.read(meta.ina.owner, meta.ina.idx);
    }

    // At the multicast RESULT of (job, slot, chunk) (§3.3): the pair's other cell held this
    // slot's previous use (every worker has its result now) or nothing: release it, and claim
    // it for the slot's next use if the packet asks (`next`); the RESULT says whether it did.
    // A cell held by another (job, slot) is left alone.
    action ina_claim_next() {
        bit<64> held;
        ina_owner.read(held, meta.ina.other);
        bool ours = held == 0 || held[63:32] == meta.ina.tag[63:32];
        bool claim = ours && meta.ina.wants_next == 1;
        bit<64> next_tag = hdr.ina.job ++ hdr.ina.slot ++ (hdr.ina.chunk + meta.ina.pool_size);
        ina_owner.write(meta.ina.other, ours ? (claim ? next_tag : 64w0) : held);
        members_t seen;
        ina_seen.read(seen, meta.ina.other);
        ina_seen.write(meta.ina.other, claim ? (members_t)0 : seen);
        bit<8> pending;
        ina_pending.read(pending, meta.ina.other);
        ina_pending.write(meta.ina.other, claim ? 8w0 : pending);
        hdr.ina.flags = (hdr.ina.flags & ~INA_FLAG_NEXT) | (claim ? INA_FLAG_NEXT : 8w0);
    }

    // A first copy of worker w's contribution: mark it here, and clear w in the shadow cell.
    action ina_mark_seen() {
        ina_seen.write(meta.ina.idx, meta.ina.seen | meta.ina.worker_bit);
        members_t shadow;
        ina_seen.read(shadow, meta.ina.other);
        ina_seen.write(meta.ina.other, shadow & ~meta.ina.shadow_bit);
        ina_contributions.count(meta.ina.counter_index);
    }

    // The packet becomes a RESULT from the aggregator address (egress sets the receiver).
    action ina_as_result() {
        hdr.ina.kind = hdr.ina.kind | INA_RESULT;
        hdr.ina.flags = hdr.ina.flags & (INA_FLAG_VER | INA_FLAG_FORMAT | INA_CELL_FLAGS);
        hdr.ina.pad = 0;
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ipv4.ttl = INA_RESULT_TTL;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.udp.srcPort = INA_UDP_PORT;
        hdr.udp.checksum = 0;
        meta.ina.is_result = 1;
    }

    action ina_multicast_result() {
        ina_as_result();
        standard_metadata.mcast_grp = meta.ina.mgid;
        ina_results_multicast.count(meta.ina.counter_index);
    }

    // An answer to a duplicate or a query: it waited for a recovery (retx).
    action ina_unicast_result() {
        ina_as_result();
        hdr.ina.flags = hdr.ina.flags | INA_FLAG_RETX;
        hdr.ina.count = meta.ina.result_count;
        standard_metadata.egress_spec = meta.ina.worker_port;
        ina_results_unicast.count(meta.ina.counter_index);
    }

    // The cell's sum goes to the parent aggregator as worker child_index's contribution;
    // the routing table takes it from here.
    action ina_send_up() {
        hdr.ina.worker = meta.ina.child_index;
        hdr.ina.count = 0;
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = meta.ina.parent;
        hdr.ipv4.ttl = INA_RESULT_TTL;
        hdr.udp.srcPort = INA_UDP_PORT;
        hdr.udp.checksum = 0;
        meta.ina.route = 1;
        ina_partials_up.count(meta.ina.counter_index);
    }

    // A header-only packet (QUERY, NACK) becomes one that carries the k values.
    action ina_grow() {
        hdr.vals.setValid();
        hdr.udp.length = INA_UDP_LENGTH;
        hdr.ipv4.totalLen = INA_IPV4_LENGTH;
    }

    // A contribution becomes the header-only QUERY about it (the inverse of ina_grow).
    action ina_shrink_to_query() {
        hdr.vals.setInvalid();
        hdr.udp.length = INA_HEADER_UDP_LENGTH;
        hdr.ipv4.totalLen = 20 + INA_HEADER_UDP_LENGTH;
        hdr.ina.kind = INA_QUERY;
        hdr.ina.flags = hdr.ina.flags & ~INA_FLAG_NEXT;
    }

    // QUERY -> NACK back to its sender: this cell lacks the sender's contribution.
    action ina_nack() {
        ina_as_result();
        hdr.ina.flags = hdr.ina.flags & (INA_FLAG_VER | INA_FLAG_FORMAT);
        hdr.ina.count = 0;
        standard_metadata.egress_spec = meta.ina.worker_port;
        ina_nacks.count(meta.ina.counter_index);
    }

    // The query climbs: this switch asks its parent the same question, as worker child_index.
    action ina_query_up() {
        hdr.ina.worker = meta.ina.child_index;
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = meta.ina.parent;
        hdr.ipv4.ttl = INA_RESULT_TTL;
        hdr.udp.srcPort = INA_UDP_PORT;
        hdr.udp.checksum = 0;
        meta.ina.route = 1;
    }

    action ina_drop_duplicate() {
        ina_duplicates.count(meta.ina.counter_index);
        mark_to_drop(standard_metadata);
    }

    action ina_reject_unknown_job() {
        ina_drop_unknown_job.count(meta.ina.counter_index);
        mark_to_drop(standard_metadata);
    }

    action ina_reject_bad_worker() {
        ina_drop_bad_worker.count(meta.ina.counter_index);
        mark_to_drop(standard_metadata);
    }

    action ina_reject_bad_slot() {
        ina_drop_bad_slot.count(meta.ina.counter_index);
        mark_to_drop(standard_metadata);
    }

    action ina_reject_bad_length() {
        ina_drop_bad_length.count(meta.ina.counter_index);
        mark_to_drop(standard_metadata);
    }

    action ina_reject_bad_kind() {
        ina_drop_bad_kind.count(meta.ina.counter_index);
        mark_to_drop(standard_metadata);
    }

    action ina_load_cell() {
        ina_seen.read(meta.ina.seen, meta.ina.idx);
        ina_pending.read(meta.ina.pending, meta.ina.idx);
    }

    apply {
        rx_port_counter.count((bit<32>)standard_metadata.ingress_port);
        if (!hdr.ipv4.isValid()) {
            if (hdr.ethernet.etherType == TYPE_ARP) {
                arp_flood.apply();
            } else {
                drop();
            }
        } else if (standard_metadata.checksum_error == 1) {
            drop();
        } else {
            meta.ina.route = 1;
            if (hdr.udp.isValid() && hdr.udp.dstPort == INA_UDP_PORT) {
                if (ina_aggregator_addresses.apply().hit) {
                    meta.ina.route = 0;
                    ina_classify();
                    // The checks of docs/protocol.md §3, in order.
                    if (!hdr.ina.isValid() || meta.ina.length_ok == 0) {
                        ina_reject_bad_length();
                    } else if (!ina_jobs.apply().hit) {
                        ina_reject_unknown_job();
                    } else if (meta.ina.format_ok == 0) {
                        ina_reject_bad_kind();      // no such lane format
                    } else {
                        ina_workers.apply();
                        ina_fallback.apply();   // the job's host aggregator, if any
                        if (ina_sharing.apply().hit) {
                            ina_hash_slot();    // the shared pool (§3.3)
                        }
                        ina_locate();
                        if (meta.ina.hashed_data == 1 && meta.ina.slot_ok == 1) {
                            ina_load_owner();
                        }
                        if (meta.ina.is_contribution == 1 || meta.ina.is_query == 1) {
                            if (hdr.ina.worker >= meta.ina.n || meta.ina.worker_known == 0) {
                                ina_reject_bad_worker();
                            } else if (meta.ina.slot_ok == 0) {
                                // a data slot this switch does not hold: the job's host
                                // aggregator takes it, if it has one (docs/fallback.md)
                                if (hdr.ina.kind == INA_MAX_CONTRIB || meta.ina.hashed == 1 ||
                                        (bit<32>)hdr.ina.slot < meta.ina.pool_size ||
                                        meta.ina.fallback_known == 0) {
                                    ina_reject_bad_slot();
                                } else {
                                    ina_to_host_aggregator();
                                }
                            } else if (meta.ina.hashed_data == 1 &&
                                       meta.ina.owner != meta.ina.tag) {
                                // a shared cell its chunk does not own (§3.3): the host's
                                if (meta.ina.fallback_known == 0) {
                                    ina_reject_bad_slot();
                                } else {
                                    ina_to_host_aggregator();
                                }
                            } else if (meta.ina.is_query == 1) {
                                // A worker that saw its chunk overdue asks (§4.1).
                                ina_queries.count(meta.ina.counter_index);
                                ina_load_cell();
                                if ((meta.ina.seen & meta.ina.worker_bit) == 0) {
                                    ina_nack();          // its contribution never arrived
                                } else if (meta.ina.pending == 0) {
                                    ina_grow();          // complete: it lost the result
                                    ina_read();
                                    hdr.ina.kind = INA_CONTRIB;   // answered as a duplicate
                                    ina_unicast_result();
                                } else if (meta.ina.pending == INA_WAIT_PARENT &&
                                           hdr.ina.worker == 0) {
                                    ina_query_up();      // ask the parent, member 0's only
                                } else {
                                    drop();              // another member's piece is missing
                                }
                            } else {
                                ina_load_cell();
                                if ((meta.ina.seen & meta.ina.worker_bit) == 0) {
                                    // a first copy: overwrite (first) or combine (later)
                                    ina_mark_seen();
                                    if (meta.ina.pending == 0) {
                                        ina_overwrite();
                                        meta.ina.pending = meta.ina.n - 1;
                                    } else {
                                        if (hdr.ina.kind == INA_MAX_CONTRIB) {
                                            ina_max();
                                        } else if ((hdr.ina.flags & INA_FLAG_FORMAT) ==
                                                   INA_FORMAT_INT32) {
                                            ina_add();
                                        } else {
                                            ina_add_packed();
                                        }
                                        meta.ina.pending = meta.ina.pending - 1;
                                    }
                                    if (meta.ina.pending != 0) {
                                        drop();  // still aggregating
                                    } else if (meta.ina.parent == 0) {
                                        hdr.ina.count = meta.ina.result_count;
                                        ina_multicast_result();
                                        if (meta.ina.hashed_data == 1) {
                                            ina_claim_next();
                                        }
                                    } else {
                                        meta.ina.pending = INA_WAIT_PARENT;
                                        ina_send_up();
                                    }
                                    ina_pending.write(meta.ina.idx, meta.ina.pending);
                                } else {
                                    // a duplicate: the worker retransmitted
                                    ina_duplicates.count(meta.ina.counter_index);
                                    if (meta.ina.pending == 0) {
                                        ina_read();
                                        ina_unicast_result();
                                    } else if (meta.ina.pending == INA_WAIT_PARENT) {
                                        // the retransmission climbs the tree. Values come
                                        // again only from a timer (silence: the last resort;
                                        // early detection sends QUERYs), so any member's do:
                                        // as a QUERY (§6). The parent's NACK pulls this
                                        // cell's sum only if the parent lacks it; climbing
                                        // as the sum, every timer's copy loaded the upper
                                        // links with partial sums the parent already had.
                                        if (hdr.ina.kind == INA_CONTRIB) {
                                            ina_shrink_to_query();
                                            ina_query_up();
                                        } else if (hdr.ina.worker < INA_MAX_PROBE_MEMBERS) {
                                            // the MAX round's, from members 0 and 1 only
                                            // (INA_MAX_PROBE_MEMBERS above: why)
                                            ina_read();
                                            ina_send_up();
                                        } else {
                                            drop();
                                        }
                                    } else {
                                        drop();
                                    }
                                }
                            }
                        } else if (hdr.ina.kind == INA_RESULT &&
                                   meta.ina.fallback_known == 1 &&
                                   hdr.ipv4.srcAddr == meta.ina.fallback_server &&
                                   (meta.ina.hashed_data == 1 ?
                                    (meta.ina.slot_ok == 1 &&
                                     hdr.udp.srcPort == meta.ina.fallback_port) :
                                    (meta.ina.parent == 0 &&
                                     (bit<32>)hdr.ina.slot >= meta.ina.pool_size))) {
                            // the host aggregator's sum of one of its slots (static), or of a
                            // chunk of a hashed job at any tier (§3.3; from this tier's own
                            // host aggregator, address and port): to every member
                            hdr.ina.count = meta.ina.result_count;
                            ina_multicast_result();
                            if (meta.ina.hashed_data == 1) {
                                ina_claim_next();
                            }
                        } else if (meta.ina.parent == 0 || hdr.ina.kind > INA_NACK) {
                            ina_reject_bad_kind();  // results come down only to child switches
                        } else if (meta.ina.slot_ok == 0) {
                            ina_reject_bad_slot();
                        } else if (meta.ina.hashed_data == 1 &&
                                   meta.ina.owner != meta.ina.tag) {
                            // the parent's answer for a chunk this tier's host aggregator
                            // stands in for (§3.3): it goes there
                            if (meta.ina.fallback_known == 0) {
                                ina_drop_duplicate();
                            } else {
                                ina_to_host_aggregator();
                            }
                        } else if (hdr.ina.kind == INA_NACK) {
                            // the parent lacks this switch's partial sum: send it again
                            ina_load_cell();
                            if (meta.ina.pending == INA_WAIT_PARENT) {
                                ina_grow();
                                ina_read();
                                hdr.ina.kind = INA_CONTRIB;
                                hdr.ina.flags = hdr.ina.flags | INA_FLAG_RETX;
                                ina_send_up();
                            } else {
                                ina_drop_duplicate();
                            }
                        } else {
                            // the parent's result for a cell this switch sent up
                            ina_load_cell();
                            if (meta.ina.pending == INA_WAIT_PARENT) {
                                ina_overwrite();
                                ina_pending.write(meta.ina.idx, 0);
                                ina_multicast_result();
                                if (meta.ina.hashed_data == 1) {
                                    ina_claim_next();
                                }
                            } else {
                                ina_drop_duplicate();
                            }
                        }
                    }
                }
            }
            if (meta.ina.route == 1) {
                if (hdr.ipv4.ttl <= 1) {
                    drop();
                } else {
                    switch (ipv4_lpm.apply().action_run) {
                        ecmp_group: { ecmp_nhop.apply(); }
                    }
                }
            }
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    counter(NUM_PORTS, CounterType.packets_and_bytes) tx_port_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    // The receiving worker's own addresses; the source is already the aggregator's.
    action ina_address_result(macAddr_t dstMac, ip4Addr_t dstAddr) {
        hdr.ethernet.dstAddr = dstMac;
        hdr.ipv4.dstAddr = dstAddr;
        hdr.ina.worker = meta.ina.receiver;
    }

    table ina_result_addresses {
        key = { hdr.ina.job : exact; meta.ina.receiver : exact; }
        actions = { ina_address_result; drop; }
        size = 4096;
        default_action = drop();
    }

    apply {
        if (meta.ina.is_result == 1) {
            // A multicast replica's rid names its worker; a unicast result goes to the sender.
            if (standard_metadata.instance_type == 5) {
                meta.ina.receiver = (bit<8>)standard_metadata.egress_rid;
            } else {
                meta.ina.receiver = hdr.ina.worker;
            }
            if (ina_result_addresses.apply().hit) {
                tx_port_counter.count((bit<32>)standard_metadata.egress_port);
            }
        } else if (standard_metadata.instance_type == 5 &&
                   standard_metadata.egress_port == standard_metadata.ingress_port) {
            // A flooded ARP replica never goes back where it came from.
            mark_to_drop(standard_metadata);
        } else {
            tx_port_counter.count((bit<32>)standard_metadata.egress_port);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.ina);
        packet.emit(hdr.vals);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
