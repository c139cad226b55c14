"""A hand-written P4Info shaped like p4src/l3_forward.p4 (plus a ternary table and a register),
so controller tests need neither the compiler nor /work/shared."""

SAMPLE_P4INFO = """
pkg_info { arch: "v1model" }
tables {
  preamble { id: 101 name: "MyIngress.ipv4_lpm" alias: "ipv4_lpm" }
  match_fields { id: 1 name: "hdr.ipv4.dstAddr" bitwidth: 32 match_type: LPM }
  action_refs { id: 201 }
  action_refs { id: 202 }
  size: 1024
}
tables {
  preamble { id: 102 name: "MyIngress.acl" alias: "MyIngress.acl" }
  match_fields { id: 1 name: "hdr.ipv4.srcAddr" bitwidth: 32 match_type: TERNARY }
  match_fields { id: 2 name: "standard_metadata.ingress_port" bitwidth: 9 match_type: EXACT }
  action_refs { id: 202 }
  size: 16
}
tables {
  preamble { id: 103 name: "MyEgress.acl" alias: "MyEgress.acl" }
  match_fields { id: 1 name: "hdr.ipv4.srcAddr" bitwidth: 32 match_type: EXACT }
  action_refs { id: 202 }
  size: 16
}
actions {
  preamble { id: 201 name: "MyIngress.ipv4_forward" alias: "ipv4_forward" }
  params { id: 1 name: "dstAddr" bitwidth: 48 }
  params { id: 2 name: "port" bitwidth: 9 }
}
actions { preamble { id: 202 name: "MyIngress.drop" alias: "drop" } }
counters {
  preamble { id: 301 name: "MyIngress.rx_port_counter" alias: "rx_port_counter" }
  spec { unit: BOTH }
  size: 512
}
registers {
  preamble { id: 401 name: "MyIngress.slots" alias: "slots" }
  type_spec { bitstring { bit { bitwidth: 32 } } }
  size: 8
}
"""
