"""The BMv2 JSON loader: what `inaemu switch PROG.json` and `inaemu stf --json` accept.

Allowed out: `ConfigError` (the JSON path of the problem and what is wrong). Python packet code
only (a new program per input must not start a C compiler per input); a program that loads
then gets one packet on port 1, which must not raise either."""

from __future__ import annotations

from p4switch.runtime import Switch
from p4switch.runtime.errors import ConfigError

from .common import python_packet_code

PROBE = bytes.fromhex("000000000100000000000011080045000018000100004011"
                      "63d20a0001010a000202deadbeef")


def TestOneInput(data: bytes) -> None:
    try:
        with python_packet_code():
            switch = Switch(data)
    except ConfigError:
        return
    switch.receive(1, PROBE)
