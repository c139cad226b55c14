"""scripts/bench_hashed_trees.py: a small run reports static and hashed trees finished and
their ratio from that run; `--without` switches the named part off and refuses unknown ones;
`--loss-on` puts the loss on the host links or the switch-to-switch links only."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import PROJECT_ROOT


@pytest.fixture
def script(monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "bench_hashed_trees", PROJECT_ROOT / "scripts" / "bench_hashed_trees.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from hosts import fallback, fallback_node, fallback_tier
    for cls in (fallback.FallbackAggregator, fallback_node.SimFallbackServer,
                fallback_tier.TierAggregator):        # --without patches these: undo after
        monkeypatch.setattr(cls, "__init__", cls.__init__)
    return module


def test_a_small_run_reports_both_modes_and_the_ratio(script, capsys) -> None:
    assert script.main(["--losses", "0,3", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    for loss in ("0", "3"):
        for mode in ("static", "hashed"):
            assert f"| {loss} | {mode} | 1 of 1 |" in out
    assert "loss 3 %: median slowest-worker time hashed / static = " in out


def test_without_switches_a_part_off(script, capsys) -> None:
    from hosts.fallback_tier import TierAggregator
    script.switch_off(["tier-timer"])
    tier = TierAggregator(job=1, n=2, k=4, pool_size=8, parent_member=0)
    assert tier.timer is False
    with pytest.raises(SystemExit, match="no part 'timers'"):
        script.switch_off(["timers"])


@pytest.mark.parametrize("links, lossy", [("host", 6), ("switch", 4), ("all", 0)])
def test_loss_on_the_links_named(script, links, lossy) -> None:
    topo = script.topology(10.0, links)
    assert sum(link.a_to_b.loss_percent == 10.0 and link.b_to_a.loss_percent == 10.0
               for link in topo.links) == lossy        # "all": simulate's loss= sets them
