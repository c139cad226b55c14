"""The TLS front's refusal lines are rate-limited (a port scan must not flood stderr) while the
count of refusals, the exit summary's, stays exact."""

from __future__ import annotations

import logging
import re
import socket
import time

import pytest

from p4switch.runtime import Switch
from p4switch.server import ServerTLS
from p4switch.server.refusal_log import RefusalLog

from .helpers import RunningServer
from .tls_certs import make_pki

LOGGER = "p4switch.server.tls_front"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def told_total(messages: list[str]) -> int:
    """Refusals the lines account for: one per refusal line plus each 'N more' line's N."""
    shown = sum(1 for m in messages if m.startswith("P4Runtime TLS: refused "))
    more = sum(int(match.group(1)) for m in messages
               if (match := re.search(r"TLS: (\d+) more connections? refused", m)))
    return shown + more


def test_at_most_n_lines_a_second_then_one_line_with_the_rest(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    clock, scheduled = Clock(), []
    log = RefusalLog(logging.getLogger(LOGGER), per_second=3, clock=clock,
                     schedule=lambda delay, callback: scheduled.append((delay, callback)))
    for n in range(10):
        clock.now = 100.0 + n * 0.05
        log.refused(f"10.0.0.7:{5000 + n}", "it does not speak TLS")
    assert len(lines(caplog)) == 3                   # the rest wait for the window's end
    (delay, callback), = scheduled                   # one flush, at the window's end
    assert delay == pytest.approx(1.0 - 3 * 0.05)     # from the first one held back
    callback()
    assert lines(caplog)[-1].startswith("P4Runtime TLS: 7 more connections refused, not shown")
    clock.now = 101.5                                # a new window: lines again
    log.refused("10.0.0.8:1", "it does not speak TLS")
    assert lines(caplog)[-1] == "P4Runtime TLS: refused 10.0.0.8:1: it does not speak TLS"
    assert told_total(lines(caplog)) == 11 and log.not_shown == 7


def test_without_a_scheduler_the_next_window_or_flush_tells_the_rest(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    clock = Clock()
    log = RefusalLog(logging.getLogger(LOGGER), per_second=2, clock=clock)
    for _ in range(5):
        log.refused("p", "r")
    assert len(lines(caplog)) == 2
    clock.now += 1.0
    log.refused("p", "r")                            # rolls the window: '3 more', then itself
    assert lines(caplog)[-2:] == [
        lines(caplog)[-2], "P4Runtime TLS: refused p: r"]
    assert "3 more connections refused" in lines(caplog)[-2]
    log.flush()                                      # nothing held: nothing said
    assert told_total(lines(caplog)) == 6 and len(lines(caplog)) == 4


def test_per_second_below_one_is_refused():
    with pytest.raises(ValueError, match="per_second: expected at least 1"):
        RefusalLog(logging.getLogger(LOGGER), per_second=0)


def test_a_plaintext_burst_is_counted_exactly_and_logged_in_few_lines(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    pki = make_pki(tmp_path)
    running = RunningServer(Switch(None), tls=ServerTLS(cert=pki.switch.cert,
                                                         key=pki.switch.key))
    server = running.server
    burst = 60
    try:
        host, port = running.address.rsplit(":", 1)
        for _ in range(burst):                       # what a scanner or a plaintext client does
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                sock.recv(64)                        # the front's answer or its close
        deadline = time.monotonic() + 10
        while server.tls_refused < burst and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.tls_refused == burst
    finally:
        running.close()                              # stopping tells what was held back
    messages = lines(caplog)
    assert told_total(messages) == burst
    assert len(messages) < burst / 2, messages
    assert server.tls_refused == burst               # the exit summary's count
