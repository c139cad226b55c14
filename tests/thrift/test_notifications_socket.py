"""The notifications PUB socket (p4switch/thrift/notifications.py) and the SUB reader the
reference harness uses on simple_switch (p4switch/reference/learning.py), against each other
and against pynng's SUB socket: every subscriber gets every message published after it joined;
a peer that is no SUB socket is dropped without disturbing the others."""

from __future__ import annotations

import socket
import time

import pytest

from p4switch.ports import sp
from p4switch.reference.learning import LearnSubscriber
from p4switch.thrift.learn_engine import LearnEngine
from p4switch.thrift.notifications import NotificationsSocket


def wait_for(predicate, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def publisher(tmp_path):
    pub = NotificationsSocket(f"ipc://{tmp_path}/n.ipc")
    pub.start()
    yield pub
    pub.close()


def buffers(samples: list[bytes]) -> list[bytes]:
    engine = LearnEngine(3, {4: "l"})
    engine.set_max_samples(4, 1)
    return [engine.learn(4, sample, 0.0) for sample in samples]


def test_subscribers_get_what_is_published_after_they_joined(publisher):
    first = LearnSubscriber(publisher.address, {4: "pairs"})
    wrong = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)      # a PAIR socket: refused
    wrong.connect(publisher.address.removeprefix("ipc://"))
    wrong.sendall(sp.greeting(sp.PAIR_V0))
    import pynng
    with pynng.Sub0(recv_timeout=10_000) as nng:
        nng.subscribe(b"LEA|")
        nng.dial(publisher.address, block=True)
        time.sleep(0.2)
        for message in buffers([b"\x01\x02", b"\x03\x04"]):
            publisher.publish(message)
        got = [nng.recv(), nng.recv()]
    assert [m[32:] for m in got] == [b"\x01\x02", b"\x03\x04"]
    assert wait_for(lambda: first.learned == {"pairs": ["0102", "0304"]})
    assert wrong.recv(64)[:4] == b"\x00SP\x00" and wait_for(lambda: wrong.recv(64) == b"")
    first.close()
    wrong.close()
    second = LearnSubscriber(publisher.address, {4: "pairs"})     # after the first left
    publisher.publish(buffers([b"\x05\x06"])[0])
    assert wait_for(lambda: second.learned == {"pairs": ["0506"]})
    second.close()
    assert publisher.published == 3


def test_an_address_in_use_is_refused_with_the_option_named(publisher):
    from p4switch.ports.errors import PortError
    other = NotificationsSocket(publisher.address)
    with pytest.raises(PortError, match="--notifications-addr .*another process listens"):
        other.start()
    other.close()
