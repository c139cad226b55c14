"""Every program of the project that has an STF test, for the differential tests against real BMv2.

A case is a P4 program, its STF test and the defines it is compiled with. The known
disagreements below are today's facts, each with the reason found; they are non-strict xfails
so a fix shows up as XPASS instead of breaking the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHARED_FIXTURES = PROJECT_ROOT.parent / "shared" / "fixtures"


@dataclass(frozen=True)
class Case:
    name: str
    program: Path
    stf: Path | None             # None: the STF text comes from `stf_text`
    defines: dict = field(default_factory=dict, hash=False)
    stf_text: str | None = field(default=None, hash=False)

    def test(self):
        return self.stf_text if self.stf_text is not None else self.stf


# real p4c refuses these programs (each reason is p4c's error)
P4C_REJECTS = {
    "compiler/checksum16": "p4c: the deprecated Checksum16 extern is not supported",
    "compiler/entry_priorities": "p4c: a table with 'const' entries cannot have priorities "
                                 "(`priority =` in const entries)",
    "compiler/parser_ifs": "p4c: if statements not supported within a deparser on BMv2",
    "p4/for_in_loops": "p4c: BMv2 does not support for-in loops / iteration over a list",
}
# real p4c compiles these, but its JSON does not do what the P4_16 spec says (the STF does)
P4C_MISCOMPILES = {
    "p4/switch_exit_then_subcontrol": "after a value switch with a case that exits, a "
                                      "sub-control whose headers p4c copies in leaves them "
                                      "invalid in p4c's JSON although the case was not taken "
                                      "(F27)",
    "p4/exit_copy_out_aliased": "after an exit in a sub-control whose headers it copied in (its "
                                "arguments alias), p4c's JSON skips their copy-out (F26)",
    "p4/for_loops": "p4c's BMv2 back end drops the loops: its JSON runs each body once",
    "p4/select_catch_all": "p4c turns a `(_, _)` case before other cases into a `default` "
                           "transition, which BMv2 takes only when nothing else matches",
    "p4/parser_store_before_failed_extract": "p4c merges a parser state into its only "
                                             "predecessor and drops the predecessor's store to "
                                             "a field the merged state writes after its "
                                             "extract, so when that extract fails ingress sees "
                                             "the field's initial 0 (F39)",
}
# real p4c compiles these for BMv2 but cannot describe them to P4Runtime; none today (an
# implementation instantiated in a table property needs @name, which inaemu requires too)
P4INFO_REJECTS: dict[str, str] = {}
# real simple_switch 1.15.5 refuses the JSON that real p4c writes
BMV2_REFUSES_P4C_JSON = {
    "p4/expression_forms_124": "p4c writes a header stack assigned from a stack expression "
                               "(`(e_t[3]){...}`) as assign_header with a list for its source, "
                               "and simple_switch aborts on it (Json::LogicError)",
    "p4/invalid_headers": "p4c writes a header stack assigned from a list (`hdr.s = {{0x44}, "
                          "...}`) as assign_header with a list for its source, and "
                          "simple_switch aborts on it (Json::LogicError)",
    "compiler/dynamic_index": "simple_switch cannot load `hdr.items[i].isValid()` with a "
                              "run-time index i (a field whose header is an expression)",
    "p4/checksum_negative_constant": "p4c writes a negative constant among a checksum's data "
                                     "with a minus sign (`-0x52`), and simple_switch aborts on "
                                     "it (ByteContainer's assertion; F28)",
}
# real simple_switch refuses the JSON inaemu's compiler writes (each reason is simple_switch's
# message); none today
BMV2_REFUSES_INAEMU_JSON: dict[str, str] = {}


def _pairs(folder: Path, prefix: str) -> list[Case]:
    return [Case(f"{prefix}/{p.stem}", p, p.with_suffix(".stf"))
            for p in sorted(folder.glob("*.p4")) if p.with_suffix(".stf").is_file()]


def _ina_cases() -> list[Case]:
    """ina.p4 with the generated STF tests: flat and tree at INA_K=4, flat at the default 32."""
    p4src = PROJECT_ROOT / "p4src"
    program = p4src / "ina.p4"
    cases = [Case("p4src/ina_k4", program, p4src / "ina_k4.stf", {"INA_K": "4"}),
             Case("p4src/ina_k32", program, p4src / "ina.stf", {"INA_K": "32"})]
    # imported as tests.ina (the project root is on the path): an import that fails must fail
    # the collection, not drop the case (it once did, silently, under `from ina import`)
    from tests.ina import stfgen
    tree_k4 = stfgen.tree_test(4)
    cases.insert(1, Case("p4src/ina_tree_k4", program, None, {"INA_K": "4"}, tree_k4))
    return cases


def all_cases() -> list[Case]:
    cases = _pairs(PROJECT_ROOT / "tests" / "p4", "p4")
    cases += _pairs(PROJECT_ROOT / "tests" / "compiler" / "programs", "compiler")
    l3 = PROJECT_ROOT / "p4src" / "l3_forward.p4"
    cases.append(Case("p4src/l3_forward", l3, l3.with_suffix(".stf")))
    cases += _ina_cases()
    if SHARED_FIXTURES.is_dir():
        for folder in sorted(SHARED_FIXTURES.iterdir()):
            p4, stf = folder / f"{folder.name}.p4", folder / f"{folder.name}.stf"
            if p4.is_file() and stf.is_file():
                cases.append(Case(f"shared/{folder.name}", p4, stf))
    return cases
