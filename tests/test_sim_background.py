"""Background traffic (inaemu/sim/background.py) through a simulated switch running
l3_forward.p4, routed by the controller (inaemu.sim.setup.prepare without jobs): every bound
below is computed from the link rate and the frame sizes, in virtual time."""

from __future__ import annotations

import pytest

from inaemu.sim.background import BulkFlow, Incast, UdpFlow
from inaemu.sim.frames import HEADERS_TCP, HEADERS_UDP, PROTO_TCP
from inaemu.sim.network import SimNetwork
from inaemu.sim.setup import prepare
from topologies.builders import star

BW = 100                                        # Mbit/s, every link direction
TOPOLOGY = star(5, bw=BW, delay_ms=0.5)
MSS = 1448
TCP_GOODPUT = BW * MSS / (MSS + HEADERS_TCP)    # full segments on a saturated link


@pytest.fixture(scope="module")
def setup():
    return prepare(SimNetwork(TOPOLOGY, seed=0), [], elems_k=32, pool_size=8, ina=False)


@pytest.fixture
def net(setup):
    """A fresh network (clock, links, hosts) around the switch configured once."""
    setup.reset_data_plane()
    return SimNetwork(TOPOLOGY, seed=0, switches=setup.switches)


def shallow(setup, packets: int) -> SimNetwork:
    setup.reset_data_plane()
    return SimNetwork(TOPOLOGY, seed=0, switches=setup.switches,
                      link_queue_bytes=packets * (MSS + HEADERS_TCP))


def test_a_bulk_transfer_delivers_every_byte_at_the_link_rate(net) -> None:
    ended = []
    flow = BulkFlow(net, "h1", "h2", size_bytes=2_000_000, port=6000, on_end=ended.append)
    flow.start()
    assert net.loop.run(until=5.0) == "idle"
    assert ended == [flow] and flow.completed and flow.error is None
    assert flow.bytes_delivered == flow.bytes_acked == 2_000_000
    assert flow.goodput_mbps() == pytest.approx(TCP_GOODPUT, rel=0.10)
    assert flow.goodput_mbps() <= TCP_GOODPUT
    # real frames: every segment is its payload plus 54 bytes of headers
    counters = net.links["h1:0->s1:1"].counters
    segments = flow.sender.counters.segments_sent
    assert counters.sent_packets == segments
    assert counters.sent_bytes == flow.sender.counters.payload_bytes_sent + segments * HEADERS_TCP
    assert flow.sender.cwnd > 10 * MSS                  # it left slow start's first window
    assert (6000, 6001) == (flow.port, flow.ack_port)
    assert not net.hosts["h2"].handlers and not net.hosts["h1"].handlers   # ports released


def test_two_reno_flows_into_one_link_share_it(setup) -> None:
    net = shallow(setup, 50)
    a = BulkFlow(net, "h1", "h3", port=6000)
    b = BulkFlow(net, "h2", "h3", port=6002)
    a.start()
    b.start()
    net.loop.at(1.0, a.stop)
    net.loop.at(1.0, b.stop)
    net.loop.run(until=2.0)
    shares = sorted([a.goodput_mbps(), b.goodput_mbps()])
    assert shares[1] <= 1.3 * shares[0]
    assert sum(shares) == pytest.approx(TCP_GOODPUT, rel=0.10)
    assert a.sender.counters.window_reductions and b.sender.counters.window_reductions
    assert a.error is None and b.error is None


def test_a_udp_flow_delivers_its_rate(net) -> None:
    flow = UdpFlow(net, "h1", "h2", rate_mbps=20, port=7000)
    flow.start()
    net.loop.at(0.2, flow.stop)
    net.loop.run(until=1.0)
    assert flow.goodput_mbps() == pytest.approx(20, rel=0.05)
    assert flow.packets_sent == pytest.approx(0.2 * 20e6 / (1472 * 8), abs=1)
    assert flow.bytes_delivered == flow.packets_delivered * 1472
    assert net.links["h1:0->s1:1"].counters.sent_bytes == flow.packets_sent * (1472 + HEADERS_UDP)


def test_a_udp_flow_faster_than_the_link_gets_the_link(net) -> None:
    flow = UdpFlow(net, "h1", "h2", rate_mbps=200, port=7000)
    flow.start()
    net.loop.at(0.2, flow.stop)
    net.loop.run(until=1.0)
    wire_payload_rate = BW * 1472 / (1472 + HEADERS_UDP)
    assert flow.goodput_mbps() <= wire_payload_rate
    assert flow.goodput_mbps() == pytest.approx(wire_payload_rate, rel=0.05)
    assert net.links["h1:0->s1:1"].counters.dropped_queue > 0


