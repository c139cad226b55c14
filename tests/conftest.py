"""Shared pytest set-up.

Tests marked `root` need network namespaces, veth pairs or Mininet. Outside CI a non-root run skips
them with a reason; under CI (CI=true) they must run, so a missing privilege is a failure, not a skip.

The suite runs in parallel (pytest-xdist, `--dist loadgroup`: ./bootstrap.sh test). A test file
is one unit of work, so its module fixtures are made once and its tests keep their order. Every
`root` test is in one unit, `net`, run one after another on one worker: Mininet cleans up the
whole machine's switches and links, and the namespace tests share interface names. Everything
else runs beside them; what processes share (compiled programs, translated templates, C
modules) is in disk caches that are safe to fill concurrently.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def load_script(name: str):
    """scripts/<name>.py as a module (the scripts are not a package), for their tests."""
    spec = importlib.util.spec_from_file_location(name, PROJECT_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_p4_program(directory: Path, name: str = "l3_forward.p4") -> Path:
    """p4src's programs and includes copied into `directory`/src (a compile cache test may
    then change a source without touching the project's); the path of `name` there."""
    source = directory / "src"
    source.mkdir()
    for item in (PROJECT_ROOT / "p4src").iterdir():
        if item.suffix in (".p4", ".p4inc"):
            shutil.copy(item, source / item.name)
    return source / name
SHARED_FIXTURES = PROJECT_ROOT.parent / "shared" / "fixtures"


def is_root() -> bool:
    return os.geteuid() == 0


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("root") and not is_root():
        if os.environ.get("CI"):
            pytest.fail("this test needs root, and CI must run it as root")
        pytest.skip("needs root (network namespaces / Mininet); CI runs it as root")


# Whole folders that the quick tier (`./bootstrap.sh test --quick`, `-m "not slow"`) leaves out:
# BMv2 side by side, random differential batches, Mininet and the cluster edition.
SLOW_FOLDERS = ("tests/reference/", "tests/difftest/", "tests/mininet/", "tests/cluster/")


@pytest.hookimpl(tryfirst=True)   # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test file is one unit of parallel work (its module fixtures are made once, and its
    tests run in file order, as they do serially); every root test is in one unit, `net`.
    Root tests and the SLOW_FOLDERS are `slow` as well."""
    for item in items:
        path = item.nodeid.split("::")[0]
        root = item.get_closest_marker("root") is not None
        item.add_marker(pytest.mark.xdist_group("net" if root else path))
        if root or path.startswith(SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)
    if config.getoption("loadgroup", False):     # an xdist worker (bootstrap.sh passes
        items.sort(key=_start_early)             # --no-loadscope-reorder): work in this order


def _start_early(item: pytest.Item) -> int:
    """The longest units first, so that none of them is left to run alone at the end: the
    serial `net` unit (a third of the suite's serial time: most of a two-worker run), the slow
    folders' files (the BMv2 and difftest batches); then the rest in collection order. The
    sort is stable, and every worker sorts alike (xdist checks the collections agree)."""
    if item.get_closest_marker("root") is not None:
        return 0
    return 1 if item.nodeid.startswith(SLOW_FOLDERS) else 2
