"""Classification of the four runs (no toolchain needed: outcomes are built by hand)."""

from __future__ import annotations

from p4switch.difftest import outcome as o
from p4switch.difftest.case import Case
from p4switch.difftest.runner import CaseResult, Compiled
from p4switch.reference import Outcome

CASE = Case(seed=0, source="", stf="")


def _result(p4c_ok=True, ours_ok=True, **runs) -> CaseResult:
    result = CaseResult(CASE, Compiled(p4c_ok, {} if p4c_ok else None, "x.p4(1): error: no"),
                        Compiled(ours_ok, {} if ours_ok else None, "error: no"))
    result.runs = {name.replace("_at_", "@"): out for name, out in runs.items()}
    return result


def _out(*frames: bytes, registers=None, error=None) -> Outcome:
    return Outcome(target="t", outputs={0: list(frames)} if frames else {},
                   registers=registers or {}, error=error)


def test_accept_reject_both_ways_and_agreement():
    assert [d.kind for d in o.classify(_result(ours_ok=False))] == [o.ACCEPT_REJECT]
    assert [d.kind for d in o.classify(_result(p4c_ok=False))] == [o.REJECT_ACCEPT]
    assert o.classify(_result(p4c_ok=False, ours_ok=False)) == []
    same = dict(p4c_at_bmv2=_out(b"a"), p4c_at_inaemu=_out(b"a"), inaemu_at_bmv2=_out(b"a"),
                inaemu_at_inaemu=_out(b"a"))
    assert o.classify(_result(**same)) == []


def test_each_pair_names_its_kind():
    runtime = o.classify(_result(p4c_at_bmv2=_out(b"a"), p4c_at_inaemu=_out(b"b"),
                                 inaemu_at_bmv2=_out(b"a"), inaemu_at_inaemu=_out(b"b")))
    assert [d.kind for d in runtime] == [o.RUNTIME]
    assert "p4c@bmv2" in runtime[0].detail and "p4c@inaemu" in runtime[0].detail
    miscompile = o.classify(_result(p4c_at_bmv2=_out(b"a"), p4c_at_inaemu=_out(b"a"),
                                    inaemu_at_bmv2=_out(b"b"), inaemu_at_inaemu=_out(b"b")))
    assert [d.kind for d in miscompile] == [o.MISCOMPILE]
    compat = o.classify(_result(p4c_at_bmv2=_out(b"a"), p4c_at_inaemu=_out(b"a"),
                                inaemu_at_bmv2=_out(error="refused"),
                                inaemu_at_inaemu=_out(b"a")))
    assert [d.kind for d in compat] == [o.JSON_COMPAT]
    own = o.classify(_result(p4c_at_bmv2=_out(b"a"), p4c_at_inaemu=_out(b"a"),
                             inaemu_at_bmv2=_out(b"a"), inaemu_at_inaemu=_out(b"c")))
    assert [d.kind for d in own] == [o.RUNTIME_OWN_JSON]
    alone = o.classify(_result(p4c_at_inaemu=_out(b"a"), inaemu_at_inaemu=_out(b"c")))
    assert [d.kind for d in alone] == [o.UNRESOLVED]


def test_oracle_that_cannot_run_compares_nothing():
    assert o.classify(_result(p4c_at_bmv2=_out(error="stf"), p4c_at_inaemu=_out(b"a"),
                              inaemu_at_bmv2=_out(b"b"), inaemu_at_inaemu=_out(b"b"))) == []


def test_register_cells_are_compared_as_simple_switch_reads_them():
    wide = {"r": [1 << 63]}
    clamped = {"r": [(1 << 63) - 1]}
    runs = dict(p4c_at_bmv2=_out(b"a", registers=clamped),
                p4c_at_inaemu=_out(b"a", registers=wide),
                inaemu_at_bmv2=_out(b"a", registers=clamped),
                inaemu_at_inaemu=_out(b"a", registers=wide))
    assert o.classify(_result(**runs)) == []
    runs["p4c_at_inaemu"] = _out(b"a", registers={"r": [5]})
    assert [d.kind for d in o.classify(_result(**runs))] == [o.RUNTIME]
