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


def _fake_runs(monkeypatch, *results: CaseResult) -> list[dict]:
    """`run_case` answering with `results` in turn; returns the calls' keyword arguments."""
    calls: list[dict] = []
    queue = list(results)

    def fake(case, **kwargs):
        calls.append(kwargs)
        return queue.pop(0)
    monkeypatch.setattr(o, "run_case", fake)
    return calls


def _runtime_result(oracle: bytes) -> CaseResult:
    return _result(p4c_at_bmv2=_out(oracle), p4c_at_inaemu=_out(b"b"),
                   inaemu_at_bmv2=_out(oracle), inaemu_at_inaemu=_out(b"b"))


def test_disagreement_gone_on_fresh_switches_is_stale(monkeypatch):
    calls = _fake_runs(monkeypatch, _runtime_result(b"a"), _runtime_result(b"b"))
    found, _ = o.classify_case(CASE)
    assert [d.kind for d in found] == [o.STALE]
    assert calls[1]["per_packet"] is True


def test_oracle_that_changes_between_runs_is_nondeterministic(monkeypatch):
    """The same JSON and STF give simple_switch another outcome: its egress threads or
    recycled PHVs, not inaemu (F19, F13)."""
    calls = _fake_runs(monkeypatch, _runtime_result(b"a"), _runtime_result(b"a"),
                       _runtime_result(b"c"))
    found, _ = o.classify_case(CASE)
    assert [d.kind for d in found] == [o.NONDETERMINISTIC]
    assert calls[2]["only"] == frozenset({"p4c@bmv2"})
    assert o.NONDETERMINISTIC in o.UNSPECIFIED


def test_oracle_that_repeats_itself_keeps_the_disagreement(monkeypatch):
    _fake_runs(monkeypatch, *[_runtime_result(b"a")] * (2 + o._ORACLE_RERUNS))
    found, _ = o.classify_case(CASE)
    assert [d.kind for d in found] == [o.RUNTIME]
