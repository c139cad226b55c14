"""Run one STF test on real simple_switch or on inaemu's runtime, and compare the two outcomes.

Both targets are driven by the same `p4switch.stf.runner.StfRunner`, so the STF text is read
identically; what differs is only the switch underneath (`adapter.Bmv2Switch` or
`p4switch.runtime.Switch`). An `Outcome` holds what a caller compares: packets out per port in
order, every counter value the test read (`check_counter`), optionally every register's final
contents, whether the STF expectations held, and a readable report.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from p4switch.stf import StfError, parse_stf, parse_stf_file
from p4switch.stf.commands import StfTest
from p4switch.stf.report import format_report
from p4switch.stf.runner import StfRunner

from .adapter import Bmv2Switch
from .bmv2 import Bmv2Error, SimpleSwitch
from .learning import SETTLE_S, LearnCollector, LearnSubscriber, learn_lists
from .toolchain import Toolchain, find_toolchain


@dataclass
class Outcome:
    target: str                                   # "bmv2" or "inaemu"
    passed: bool = False                          # every expect and check_counter held
    error: str | None = None                      # refused JSON or command: the test did not run
    outputs: dict[int, list[bytes]] = field(default_factory=dict)   # port -> frames, in order
    counter_reads: list[tuple] = field(default_factory=list)  # (what, name, index, pkts, bytes)
    registers: dict[str, list[int]] = field(default_factory=dict)   # final contents (optional)
    aborted: str | None = None                    # a data-plane assert stopped the test
    report: str = ""                              # the STF runner's report, or the error
    seconds: float = 0.0                          # wall time, start and stop included
    packet_logs: list[list[str]] = field(default_factory=list)  # bmv2: debug log per packet
    learned: dict[str, list[str]] = field(default_factory=dict)  # learn list -> samples (hex)


class _Recorder:
    """Passes every call through to the switch and records the counter values read."""

    def __init__(self, switch):
        object.__setattr__(self, "_switch", switch)
        object.__setattr__(self, "reads", [])

    def __getattr__(self, name):
        return getattr(self._switch, name)

    def __setattr__(self, name, value):
        setattr(self._switch, name, value)

    def counter_read(self, name, index):
        packets, nbytes = self._switch.counter_read(name, index)
        self.reads.append(("counter", name, index, packets, nbytes))
        return packets, nbytes

    def direct_counter_read(self, table, handle):
        packets, nbytes = self._switch.direct_counter_read(table, handle)
        self.reads.append(("direct", table, handle, packets, nbytes))
        return packets, nbytes


def load_test(stf: str | Path | StfTest) -> StfTest:
    """An STF test from a parsed test, a file path, or STF text (anything with a newline)."""
    if isinstance(stf, StfTest):
        return stf
    if isinstance(stf, Path) or "\n" not in stf:
        return parse_stf_file(stf)
    return parse_stf(stf)


def _load_doc(program: str | Path | dict) -> dict:
    if isinstance(program, dict):
        return program
    return json.loads(Path(program).read_text())


def _run(target: str, switch, doc: dict, test: StfTest, registers: bool,
         **runner_options) -> Outcome:
    outcome = Outcome(target=target)
    recorder = _Recorder(switch)
    try:
        result = StfRunner(recorder, doc, **runner_options).run(test)
    except (StfError, Bmv2Error) as exc:
        outcome.error = outcome.report = str(exc)
        return outcome
    for out in result.outputs:
        outcome.outputs.setdefault(out.port, []).append(out.data)
    outcome.counter_reads = list(recorder.reads)
    outcome.aborted = result.aborted
    outcome.passed = result.passed
    outcome.report = format_report(result)
    if registers and not result.aborted:
        for name in switch.registers():
            outcome.registers[name] = list(switch.register_read_all(name))
    return outcome


def run_stf_bmv2(program: str | Path, stf: str | Path | StfTest, *,
                 toolchain: Toolchain | None = None, registers: bool = False,
                 packet_timeout_s: float = 10.0) -> Outcome:
    """Runs the test on a fresh real simple_switch loaded with the BMv2 JSON file `program`.

    A JSON that simple_switch refuses gives an Outcome with `error` set to its message.
    """
    start = time.monotonic()
    toolchain = toolchain or find_toolchain()
    if toolchain is None:
        raise FileNotFoundError("the reference toolchain is not installed (/opt/p4ref)")
    test = load_test(stf)
    doc = _load_doc(program)
    try:
        switch = SimpleSwitch(toolchain, program, packet_timeout_s=packet_timeout_s)
    except Bmv2Error as exc:
        return Outcome(target="bmv2", error=str(exc), report=str(exc),
                       seconds=time.monotonic() - start)
    with switch:
        adapter = Bmv2Switch(switch, doc)
        names = learn_lists(doc)
        subscriber = _subscribe(switch, names) if names else None
        outcome = _run("bmv2", adapter, doc, test, registers, make_key=tuple)
        outcome.packet_logs = adapter.packet_logs
        if subscriber is not None:
            time.sleep(SETTLE_S)
            subscriber.close()
            outcome.learned = subscriber.learned
            if subscriber.problem and not outcome.error:
                outcome.error = outcome.report = subscriber.problem
    outcome.seconds = time.monotonic() - start
    return outcome


def run_stf_inaemu(program: str | Path | dict, stf: str | Path | StfTest, *,
                   registers: bool = False) -> Outcome:
    """Runs the test on inaemu's runtime (`p4switch.runtime.Switch`) with the same runner."""
    from p4switch.runtime import Switch
    from p4switch.runtime.errors import P4SwitchError

    start = time.monotonic()
    test = load_test(stf)
    doc = _load_doc(program)
    try:
        switch = Switch(doc)
    except P4SwitchError as exc:
        return Outcome(target="inaemu", error=f"the runtime refused the JSON: {exc}",
                       report=str(exc), seconds=time.monotonic() - start)
    collector = LearnCollector()
    switch.learn_handler = collector.handler
    outcome = _run("inaemu", switch, doc, test, registers)
    outcome.learned = collector.learned
    outcome.seconds = time.monotonic() - start
    return outcome


