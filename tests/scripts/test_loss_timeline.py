"""scripts/loss_timeline.py's breakdown: where one worker's time goes, from a hand-made timeline.
QUERYs occupy the uplink for their own (short) frame time, NACK resends for a whole frame."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import PROJECT_ROOT

SPEC = importlib.util.spec_from_file_location("loss_timeline",
                                              PROJECT_ROOT / "scripts" / "loss_timeline.py")
loss_timeline = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("loss_timeline", loss_timeline)
SPEC.loader.exec_module(loss_timeline)


def test_a_lossless_timeline_is_link_limited_then_window_limited() -> None:
    timeline = [(0.0, "send", 0), (1.0, "send", 1), (5.0, "result", 0), (6.0, "result", 1)]
    shares = loss_timeline.breakdown(timeline, 6.0, tx=1.0)
    assert shares["link-limited"] == pytest.approx(2.0)
    assert shares["window-limited"] == pytest.approx(4.0)
    assert shares["waiting for a timer"] == shares["waiting for loss detection"] == 0


def test_queries_are_short_frames_and_nack_resends_whole_ones() -> None:
    # chunk 0 is lost: a QUERY at 3, the NACK's resend at 4, its result at 8
    timeline = [(0.0, "send", 0), (1.0, "send", 1), (3.0, "fast", 0), (4.0, "nack", 0),
                (5.0, "result", 1), (8.0, "result", 0)]
    shares = loss_timeline.breakdown(timeline, 8.0, tx=1.0, fast_tx=0.25)
    assert shares["link-limited"] == pytest.approx(1.0 + 1.0 + 0.25 + 1.0)
    assert sum(shares.values()) == pytest.approx(8.0)
    # idle while chunk 0's copy (2-3) and then its QUERY (3.25-4) waited to be found lost
    assert shares["waiting for loss detection"] == pytest.approx(1.0 + 0.75)
    assert shares["window-limited"] == pytest.approx(3.0)          # the resend's round trip
    values = loss_timeline.breakdown(timeline, 8.0, tx=1.0)        # a values resend at 3
    assert values["link-limited"] == pytest.approx(4.0)