def test_an_incast_of_three_delivers_every_flow(net) -> None:
    done = []
    incast = Incast(net, ["h1", "h2", "h3"], "h4", size_bytes=300_000, base_port=6000,
                    on_end=done.append)
    assert [f.port for f in incast.flows] == [6000, 6002, 6004]
    incast.start()
    net.loop.run(until=10.0)
    assert done == [incast] and incast.done and not incast.errors
    assert [f.bytes_delivered for f in incast.flows] == [300_000] * 3
    assert all(f.completed for f in incast.flows)
    # the three shared h4's link: together no faster than it
    elapsed = max(f.stopped_at for f in incast.flows)
    assert incast.bytes_delivered * 8 / elapsed / 1e6 <= TCP_GOODPUT


def test_stop_stops_sending_and_counting(net) -> None:
    bulk = BulkFlow(net, "h1", "h2", port=6000)
    udp = UdpFlow(net, "h3", "h2", rate_mbps=10, port=7000)
    bulk.start()
    udp.start()
    net.loop.at(0.1, bulk.stop)
    net.loop.at(0.1, udp.stop)
    net.loop.run(until=0.1)
    net.loop.run(until=0.1 + 1e-9)            # the stops run
    delivered = bulk.bytes_delivered, udp.bytes_delivered
    sent = net.hosts["h1"].counters.frames_sent, net.hosts["h3"].counters.frames_sent
    assert bulk.stopped_at == udp.stopped_at == pytest.approx(0.1)
    assert delivered[0] > 0 and delivered[1] > 0
    assert net.loop.run(until=3.0) == "idle"  # nothing keeps running: no timer, no sender
    assert (bulk.bytes_delivered, udp.bytes_delivered) == delivered
    assert (net.hosts["h1"].counters.frames_sent, net.hosts["h3"].counters.frames_sent) == sent
    assert bulk.error is None and not bulk.completed
    assert bulk.goodput_mbps() == pytest.approx(delivered[0] * 8 / 0.1 / 1e6)
    bulk.stop()                               # a second stop is a no-op
    # the ports are free again
    BulkFlow(net, "h1", "h2", port=6000)


def test_a_killed_destination_ends_the_bulk_flow_with_an_error(net) -> None:
    ended = []
    bulk = BulkFlow(net, "h1", "h2", port=6000, on_end=ended.append)
    udp = UdpFlow(net, "h3", "h2", rate_mbps=10, port=7000)
    bulk.start()
    udp.start()
    net.loop.at(0.05, net.hosts["h2"].kill)
    net.loop.run(until=30.0)                  # nothing raises out of the loop
    assert ended == [bulk]
    assert "stopped acknowledging" in bulk.error and not bulk.completed
    at_kill = bulk.bytes_delivered
    assert 0 < at_kill < bulk.sender.counters.payload_bytes_sent
    assert udp.running and udp.packets_delivered < udp.packets_sent   # sends into the void
    udp.stop()


def test_a_killed_source_just_goes_silent(net) -> None:
    bulk = BulkFlow(net, "h1", "h2", port=6000)
    bulk.start()
    net.loop.at(0.05, net.hosts["h1"].kill)
    assert net.loop.run(until=5.0) == "idle"
    assert bulk.error is None and bulk.running and bulk.bytes_delivered > 0


def test_ports_are_checked(net) -> None:
    BulkFlow(net, "h1", "h2", port=6000)
    with pytest.raises(ValueError, match="h2 already listens on TCP port 6000"):
        BulkFlow(net, "h3", "h2", port=6000)
    with pytest.raises(ValueError, match="h1 already listens on TCP port 6001"):
        BulkFlow(net, "h1", "h3", port=6000)
    assert (PROTO_TCP, 6000) not in net.hosts["h3"].handlers  # the refused flow took nothing
    with pytest.raises(ValueError, match="belongs to the jobs"):
        BulkFlow(net, "h1", "h2", port=5200)                # acks on 5201
    with pytest.raises(ValueError, match="belongs to the jobs"):
        UdpFlow(net, "h1", "h2", rate_mbps=1, port=48879)
    with pytest.raises(ValueError, match="no host"):
        UdpFlow(net, "h1", "h9", rate_mbps=1, port=7000)
    with pytest.raises(ValueError, match="payload"):
        UdpFlow(net, "h1", "h2", rate_mbps=1, payload=1473, port=7000)
    with pytest.raises(ValueError, match="both"):
        BulkFlow(net, "h1", "h1", port=6100)
