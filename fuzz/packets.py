"""The packet path: compiled programs on a switch receiving mutated packets on any port.

Four targets share this module: p4src/ina.p4, p4src/l3_forward.p4 and two corpus programs of
tests/p4 (clone.p4: clone/multicast/replication; resubmit_recirculate.p4: more passes). Each is
compiled once and configured with its STF file's control commands (table entries, multicast
groups, mirroring sessions), on two switches: one on the C packet code (the default where a C
compiler is installed) and one on the Python packet code. An input is up to 8 packets, each
`port u8 | length u16 | bytes` (a short last one takes what is left); registers and counters
are reset before each input, so that an input replays the same way alone.

Nothing may come out: a received packet is forwarded, replicated or dropped, never an exception
(`Switch.receive` raises only for a port outside [0, 511], which the harness never sends). The C
and the Python code must send the same packets out of the same ports (a `Finding` if not)."""

from __future__ import annotations

import os

from p4switch.runtime import Switch
from p4switch.stf.parser import parse_stf
from p4switch.stf.runner import StfRunner

from .common import ROOT, Finding, Reader, compiled

PROGRAMS = {
    "packet_ina": ("p4src/ina.p4", "p4src/ina.stf"),
    "packet_l3": ("p4src/l3_forward.p4", "p4src/l3_forward.stf"),
    "packet_clone": ("tests/p4/clone.p4", "tests/p4/clone.stf"),
    "packet_recirc": ("tests/p4/resubmit_recirculate.p4", "tests/p4/resubmit_recirculate.stf"),
}
MAX_PACKETS = 8
_switches: dict[str, tuple[Switch, Switch]] = {}


def _control_commands(stf_path: str) -> str:
    lines = (ROOT / stf_path).read_text().splitlines()
    return "\n".join(ln for ln in lines
                     if ln.split()[:1] not in (["packet"], ["expect"], ["check_counter"]))


def _configured(program: str, stf: str, native: bool) -> Switch:
    bmv2, json_text, _ = compiled(program)
    before = os.environ.get("INAEMU_NATIVE")
    os.environ["INAEMU_NATIVE"] = "1" if native else "0"
    try:
        switch = Switch(json_text)
    finally:
        if before is None:
            del os.environ["INAEMU_NATIVE"]
        else:
            os.environ["INAEMU_NATIVE"] = before
    StfRunner(switch, bmv2).run(parse_stf(_control_commands(stf), stf))
    return switch


def switches(target: str) -> tuple[Switch, Switch]:
    """(C, Python) switches of a target, configured once per process."""
    if target not in _switches:
        program, stf = PROGRAMS[target]
        _switches[target] = (_configured(program, stf, True), _configured(program, stf, False))
    return _switches[target]


def packets_of(data: bytes) -> list[tuple[int, bytes]]:
    reader, packets = Reader(data), []
    while reader.left and len(packets) < MAX_PACKETS:
        port = reader.byte()
        packets.append((port, reader.take(reader.int(2))))
    return packets


def encode_packets(packets) -> bytes:
    """The input that `packets_of` reads back as `packets` (for seeds and tests)."""
    return b"".join(bytes([port]) + len(data).to_bytes(2, "big") + data for port, data in packets)


def run(target: str, data: bytes) -> None:
    native, python = switches(target)
    for switch in (native, python):
        for name in switch.registers():
            switch.register_reset(name)
        for name in switch.counters():
            switch.counter_reset(name)
    for port, packet in packets_of(data):
        out_c = [(p, bytes(d)) for p, d in native.receive(port, packet)]
        out_py = [(p, bytes(d)) for p, d in python.receive(port, packet)]
        if out_c != out_py:
            raise Finding(f"{target}: port {port} packet {packet.hex()}: C code sent {out_c}, "
                          f"Python code sent {out_py}")


def _harness(target: str):
    def TestOneInput(data: bytes) -> None:
        run(target, data)
    TestOneInput.__name__ = f"TestOneInput_{target}"
    return TestOneInput


ina = _harness("packet_ina")
l3 = _harness("packet_l3")
clone = _harness("packet_clone")
recirc = _harness("packet_recirc")
