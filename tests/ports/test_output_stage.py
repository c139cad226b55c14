"""The output stage between egress and the port sockets (output.py), sans-I/O: frames wait in
one FIFO for every port, leave from its head only, and a blocked head holds back everything
behind it (simple_switch's single transmit thread); its room is what egress may hand over."""

from __future__ import annotations

import pytest

from p4switch.ports.output import CAPACITY, RUN_LIMIT, OutputStage


def test_an_empty_stage_gives_no_bound_and_a_filled_one_its_free_places():
    stage = OutputStage(capacity=4)
    assert stage.room() is None and stage.head_run() is None
    stage.append(2, [b"a", b"b", b"c"])
    assert stage.room() == 1
    stage.append(2, [b"d", b"e"])          # egress may overshoot a little: never negative
    assert stage.room() == 0 and len(stage) == 5


def test_the_head_run_is_one_ports_consecutive_frames_in_order():
    stage = OutputStage()
    stage.append(2, [b"a", b"b"])
    stage.append(3, [b"x"])
    stage.append(2, [b"c"])
    assert stage.head_run() == (2, [b"a", b"b"])
    stage.taken(2, blocked=False)
    assert stage.head_run() == (3, [b"x"])
    stage.taken(1, blocked=False)
    assert stage.head_run() == (2, [b"c"])
    stage.append(4, [bytes([i]) for i in range(RUN_LIMIT + 5)])
    stage.taken(1, blocked=False)
    port, run = stage.head_run()
    assert port == 4 and len(run) == RUN_LIMIT and run[0] == b"\x00"


def test_a_blocked_head_holds_back_every_port_until_its_socket_is_writable():
    stage = OutputStage()
    stage.append(2, [b"a", b"b", b"c"])
    stage.append(3, [b"x"])
    stage.taken(1, blocked=True)           # port 2 took "a", refused "b"
    assert stage.blocked_port == 2 and stage.head_run() is None
    stage.writable(3)                      # another port's event changes nothing
    assert stage.head_run() is None
    stage.writable(2)
    assert stage.head_run() == (2, [b"b", b"c"])
    assert stage.room() == CAPACITY - 3


def test_discard_forgets_frames_and_the_block():
    stage = OutputStage()
    stage.append(1, [b"a", b"b"])
    stage.taken(0, blocked=True)
    assert stage.discard() == 2
    assert stage.blocked_port is None and stage.room() is None


@pytest.mark.parametrize("capacity", [0, -1, 1.5, True, "8"])
def test_a_bad_capacity_says_what_is_wrong(capacity):
    with pytest.raises(ValueError, match="positive integer"):
        OutputStage(capacity)
