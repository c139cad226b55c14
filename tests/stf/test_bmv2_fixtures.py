"""Every BMv2 JSON + STF fixture passes on the runtime: the project's own (tests/bmv2/) and
the ones real p4c produced (/work/shared/fixtures/), the latter run unchanged through the CLI."""

from __future__ import annotations

import json
import sys

import pytest

from p4switch.stf import parse_stf_file
from p4switch.stf.report import format_report
from p4switch.stf.runner import StfRunner
from tests.conftest import PROJECT_ROOT, SHARED_FIXTURES

from .helpers import inaemu_stf

BMV2_DIR = PROJECT_ROOT / "tests" / "bmv2"
OWN_FIXTURES = sorted(d.name for d in BMV2_DIR.iterdir() if (d / f"{d.name}.json").exists())


def test_the_project_carries_its_own_fixtures() -> None:
    assert len(OWN_FIXTURES) >= 10, OWN_FIXTURES
    for name in OWN_FIXTURES:
        stf = (BMV2_DIR / name / f"{name}.stf").read_text()
        assert stf.startswith("# Covers:"), f"{name}.stf should say what it covers"


@pytest.mark.parametrize("name", OWN_FIXTURES)
def test_own_fixture_passes(name: str) -> None:
    from p4switch.runtime import Switch
    config = json.loads((BMV2_DIR / name / f"{name}.json").read_text())
    test = parse_stf_file(BMV2_DIR / name / f"{name}.stf")
    result = StfRunner(Switch(config), config).run(test)
    assert result.passed, format_report(result)
    assert test.expect_count > 0 and len(result.outputs) >= test.expect_count


def test_fixture_json_matches_its_definition() -> None:
    """The committed JSON is what tests/bmv2/make_fixtures.py writes (no stale hand edits)."""
    sys.path.insert(0, str(BMV2_DIR))
    try:
        import make_fixtures
        generated = dict(make_fixtures.all_programs())
    finally:
        sys.path.remove(str(BMV2_DIR))
    assert sorted(generated) == OWN_FIXTURES
    for name, config in generated.items():
        committed = (BMV2_DIR / name / f"{name}.json").read_text()
        assert committed == make_fixtures.render(config), f"{name}.json is stale"


def shared_fixtures() -> list[str]:
    if not SHARED_FIXTURES.is_dir():
        return []
    return sorted(d.name for d in SHARED_FIXTURES.iterdir()
                  if (d / f"{d.name}.json").exists() and (d / f"{d.name}.stf").exists())


def test_shared_fixtures_folder_is_used_when_present() -> None:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_FIXTURES} does not exist on this machine")
    assert shared_fixtures(), f"{SHARED_FIXTURES} has no X/X.json + X/X.stf pairs"


@pytest.mark.parametrize("name", shared_fixtures() or ["(no shared fixtures)"])
def test_real_p4c_json_runs_unchanged(name: str) -> None:
    """The done-criterion: BMv2 JSON produced by real p4c runs unchanged via `inaemu stf`."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"{SHARED_FIXTURES} does not exist on this machine")
    folder = SHARED_FIXTURES / name
    done = inaemu_stf("--json", str(folder / f"{name}.json"), str(folder / f"{name}.stf"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("PASS: ")


def run_text(name: str, text: str):
    from p4switch.runtime import Switch
    from p4switch.stf import parse_stf
    config = json.loads((BMV2_DIR / name / f"{name}.json").read_text())
    return StfRunner(Switch(config), config).run(parse_stf(text, "t.stf"))


def test_remove_all_clears_runtime_entries_but_not_const_ones() -> None:
    result = run_text("hit_miss", """
add t1 hdr.k.a:1 a1()
remove all
packet 0 000000000002 0000000000FF 88B6 01 01 EE EE EE
expect 1 000000000002 0000000000FF 88B6 01 01 22 EE EE $
""")
    assert result.passed, format_report(result)
    result = run_text("const_entries", """
remove all
packet 0 000000000002 0000000000FF 88B6 21 0A010203 EE EE
expect 3 000000000002 0000000000FF 88B6 21 0A010203 DD 10 $
""")
    assert result.passed, format_report(result)
