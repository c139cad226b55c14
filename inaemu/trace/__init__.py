"""Packet-level tracing of aggregation traffic: `inaemu trace RUN_DIR` and its parts.

| module | concept |
|---|---|
| `events.py` | the aggregation header decoded from frame bytes; the event types of a trace |
| `layout.py` | the run-directory layout (where logs and pcaps go); `SwitchRecorder` for virtual time |
| `reader.py` | switch logs + pcaps of a run directory -> one time-ordered event stream |
| `lifecycle.py` | per-slot lifecycle reconstruction over events (sans-I/O) |
| `report.py` | lifecycles and counts as text |
| `plots.py` | slot occupancy timeline, per-link bytes (matplotlib, Agg) |
| `scapy_ina.py` | the Scapy layer `Ina` (imported on demand: Scapy is slow to import) |
| `wireshark.py` | writes `scripts/wireshark/ina.lua` from `hosts/ina_header.py` |
| `cli.py` | the `inaemu trace` subcommand |

The aggregation header itself (kinds, flags, layout) is defined once, in `hosts/ina_header.py`.
See docs/trace.md.
"""
