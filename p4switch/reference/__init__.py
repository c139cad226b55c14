"""Real p4c and real BMv2 (simple_switch) as an oracle for inaemu, driven from Python.

The whole API (see docs/reference.md):

    from p4switch.reference import (find_toolchain, compile_p4, run_stf_bmv2, run_stf_inaemu,
                                    compare_outcomes, diff_report)

    tc = find_toolchain()            # Toolchain or None ($INAEMU_P4REF, else /opt/p4ref)
    built = compile_p4(tc, "prog.p4", includes=[], defines={"K": "4"}, cache_dir=None)
    # built.ok, built.json_path, built.p4info_path, built.stderr, built.seconds (0 if cached)
    real = run_stf_bmv2(built.json_path, "prog.stf", toolchain=tc, registers=True)
    mine = run_stf_inaemu(json_path_or_dict, "prog.stf", registers=True)
    # Outcome: .passed .error .outputs {port: [bytes]} .counter_reads .registers .aborted
    #          .report .seconds .packet_logs (bmv2: simple_switch's debug lines per packet)
    compare_outcomes(real, mine) -> list[str]      # [] when they agree
    diff_report(real, mine) -> str

`stf` may be a path, STF text, or a parsed `StfTest`. Both targets run the same STF runner
(`p4switch.stf.runner`), so the test is read identically. A JSON simple_switch refuses gives
`Outcome.error` with simple_switch's message; nothing is left running afterwards.
Lower level: `bmv2.SimpleSwitch` (one process: `cli(command)`, `send(port, frame)`) and
`adapter.Bmv2Switch` (the runtime's switch API over it).
"""

from .p4c import CompileResult, compile_p4
from .stf import Outcome, compare_outcomes, diff_report, run_stf_bmv2, run_stf_inaemu
from .toolchain import Toolchain, find_toolchain

__all__ = ["CompileResult", "Outcome", "Toolchain", "compare_outcomes", "compile_p4",
           "diff_report", "find_toolchain", "run_stf_bmv2", "run_stf_inaemu"]