def _subscribe(switch: SimpleSwitch, names: dict[int, str]) -> LearnSubscriber:
    """Read simple_switch's learning notifications, each list sending every sample at once."""
    from p4switch.thrift.client import RuntimeClient
    with RuntimeClient(port=switch.thrift_port) as client:
        for list_id in names:
            client.call("standard", "bm_learning_set_buffer_size", cxt_id=0, list_id=list_id,
                        nb_samples=1)
    return LearnSubscriber(switch.notifications_address, names)


def compare_outcomes(a: Outcome, b: Outcome) -> list[str]:
    """Every way two outcomes of the same test differ; empty when they agree."""
    diffs = []
    if (a.error is None) != (b.error is None):
        for o in (a, b):
            if o.error:
                diffs.append(f"only {o.target} could not run the test: {o.error.splitlines()[0]}")
        return diffs
    if a.aborted != b.aborted and (a.aborted is None or b.aborted is None):
        diffs.append(f"aborted: {a.target}={bool(a.aborted)} {b.target}={bool(b.aborted)}")
    for port in sorted(set(a.outputs) | set(b.outputs)):
        pa, pb = a.outputs.get(port, []), b.outputs.get(port, [])
        for i in range(max(len(pa), len(pb))):
            fa = pa[i].hex().upper() if i < len(pa) else "(none)"
            fb = pb[i].hex().upper() if i < len(pb) else "(none)"
            if fa != fb:
                diffs.append(f"port {port} packet #{i + 1}:\n  {a.target:6}: {fa}\n"
                             f"  {b.target:6}: {fb}")
    reads_a = [r[3:] for r in a.counter_reads]
    reads_b = [r[3:] for r in b.counter_reads]
    if reads_a != reads_b:
        diffs.append(f"counter reads (packets, bytes): {a.target}={reads_a} "
                     f"{b.target}={reads_b}")
    for name in sorted(set(a.registers) & set(b.registers)):
        if a.registers[name] != b.registers[name]:
            cells = [i for i, (x, y) in enumerate(zip(a.registers[name], b.registers[name]))
                     if x != y]
            diffs.append(f"register {name} differs at indexes {cells[:10]}")
    for name in sorted(set(a.learned) | set(b.learned)):
        la, lb = a.learned.get(name, []), b.learned.get(name, [])
        if la != lb:
            diffs.append(f"digest {name}: {a.target}={la[:6]} {b.target}={lb[:6]}")
    return diffs


def diff_report(a: Outcome, b: Outcome) -> str:
    diffs = compare_outcomes(a, b)
    if not diffs:
        return f"{a.target} and {b.target} agree"
    return f"{a.target} and {b.target} differ:\n" + "\n".join(diffs)
