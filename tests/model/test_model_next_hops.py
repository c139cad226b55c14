"""The cost model reads next hops per attachment switch (a table per (switch, host) was 32
million entries at fat-tree(40)); they must be the controller's per-host routes, in its order."""

from __future__ import annotations

import pytest

from controller.routing import forwarding_plans
from inaemu.model.network import ModelNetwork
from topologies.builders import fat_tree, leaf_spine, linear


@pytest.mark.parametrize("topology", [fat_tree(4), leaf_spine(3, 2, 2), linear(3, 2)],
                         ids=lambda t: t.name)
def test_next_hops_are_the_controllers(topology):
    net = ModelNetwork(topology)
    for switch, plan in forwarding_plans(topology).items():
        assert net._shift[switch] == plan.hash_shift
        for planned in plan.routes:
            assert net._next_hops(switch, planned.route.host) == \
                tuple(h.node for h in planned.route.next_hops), (switch, planned.route.host)
