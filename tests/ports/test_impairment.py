"""The loss and delay model: reproducible for a seed, independent per port and direction."""

from __future__ import annotations

import math

import pytest

from p4switch.ports.errors import PortConfigError
from p4switch.ports.impairment import DelayLine, ImpairmentPlan, LinkImpairment, PortImpairment


def _ingress_pattern(seed: int, port: int, n: int, loss: float = 0.1) -> list[bool]:
    model = PortImpairment(LinkImpairment(loss=loss), seed=seed, port=port)
    return [model.drop_on_ingress() for _ in range(n)]


def test_same_seed_same_losses():
    assert _ingress_pattern(7, 1, 2000) == _ingress_pattern(7, 1, 2000)


def test_seed_port_and_direction_each_change_the_pattern():
    base = _ingress_pattern(7, 1, 2000)
    assert base != _ingress_pattern(8, 1, 2000)
    assert base != _ingress_pattern(7, 2, 2000)
    model = PortImpairment(LinkImpairment(loss=0.1), seed=7, port=1)
    assert base != [model.drop_on_egress() for _ in range(2000)]


def test_directions_do_not_disturb_each_other():
    model = PortImpairment(LinkImpairment(loss=0.1), seed=3, port=4)
    mixed = []
    for _ in range(1000):
        mixed.append(model.drop_on_ingress())
        model.drop_on_egress()
    assert mixed == _ingress_pattern(3, 4, 1000)


@pytest.mark.parametrize("loss", [0.01, 0.1, 0.5])
def test_loss_rate_within_binomial_bound(loss):
    n = 10_000
    for seed in range(3):
        drops = sum(_ingress_pattern(seed, 1, n, loss))
        sigma = math.sqrt(n * loss * (1 - loss))
        assert abs(drops - n * loss) < 5 * sigma, (seed, drops)


def test_zero_and_full_loss_are_exact():
    assert not any(_ingress_pattern(1, 1, 1000, loss=0.0))
    assert all(_ingress_pattern(1, 1, 1000, loss=1.0))


@pytest.mark.parametrize("kwargs", [{"loss": -0.1}, {"loss": 1.5}, {"delay_s": -1.0},
                                    {"delay_s": float("inf")}, {"loss": float("nan")}])
def test_bad_impairments_are_refused(kwargs):
    with pytest.raises(PortConfigError):
        LinkImpairment(**kwargs)


def test_delay_line_releases_in_due_order_and_fifo_on_ties():
    line = DelayLine()
    line.hold(2.0, 1, b"late")
    line.hold(1.0, 2, b"first")
    line.hold(1.0, 3, b"second")
    assert line.next_due() == 1.0
    assert line.release(0.5) == []
    assert line.release(1.0) == [(2, b"first"), (3, b"second")]
    assert line.next_due() == 2.0
    assert line.release(5.0) == [(1, b"late")]
    assert line.next_due() is None and len(line) == 0


def test_plan_from_options_defaults_and_overrides():
    plan = ImpairmentPlan.from_options(["0.2", "3:0.5"], ["1.5", "4:10"])
    assert plan.for_port(1) == LinkImpairment(loss=0.2, delay_s=0.0015)
    assert plan.for_port(3) == LinkImpairment(loss=0.5, delay_s=0.0015)
    assert plan.for_port(4) == LinkImpairment(loss=0.2, delay_s=0.010)
    assert sorted(plan.ports_named()) == [3, 4]


def test_empty_plan_is_null():
    plan = ImpairmentPlan.from_options(None, None)
    assert plan.for_port(9).is_null


@pytest.mark.parametrize("loss, delay, message", [
    (["1.5"], None, r"\[0, 1\]"),
    (["2:-0.1"], None, r"\[0, 1\]"),
    (["x"], None, "not a number"),
    (["a:0.1"], None, "not a port number"),
    (["1:0.1", "1:0.2"], None, "given twice"),
    (["0.1", "0.2"], None, "already given"),
    (None, ["-3"], ">= 0"),
    (None, ["nan"], "finite"),
])
def test_plan_options_errors_name_the_option(loss, delay, message):
    with pytest.raises(PortConfigError, match=message):
        ImpairmentPlan.from_options(loss, delay)
