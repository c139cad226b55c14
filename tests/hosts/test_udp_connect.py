"""The UDP driver connects its socket to the aggregator when every reply comes from there
(docs/hosts.md, session 22: a connected socket sends without a route lookup per datagram, and
the kernel delivers to it by early demux); not when a host aggregator answers some slots."""

from __future__ import annotations

import socket
import threading

import numpy as np

from hosts.ina_session import InaSession
from hosts.udp_driver import UdpInaDriver


def make_driver(aggregator: socket.socket, **options) -> UdpInaDriver:
    session_options = {k: options.pop(k) for k in ("switch_slots",) if k in options}
    # Timers of seconds: on a loaded CI machine a 50 ms one fired a probe (session 36), and a
    # retransmission-free exchange is what the test asserts.
    session = InaSession(job=1, worker=0, n=1, k=8, pool_size=4, window=4, rto=2.0,
                         rto_min=2.0, rto_max=4.0, max_retx=20, **session_options)
    return UdpInaDriver(session, aggregator="127.0.0.1",
                        aggregator_port=aggregator.getsockname()[1],
                        bind_address="127.0.0.1", bind_port=0, **options)


def echo_aggregator() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def test_connected_when_every_slot_is_the_switchs() -> None:
    aggregator = echo_aggregator()
    with make_driver(aggregator) as driver:
        assert driver.connected
        assert driver.sock.getpeername() == aggregator.getsockname()
    aggregator.close()


def test_not_connected_when_a_host_aggregator_answers_some_slots() -> None:
    aggregator = echo_aggregator()
    with make_driver(aggregator, switch_slots=2) as driver:
        assert not driver.connected
    with make_driver(aggregator, connect=False) as driver:
        assert not driver.connected
    aggregator.close()


def answer_as_the_switch(aggregator: socket.socket, stop: threading.Event) -> None:
    """A one-worker job: every MAX_CONTRIB and CONTRIB comes back as its result, a resent one
    too (answering a fixed count let one early probe starve the last chunk), until `stop`."""
    aggregator.settimeout(0.05)
    while not stop.is_set():
        try:
            payload, source = aggregator.recvfrom(65535)
        except TimeoutError:
            continue
        kind = {0: 1, 2: 3}[payload[0]]                  # CONTRIB -> RESULT, MAX -> MAX_RESULT
        reply = bytes((kind, payload[1] & 0x0D)) + payload[2:12] + b"\x00\x01" + payload[14:]
        aggregator.sendto(reply, source)


def test_a_connected_driver_sends_to_the_aggregator_and_takes_its_replies() -> None:
    aggregator = echo_aggregator()
    with make_driver(aggregator) as driver:
        x = np.arange(24, dtype=np.float32)
        stop = threading.Event()
        thread = threading.Thread(target=answer_as_the_switch, args=(aggregator, stop))
        thread.start()
        try:
            result = driver.allreduce(x, timeout=30)
        finally:
            stop.set()
            thread.join(10)
        assert driver.connected and driver.session.counters.retransmissions == 0
        assert np.all(np.abs(result - x) <= driver.session.error_bound())
    aggregator.close()
