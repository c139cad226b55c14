"""simple_switch's learning as a Thrift controller sees it (p4switch/thrift/learn_engine.py,
learning.py, notifications.py): learning notifications on the nanomsg PUB socket, read here
by pynng's SUB socket (nnpy's peer in p4-learning's L2 exercise), and the bm_learning_* calls.
The same script runs on `inaemu switch --no-grpc` and, when /opt/p4ref is installed, on real
simple_switch; both must publish the same notifications and answer the same calls."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from p4switch.compiler import compile_source
from p4switch.ports.packetin import HEADER, PACKET_IN
from p4switch.thrift.client import RuntimeCallError
from p4switch.thrift.learn_engine import HEADER as LEA, LearnEngine, UnknownLearnList

from ..server.learning_program import PROGRAM, frame
from .notifying_switch import INAEMU_AS_SIMPLE_SWITCH, REFERENCE, notifying_switch, p4c_json


# (Thrift call and its arguments) or a frame or a pause (s). Times are generous bounds that
# hold on a loaded machine: frames 50 ms apart all within a 1 s buffer timeout, which has passed
# 1.6 s after the first; a call has taken effect when it returns.
SCRIPT = [
    ("bm_learning_set_timeout", {"list_id": 1, "timeout_ms": 1000}),
    frame(1), frame(2), frame(2), frame(3), 1.6,          # one buffer of 3, after the timeout
    frame(1), 0.5,                                        # not acknowledged: filtered
    ("bm_learning_ack_buffer", {"list_id": 1, "buffer_id": 0}), frame(1), 1.6,
    ("bm_learning_set_buffer_size", {"list_id": 1, "nb_samples": 2}),
    frame(4), frame(5), frame(6),                         # 4, 5 at once; 6 waits
    ("bm_learning_set_buffer_size", {"list_id": 1, "nb_samples": 1}),   # 6 goes (if its
    # timeout has not sent it already: the same message either way)
    ("bm_learning_ack", {"list_id": 1, "buffer_id": 2, "sample_ids": [1]}),   # 5 only
    frame(5), frame(4),
    ("bm_learning_ack", {"list_id": 7, "buffer_id": 2, "sample_ids": [1]}),
    ("bm_learning_set_timeout", {"list_id": 9, "timeout_ms": 3}),
]


def sample(src: int) -> str:
    return src.to_bytes(6, "big").hex() + "0001" + "0800"    # src, ingress port 1, EtherType


EXPECTED = [
    ("call", "bm_learning_set_timeout", None),
    ("LEA|", 2, 0, 1, 0, [sample(1), sample(2), sample(3)]),
    ("call", "bm_learning_ack_buffer", None),
    ("LEA|", 2, 0, 1, 1, [sample(1)]),
    ("call", "bm_learning_set_buffer_size", None),
    ("LEA|", 2, 0, 1, 2, [sample(4), sample(5)]),
    ("call", "bm_learning_set_buffer_size", None),
    ("LEA|", 2, 0, 1, 3, [sample(6)]),
    ("call", "bm_learning_ack", None),
    ("LEA|", 2, 0, 1, 4, [sample(5)]),
    ("call", "bm_learning_ack", "InvalidLearnOperation 1"),
    ("call", "bm_learning_set_timeout", "InvalidLearnOperation 1"),
]


def play(command: list[str], program: Path, folder: Path) -> list[tuple]:
    """Run the switch (notifying_switch.py), play SCRIPT; what came: notifications and call
    outcomes, in order."""
    import pynng
    seen: list[tuple] = []
    with notifying_switch(command, program, folder, device_id=2) as (client, sub, pair):

        def drain(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    message = sub.recv()
                except pynng.Timeout:
                    continue
                topic, switch_id, cxt, list_id, buffer_id, count = LEA.unpack_from(message)
                body = message[LEA.size:]
                size = len(body) // count
                seen.append((topic.decode(), switch_id, cxt, list_id, buffer_id,
                             [body[i * size:(i + 1) * size].hex() for i in range(count)]))

        for step in SCRIPT:
            if isinstance(step, bytes):
                pair.send(HEADER.pack(PACKET_IN, 1, len(step)) + step)
                drain(0.05)
            elif isinstance(step, float):
                drain(step)
            else:
                name, args = step
                try:
                    client.call("standard", name, cxt_id=0, **args)
                    seen.append(("call", name, None))
                except RuntimeCallError as error:
                    seen.append(("call", name, f"{error.exception} {error.code}"))
                drain(0.2)
        drain(1.0)
    return seen


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("learning") / "d.json"
    path.write_text(json.dumps(compile_source(PROGRAM, "d.p4").bmv2))
    return path


def test_notifications_and_calls_as_simple_switch_gives_them(program, tmp_path):
    assert play(INAEMU_AS_SIMPLE_SWITCH, program, tmp_path) == EXPECTED


@pytest.mark.skipif(not (REFERENCE / "simple_switch").exists(),
                    reason="reference toolchain (/opt/p4ref) not installed")
def test_simple_switch_gives_the_same_on_p4c_program(tmp_path):
    path = p4c_json(PROGRAM, tmp_path)
    real = play([str(REFERENCE / "simple_switch")], path, tmp_path / "bmv2")
    assert real == EXPECTED
    assert play(INAEMU_AS_SIMPLE_SWITCH, path,
                tmp_path / "inaemu") == real


# -- the engine alone ------------------------------------------------------------------------

def _unpack(message: bytes) -> tuple:
    topic, switch_id, cxt, list_id, buffer_id, count = LEA.unpack_from(message)
    return topic, switch_id, list_id, buffer_id, count, message[LEA.size:]


def test_a_full_buffer_goes_at_once_and_a_timed_one_on_its_deadline():
    engine = LearnEngine(5, {3: "l"})
    engine.set_max_samples(3, 2)
    assert engine.learn(3, b"a", 1.0) is None
    assert engine.next_due() == 2.0
    assert _unpack(engine.learn(3, b"b", 1.5)) == (b"LEA|", 5, 3, 0, 2, b"ab")
    assert engine.learn(3, b"c", 2.0) is None and engine.due(2.9) == []
    (late,) = engine.due(3.0)
    assert _unpack(late)[3:] == (1, 1, b"c")


def test_a_timeout_of_zero_sends_by_size_only():
    engine = LearnEngine(0, {1: "l"})
    engine.set_timeout(1, 0)
    for sample in (b"a", b"b"):
        assert engine.learn(1, sample, 0.0) is None
    assert engine.next_due() is None and engine.due(100.0) == []


def test_samples_are_filtered_until_acknowledged():
    engine = LearnEngine(0, {1: "l"})
    engine.set_max_samples(1, 1)
    engine.learn(1, b"a", 0.0)
    engine.learn(1, b"b", 0.0)
    assert engine.learn(1, b"a", 0.0) is None
    engine.ack(1, 0, [0, 5, -1])                 # ids past the buffer are skipped
    assert engine.learn(1, b"a", 0.0) is not None
    engine.ack_buffer(1, 1)
    assert engine.learn(1, b"b", 0.0) is not None
    engine.ack_buffer(1, 99)                     # unknown: taken as acknowledged already


def test_unknown_lists_are_refused():
    engine = LearnEngine(0, {1: "l"})
    for call in (lambda: engine.learn(2, b"a", 0.0), lambda: engine.ack(2, 0, [0]),
                 lambda: engine.ack_buffer(2, 0), lambda: engine.set_timeout(2, 1),
                 lambda: engine.set_max_samples(2, 1)):
        with pytest.raises(UnknownLearnList):
            call()
