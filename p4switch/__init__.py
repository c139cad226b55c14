"""A BMv2-compatible P4 software switch: a P4_16 front end, a runtime for BMv2 JSON, ports, P4Runtime.

Nothing in this package knows any particular P4 program.
"""
