"""`python -m hosts.bench`: the echo aggregator really completes the calls it times."""

from __future__ import annotations

import pytest

from hosts.bench import echo, main, run_session
from hosts.ina_wire import InaPacket, Kind, decode, encode


def test_echo_answers_a_contribution_as_a_job_of_one() -> None:
    sent = InaPacket(kind=Kind.CONTRIB, job=5, worker=0, slot=3, chunk=9, ver=1, retx=True,
                     values=(1, -2, 3, -4))
    answer = decode(echo(encode(sent)))
    assert (answer.kind, answer.count, answer.ver, answer.retx) == (Kind.RESULT, 1, 1, False)
    assert (answer.job, answer.slot, answer.chunk) == (5, 3, 9)
    assert answer.values.tolist() == [1, -2, 3, -4]


@pytest.mark.parametrize("adaptive", [True, False])
def test_run_session_counts_every_packet_of_every_call(adaptive: bool) -> None:
    wall, packets = run_session(1000, 8, 2, adaptive)
    assert wall > 0
    assert packets == 2 * 2 * (1 + 125)          # MAX round + 125 chunks, each way, per call


def test_main_prints_both_modes(capsys) -> None:
    assert main(["--length", "256", "--calls", "1", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "adaptive" in lines[0] and "fixed" in lines[1]
