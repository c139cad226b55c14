"""In-process ports and the forwarding core: counting, impairments, delay and captures.

The switch here is a test double with the runtime's packet API (`lock`, `receive_batch`): the
port layer must not depend on any program, so its behaviour is checked against a trivial one.
`test_real_runtime_wire` runs the real runtime with tests/ports/wire.json.
"""

from __future__ import annotations

import threading
from pathlib import Path

from p4switch.ports.forwarding import Forwarder
from p4switch.ports.impairment import ImpairmentPlan, LinkImpairment
from p4switch.ports.inproc import InProcessPorts
from p4switch.ports.pcap import read_pcap

CPU_PORT = 64
WIRE_JSON = Path(__file__).with_name("wire.json")


class WireDouble:
    """1 <-> 2, port 3 floods to 1 and 2, port 4 goes to the CPU port; records batches."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.batches: list[list[tuple[int, bytes]]] = []

    def receive_batch(self, items):
        assert self.lock._is_owned(), "the pipeline must run under switch.lock"
        self.batches.append(list(items))
        out = []
        for port, data in items:
            targets = {1: [2], 2: [1], 3: [1, 2], 4: [CPU_PORT]}.get(port, [])
            out.extend((target, data) for target in targets)
        return out


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def frame(i: int) -> bytes:
    return bytes(12) + b"\x88\xb5" + i.to_bytes(4, "big")


def test_forwarding_and_counters():
    ports = InProcessPorts(WireDouble(), [1, 2, 3])
    ports.send(1, frame(1))
    ports.send(3, frame(2))
    assert ports.take(2) == [frame(1), frame(2)]
    assert ports.take(1) == [frame(2)]
    assert ports.take(2) == []
    counters = ports.counters
    assert (counters[1].rx, counters[1].tx) == (1, 1)
    assert (counters[2].rx, counters[2].tx) == (0, 2)
    assert (counters[3].rx, counters[3].tx) == (1, 0)


def test_batch_is_one_pipeline_call_in_order():
    switch = WireDouble()
    ports = InProcessPorts(switch, [1, 2])
    ports.send_many([(1, frame(1)), (2, frame(2)), (1, frame(3))])
    assert switch.batches == [[(1, frame(1)), (2, frame(2)), (1, frame(3))]]
    assert ports.take(2) == [frame(1), frame(3)]


def test_output_to_unbound_port_is_counted_and_dropped():
    ports = InProcessPorts(WireDouble(), [1, 3])
    ports.send(1, frame(1))          # goes to port 2, which is not bound
    assert ports.take_all() == {}
    assert ports.forwarder.unbound == 1


def test_cpu_port_is_a_port_but_never_impaired():
    plan = ImpairmentPlan(default=LinkImpairment(loss=1.0), per_port=((4, LinkImpairment()),))
    ports = InProcessPorts(WireDouble(), [4, CPU_PORT], plan=plan, cpu_port=CPU_PORT)
    ports.send(4, frame(9))
    assert ports.take(CPU_PORT) == [frame(9)]


def _survivors(seed: int, loss: float, n: int) -> list[int]:
    plan = ImpairmentPlan.from_options([str(loss)], None)
    ports = InProcessPorts(WireDouble(), [1, 2], plan=plan, seed=seed)
    for i in range(n):
        ports.send(1, frame(i))
    return [int.from_bytes(data[-4:], "big") for data in ports.take(2)]


def test_loss_is_reproducible_per_seed_and_applies_both_ways():
    n = 4000
    first = _survivors(5, 0.1, n)
    assert first == _survivors(5, 0.1, n)
    assert first != _survivors(6, 0.1, n)
    # ingress and egress each drop ~10%: ~81% survive; 5 sigma of a binomial on 4000 is ~124
    assert abs(len(first) - 0.81 * n) < 130


def test_loss_counters_split_by_direction():
    plan = ImpairmentPlan.from_options(["1:0.5"], None)
    ports = InProcessPorts(WireDouble(), [1, 2], plan=plan, seed=1)
    for i in range(1000):
        ports.send(2, frame(i))     # leaves on port 1: egress loss only
        ports.send(1, frame(i))     # arrives on port 1: ingress loss only
    c1, c2 = ports.counters[1], ports.counters[2]
    assert c1.rx == 1000 and c2.rx == 1000
    assert 400 < c1.rx_lost < 600 and 400 < c1.tx_lost < 600
    assert c2.rx_lost == 0 and c2.tx_lost == 0
    assert c2.tx == 1000 - c1.rx_lost
    assert c1.tx == 1000 - c1.tx_lost


def test_delay_holds_until_due_and_keeps_order():
    clock = FakeClock()
    plan = ImpairmentPlan.from_options(None, ["2:5"])
    ports = InProcessPorts(WireDouble(), [1, 2], plan=plan, clock=clock)
    ports.send(1, frame(1))
    clock.now += 0.001
    ports.send(1, frame(2))
    ports.send(2, frame(3))          # port 1 has no delay
    assert ports.take(1) == [frame(3)]
    assert ports.take(2) == []
    assert ports.next_due() == 100.005
    clock.now = 100.005
    assert ports.poll() == 1
    assert ports.take(2) == [frame(1)]
    clock.now = 100.010
    ports.poll()
    assert ports.take(2) == [frame(2)]
    assert ports.next_due() is None


def test_on_output_callback_receives_departures():
    seen = []
    ports = InProcessPorts(WireDouble(), [1, 2], on_output=lambda p, d: seen.append((p, d)))
    ports.send(2, frame(7))
    assert seen == [(1, frame(7))]


def test_pcaps_show_ingress_losses_but_not_egress_losses(tmp_path):
    plan = ImpairmentPlan.from_options(["1:0.3"], None)
    names = {1: "a", 2: "b"}
    with InProcessPorts(WireDouble(), [1, 2], plan=plan, seed=2, pcap_dir=tmp_path,
                        names=names) as ports:
        for i in range(200):
            ports.send(1, frame(i))
            ports.send(2, frame(1000 + i))
        delivered_on_2 = ports.take(2)
        delivered_on_1 = ports.take(1)
    a_in = [r.data for r in read_pcap(tmp_path / "a_in.pcap")]
    a_out = [r.data for r in read_pcap(tmp_path / "a_out.pcap")]
    b_in = [r.data for r in read_pcap(tmp_path / "b_in.pcap")]
    b_out = [r.data for r in read_pcap(tmp_path / "b_out.pcap")]
    assert a_in == [frame(i) for i in range(200)]          # everything that arrived
    assert b_in == [frame(1000 + i) for i in range(200)]
    assert b_out == delivered_on_2 and len(b_out) < 200     # ingress losses on port 1
    assert a_out == delivered_on_1 and len(a_out) < 200     # egress losses on port 1


def test_forwarder_release_and_discard():
    forwarder = Forwarder(WireDouble(), [1, 2],
                          plan=ImpairmentPlan.from_options(None, ["10"]))
    assert forwarder.forward([(1, frame(1)), (2, frame(2))], now=0.0) == []
    assert forwarder.held == 2
    assert forwarder.release(0.009) == []
    assert forwarder.release(0.010) == [(2, frame(1)), (1, frame(2))]
    forwarder.forward([(1, frame(3))], now=1.0)
    assert forwarder.discard_held() == 1
    lines = forwarder.summary_lines({1: "x", 2: "y"})
    assert lines[0] == "port 1 (x): rx 2 tx 1 lost-in 0 lost-out 0"


def test_real_runtime_wire(tmp_path):
    from p4switch.runtime import Switch

    switch = Switch.from_json_file(str(WIRE_JSON), trace=None)
    plan = ImpairmentPlan.from_options(None, ["1:1"])
    clock = FakeClock()
    with InProcessPorts(switch, [1, 2, 3], plan=plan, clock=clock, pcap_dir=tmp_path) as ports:
        ports.send_many([(1, frame(1)), (2, frame(2)), (3, frame(3))])
        assert ports.take(2) == [frame(1)]
        assert ports.take(1) == []                  # delayed 1 ms on port 1
        clock.now += 0.001
        ports.poll()
        assert ports.take(1) == [frame(2)]
        assert ports.take(3) == []                  # the program drops port 3's packets
    assert [r.data for r in read_pcap(tmp_path / "port3_in.pcap")] == [frame(3)]
    assert read_pcap(tmp_path / "port3_out.pcap") == []
