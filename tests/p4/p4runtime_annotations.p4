// P4Runtime annotations and types as p4c turns them into P4Info: @pkginfo and @brief on the
// package; @id on match fields, action parameters and packet metadata fields (the others take
// the next free position); @brief/@description as documentation; an action selector's
// @max_group_size/@selector_size_semantics/@max_member_weight as fields; a string annotation
// over several lines (as SAI P4 writes its entry restrictions); a direct counter of a table
// that is never applied (p4c leaves both out) and an action selector no table uses (listed);
// a digest whose fields are an error, an enum, a struct and a header (each described in
// type_info); key names as p4c writes them (a constant in the base it was written in, a
// struct field's @name) and @hidden kept on a match field; packet metadata fields of a struct
// inside the header, named by their paths. On packets: a tag picks the port.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<8> id; bit<8> kind; }
struct pair_t { bit<4> hi; bit<4> lo; }
@controller_header("packet_in")
header packet_in_t { @id(2) bit<9> ingress_port; bit<7> pad; @id(1) bit<16> reason; pair_t pr; }
struct headers_t { packet_in_t cpu; ethernet_t eth; tag_t tag; }
enum Colour { Red, Green }
struct report_t { error parse_error; Colour colour; pair_t pair; tag_t tag; }
struct meta_t { @name(".kind_copy") bit<8> kind; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x88B5: tag; default: accept; }
    }
    state tag { pkt.extract(hdr.tag); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) unused_counter;
    @max_group_size(16) @selector_size_semantics("sum_of_members") @max_member_weight(4)
    action_selector(HashAlgorithm.crc16, 32, 16) spread;
    action_selector(HashAlgorithm.identity, 32w64, 32w8) unused_selector;   // still listed

    @brief("Send out of a port.")
    @description("The port is the action's only parameter.")
    action send(@id(3) @brief("egress port") bit<9> port, bit<8> mark, @id(1) bit<8> kind) {
        sm.egress_spec = port;
        hdr.tag.id = mark;
        hdr.tag.kind = kind;
    }
    @entry_restriction("
      // a comment inside the string is text, not a comment
      id != 0;
    ")
    table by_tag {
        key = {
            hdr.tag.id : exact @id(2);
            hdr.tag.kind : ternary @brief("the tag's kind");
            hdr.eth.src : exact;
            hdr.eth.dst & 0xffff : ternary;
            meta.kind : ternary @hidden;
        }
        actions = { send; NoAction; }
        default_action = send(1, 0, 0);
        const entries = { (7, 0 &&& 0, 0x000000000001, 0 &&& 0, 0 &&& 0) : send(5, 0x70, 0x0F); }
    }
    table spread_table {
        key = { hdr.eth.dst : exact; hdr.eth.src : selector; }
        actions = { send; }
        implementation = spread;
    }
    table never_applied {
        key = { hdr.eth.dst : exact; }
        actions = { NoAction; }
        counters = unused_counter;
    }
    apply {
        if (hdr.tag.isValid()) { by_tag.apply(); } else { spread_table.apply(); }
        if (hdr.tag.isValid() && hdr.tag.kind == 0xDD) {
            digest<report_t>(1, { sm.parser_error, Colour.Green, { 1, 2 }, hdr.tag });
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.cpu); pkt.emit(hdr.eth); pkt.emit(hdr.tag); }
}

@pkginfo(name = "p4runtime_annotations.p4", version = "1.2.3", organization = "inaemu",
         contact = "none", url = "https://example.invalid")
@brief("Annotations P4Runtime reads.")
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
