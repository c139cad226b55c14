"""Any argument to the control-plane API either works or raises a P4SwitchError (never a
TypeError/KeyError), and a failed call leaves the switch unchanged."""

from __future__ import annotations

import inspect
import random

from p4switch.runtime import ExactKey, P4SwitchError, Switch

from .bmv2 import assign, eth_frame, ethernet_program, param, std

# junk, mixed with values some methods accept, so calls get past their first argument
GARBAGE = [None, -1, 1 << 70, "x", 1.5, [], [1], {}, object(), True,
           "t", "C.r", "C.c", "C.m", "C.v", "fwd", 0, 1, 2, 3, [ExactKey(2)], [3], [(1, 0)],
           [(1e-6, 1), (2e-6, 2)]]


def _switch() -> Switch:
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    fwd = prog.action("C.fwd", [assign(std("egress_spec"), param(0))], [("port", 9)])
    prog.table("C.t", [("exact", ["eth", "dst"])], [fwd], default=(fwd, [1]))
    prog.register("C.r", 4, 8)
    prog.counter("C.c", 4)
    prog.meter("C.m", 4)
    prog.parse_vset("C.v", 8)
    return Switch(prog.build())


def _public_methods(sw: Switch):
    for name, method in inspect.getmembers(sw, inspect.ismethod):
        if name.startswith("_") or name in ("load_config", "receive", "receive_batch",
                                            "from_json_file"):
            continue
        yield name, method


def test_garbage_arguments_raise_only_switch_errors():
    sw = _switch()
    handle = sw.table_add("t", [ExactKey(2)], "fwd", [3])
    for name, method in _public_methods(sw):
        arity = len([p for p in inspect.signature(method).parameters.values()
                     if p.default is inspect.Parameter.empty])
        rng = random.Random(name)
        for _ in range(300):
            args = [rng.choice(GARBAGE) for _ in range(arity)]
            try:
                method(*args)
            except P4SwitchError:
                pass
    # the switch still works after all that
    assert sw.table_find("t", [ExactKey(2)]) in (handle, None)
    assert isinstance(sw.receive(0, eth_frame(dst=3)), list)


def test_receive_checks_port_and_packet_type():
    sw = _switch()
    for port, packet in [(-1, b""), (512, b""), ("1", b""), (1, "abc"), (1, None), (True, b"")]:
        try:
            sw.receive(port, packet)
        except P4SwitchError:
            continue
        raise AssertionError(f"receive({port!r}, {packet!r}) was accepted")
    assert sw.receive_batch([(0, bytearray(eth_frame(dst=2)))]) == sw.receive(0, eth_frame(dst=2))
