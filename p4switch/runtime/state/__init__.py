"""The state that generated code works on and the control plane changes: register, counter and
meter arrays and parse value sets (externs), register banks, tables, action profiles, CRC
parameter sets (hashes), multicast groups and mirroring sessions (pre), egress queues.

Imports only the runtime's base modules (errors, keys, config, trace); see docs/runtime.md.
"""
