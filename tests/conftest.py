"""Shared pytest set-up.

Tests marked `root` need network namespaces, veth pairs or Mininet. Outside CI a non-root run skips
them with a reason; under CI (CI=true) they must run, so a missing privilege is a failure, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = PROJECT_ROOT.parent / "shared" / "fixtures"


def is_root() -> bool:
    return os.geteuid() == 0


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("root") and not is_root():
        if os.environ.get("CI"):
            pytest.fail("this test needs root, and CI must run it as root")
        pytest.skip("needs root (network namespaces / Mininet); CI runs it as root")
