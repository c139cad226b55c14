"""Errors of the port layer: bad port options, unusable interfaces, malformed pcap files.

Each carries a message that says where and why, so the CLI can print it as one line.
"""

from __future__ import annotations


class PortError(Exception):
    """Base of every error raised by `p4switch.ports`."""


class PortConfigError(PortError, ValueError):
    """A port option is malformed or out of range (e.g. `-i x@`, `--loss 1:1.5`)."""


class InterfaceError(PortError, OSError):
    """A Linux interface cannot be opened (unknown name, no permission)."""


class PcapFormatError(PortError, ValueError):
    """A pcap file is truncated or not in libpcap format."""
