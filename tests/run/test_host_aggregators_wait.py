"""`inaemu run` waits for its host aggregators to bind before the first contribution (a fixed
sleep raced their ~1 s start-up: a contribution sent before the bind was lost and cost its
worker a timer); one that exits first, or never listens, is an error naming its log."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pathlib import Path

from inaemu.experiment.host_aggregators import (LISTENING_LINE, AggregatorNotListening,
                                                wait_until_listening)

ROOT = Path(__file__).resolve().parents[2]


def _start(tmp_path, name: str, script: str) -> tuple[subprocess.Popen, object]:
    log = tmp_path / f"{name}.log"
    with log.open("wb") as handle:
        process = subprocess.Popen([sys.executable, "-c", script], stdout=handle,
                                   stderr=subprocess.STDOUT)
    return process, log


def test_it_returns_once_every_aggregator_listens(tmp_path):
    line = LISTENING_LINE.decode()
    slow = _start(tmp_path, "slow", f"import time; time.sleep(0.4); print({line!r} + ' 1', "
                                    "flush=True); time.sleep(5)")
    fast = _start(tmp_path, "fast", f"print({line!r} + ' 2', flush=True); import time; "
                                    "time.sleep(5)")
    try:
        waited = wait_until_listening([slow[0], fast[0]], [slow[1], fast[1]], timeout_s=20)
        assert waited >= 0.35                      # it waited for the slow one
        assert slow[0].poll() is None and fast[0].poll() is None
    finally:
        for process, _ in (slow, fast):
            process.kill()
            process.wait()


def test_one_that_exits_before_listening_is_named(tmp_path):
    process, log = _start(tmp_path, "bad", "import sys; print('fallback: bad --k', "
                                           "file=sys.stderr); sys.exit(2)")
    with pytest.raises(AggregatorNotListening, match=r"exited with status 2.*bad\.log"):
        wait_until_listening([process], [log], timeout_s=20)


def test_one_that_never_listens_times_out(tmp_path):
    process, log = _start(tmp_path, "mute", "import time; time.sleep(30)")
    try:
        with pytest.raises(AggregatorNotListening, match=r"1 host aggregator\(s\) not listening"):
            wait_until_listening([process], [log], timeout_s=0.3)
    finally:
        process.kill()
        process.wait()


def test_a_real_fallback_udp_is_waited_for(tmp_path):
    """One format: what is waited for is what hosts.fallback_udp prints once it is bound."""
    log = tmp_path / "fallback.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "hosts.fallback_udp", "--job", "1", "--k", "4",
             "--first-slot", "0", "--pool", "8", "--workers", "10.0.0.1,10.0.0.2",
             "--port", "0"], stdout=handle, stderr=subprocess.STDOUT, cwd=str(ROOT))
    try:
        wait_until_listening([process], [log], timeout_s=60)
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "fallback: done:" in log.read_text()      # SIGTERM: it wrote its counters
