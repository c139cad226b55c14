"""p4src/ina.p4's block exponents and packed int16/int8 lanes (docs/formats.md): the generated
STF test (tests/ina/stf_formats.py) is current and passes on inaemu's compiler and runtime.
Real p4c and simple_switch run the same file in tests/reference/test_ina_formats_on_bmv2.py."""

from __future__ import annotations

from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.stf import parse_stf_file
from p4switch.stf.report import format_report
from p4switch.stf.runner import StfRunner

from . import stf_formats


def test_generated_formats_stf_is_current() -> None:
    for path, text in stf_formats.write_all().items():
        assert path.read_text() == text, (
            f"{path.name} differs from what tests/ina/stf_formats.py writes; "
            "run `.venv/bin/python -m tests.ina.stf_formats`")


def test_formats_stf_passes() -> None:
    build = compile_file(str(stf_formats.P4SRC / "ina.p4"),
                         defines={"INA_K": str(stf_formats.K)})
    test = parse_stf_file(str(stf_formats.P4SRC / stf_formats.STF_NAME))
    result = StfRunner(Switch(build.bmv2), build.bmv2).run(test)
    assert result.passed, format_report(result)
    assert test.packet_count > 15
