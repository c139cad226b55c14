"""Switch ports: raw sockets on Linux interfaces, in-process ports, impairments and captures.

Bytes in, bytes out: nothing here knows a P4 program. `Forwarder` is the shared sans-I/O core;
`RawSocketPort` and `InProcessPorts` are its two kinds of wire.
"""

from p4switch.ports.errors import InterfaceError, PcapFormatError, PortConfigError, PortError
from p4switch.ports.forwarding import Forwarder, PortCounters
from p4switch.ports.impairment import DelayLine, ImpairmentPlan, LinkImpairment, PortImpairment
from p4switch.ports.inproc import InProcessPorts
from p4switch.ports.pcap import PcapRecord, PcapWriter, read_pcap

__all__ = [
    "DelayLine", "Forwarder", "ImpairmentPlan", "InProcessPorts", "InterfaceError",
    "LinkImpairment", "PcapFormatError", "PcapRecord", "PcapWriter", "PortConfigError",
    "PortCounters", "PortError", "PortImpairment", "read_pcap",
]
