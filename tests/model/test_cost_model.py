"""The cost model against hand calculations (docs/model.md), and its routes against the
simulator's."""

from __future__ import annotations

import pytest

from inaemu.model import SwitchCosts, predict
from inaemu.model.cost import phases_for
from inaemu.model.network import ModelNetwork
from inaemu.sim import SimJob, simulate
from topologies.builders import fat_tree, star

BW = 100.0          # Mbit/s
N = 1448 * 100      # 100 full segments


def test_ring_of_two_by_hand():
    # each direction of h1-s1: 100 data frames of 1502 B + 50 ACKs of 54 B of the other flow
    link = (144800 + 100 * 54 + 50 * 54) * 8 / 100e6                      # 0.012232 s
    # alpha: the second hop's serialisation of a 1502 B frame + one switch (17 + 2 us)
    alpha = 1502 * 8 / 100e6 + 19e-6
    t = predict("ring", star(2), ["h1", "h2"], N, bw_mbps=BW)
    assert link == pytest.approx(0.012232)
    assert t.time_s == pytest.approx(2 * alpha + link, rel=1e-9)
    assert t.latency_s == pytest.approx(2 * alpha, rel=1e-9)


def test_parameter_server_of_two_by_hand():
    half = (72400 + 50 * 54 + 25 * 54) * 8 / 100e6                      # push, then pull
    alpha = 1502 * 8 / 100e6 + 19e-6
    t = predict("ps", star(2), ["h1", "h2"], N, bw_mbps=BW)
    assert t.time_s == pytest.approx(2 * (alpha + half), rel=1e-9)


def test_switch_bound_phase_by_hand():
    """An unshaped star: only the switch's per-frame cost limits. Ring of 2: s1 serves 200 data
    frames and 100 ACKs at 19 us each; the latency is the switch's 19 us per step."""
    t = predict("ring", star(2), ["h1", "h2"], N, bw_mbps=None)
    assert t.time_s == pytest.approx(2 * 19e-6 + 300 * 19e-6, rel=1e-9)
    t = predict("ring", star(2), ["h1", "h2"], N, bw_mbps=None,
                switch=SwitchCosts(per_packet_s=10e-6, per_copy_s=0.0))
    assert t.time_s == pytest.approx(2 * 10e-6 + 300 * 10e-6, rel=1e-9)


def test_ina_on_a_star_by_hand():
    # 131072 B = 32768 values = 1024 chunks of k = 32; frame 42 + 16 + 128 = 186 B
    # per chunk the switch serves 4 contributions (17 us) and multicasts 4 copies (2 us)
    rtt = 2 * (186 * 8 / 100e6 + 17e-6)
    t = predict("ina", star(4), ["h1", "h2", "h3", "h4"], 131072, bw_mbps=BW, elems_k=32,
                window=16)
    assert t.time_s == pytest.approx(2 * rtt + 1024 * 76e-6, rel=1e-9)
    # at 10 Mbit/s the link (149 us a frame) is the bottleneck with a large window; with a
    # window of 2 the round trip (332 us) paces every chunk
    rtt = 2 * (186 * 8 / 10e6 + 17e-6)
    t = predict("ina", star(4), ["h1", "h2", "h3", "h4"], 131072, bw_mbps=10, elems_k=32,
                window=16)
    assert t.time_s == pytest.approx(2 * rtt + 1024 * 186 * 8 / 10e6, rel=1e-9)
    t = predict("ina", star(4), ["h1", "h2", "h3", "h4"], 131072, bw_mbps=10, elems_k=32,
                window=2)
    assert t.time_s == pytest.approx(2 * rtt + 1024 * rtt / 2, rel=1e-9)


def test_phase_shapes():
    ring = phases_for("ring", 8, 800.0)
    assert [p.steps for p in ring] == [14] and ring[0].flows[0] == (0, 1, 1400.0)
    rhd = phases_for("rhd", 6, 1024.0)        # p = 4, two ranks fold
    assert [p.name for p in rhd] == ["fold", "halve d=2", "halve d=1", "double d=1",
                                     "double d=2", "unfold"]
    # the fold, and at the same time the unfolded ranks' first halving into the folded ones
    assert rhd[0].flows == [(0, 1, 1024.0), (2, 3, 1024.0), (4, 1, 512.0), (5, 3, 512.0)]
    assert {f[2] for f in rhd[1].flows} == {512.0} and {f[2] for f in rhd[2].flows} == {256.0}
    hring = phases_for("hring", 8, 800.0, switch_blocks=[[0, 1], [2, 3], [4, 5], [6, 7]])
    assert [p.steps for p in hring] == [1, 6, 1]
    torus = phases_for("torus", 16, 1600.0)
    assert [p.steps for p in torus] == [3, 6, 3]
    assert [p.steps for p in phases_for("torus", 3, 300.0)] == [1, 2, 1]     # a 3 x 1 grid
    ps = phases_for("ps", 4, 400.0)
    assert len(ps[0].flows) == 12 and ps[0].flows[0][2] == 100.0


def test_even_spread_over_equal_paths():
    net = ModelNetwork(fat_tree(4))
    spread = net.spread("h1", "h16")
    assert spread[("h1", "e0_0")] == 1.0
    assert spread[("e0_0", "a0_0")] == pytest.approx(0.5)
    assert sum(v for (a, b), v in spread.items() if b.startswith("c")) == pytest.approx(1.0)


def test_hashed_path_is_the_simulators():
    """One ring of two hosts in different pods: the link directions that carry its data in the
    simulator are the model's hashed path."""
    topology = fat_tree(4)
    result = simulate(topology, [SimJob(1, ("h1", "h9"))], algo="ring", size_bytes=65536,
                      seed=1)
    used = {(link["src"].split(":")[0], link["dst"].split(":")[0]) for link in result.links
            if link["delivered_bytes"] > 30000}
    net = ModelNetwork(topology)
    model = set(net.spread("h1", "h9", (40000, 5201))) | set(net.spread("h9", "h1",
                                                                        (40000, 5201)))
    assert used == model
