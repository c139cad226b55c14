"""BMv2's Thrift runtime interface, served by inaemu's switch (`inaemu switch --thrift-port`).

simple_switch_CLI, p4c's BMv2 test harness (bmv2stf.py) and scripts written for simple_switch
drive the switch over it: tables, action profiles, counters, meters, registers, the multicast
engine, clone sessions, queues. `idl` declares the interface, `binary` is Thrift's wire format,
`connection` answers calls sans I/O, `server` moves the bytes, `service` (with `tables`, `pre`
and `simple_switch`) carries the calls out on a `p4switch.runtime.Switch`, `client` is a small
client for tests. docs/thrift.md.
"""

from p4switch.thrift.server import ThriftRuntimeServer, ThriftServerError
from p4switch.thrift.service import RuntimeService

__all__ = ["RuntimeService", "ThriftRuntimeServer", "ThriftServerError"]
