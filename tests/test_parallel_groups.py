"""The units of parallel work tests/conftest.py makes, and that pytest-xdist really follows them:
with pytest 9.2 xdist 3.8's grouping silently did nothing (tests of one module fixture ran on two
workers and failed), so this checks the group is in the test's id where xdist groups."""

from __future__ import annotations

import pytest

HERE = "tests/test_parallel_groups.py"


def test_a_test_file_is_one_unit_of_parallel_work(request) -> None:
    assert [mark.args[0] for mark in request.node.iter_markers("xdist_group")] == [HERE]
    assert request.node.get_closest_marker("slow") is None
    if request.config.getoption("loadgroup", False):    # an xdist worker of a loadgroup run
        assert request.node.nodeid.endswith(f"@{HERE}"), request.node.nodeid


@pytest.mark.root
def test_every_root_test_is_in_the_net_unit_and_slow(request) -> None:
    assert [mark.args[0] for mark in request.node.iter_markers("xdist_group")] == ["net"]
    assert request.node.get_closest_marker("slow") is not None
    if request.config.getoption("loadgroup", False):
        assert request.node.nodeid.endswith("@net"), request.node.nodeid
