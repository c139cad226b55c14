"""Route entries built once for the switches that write the same one (`plan_entries(made=)`,
`Fabric.install_routes`): every switch gets exactly the entries it got when each was built for
it alone, and two programs' P4Infos never share an entry."""

from __future__ import annotations

import pytest

from controller.routing import L3_FORWARD, forwarding_plans, plan_entries
from inaemu.sim import control
from topologies.builders import fat_tree, leaf_spine


@pytest.fixture(scope="module")
def indexes():
    ina = control.compile_program(str(control.INA_PROGRAM), (("INA_K", "8"),))
    router = control.compile_program(str(control.L3_PROGRAM))
    return ina.p4info, router.p4info


def _bytes(entries) -> list[bytes]:
    return [e.SerializeToString(deterministic=True) for e in entries]


@pytest.mark.parametrize("topology", [fat_tree(4), fat_tree(8), leaf_spine(4, 2, 3)],
                         ids=["fat-tree4", "fat-tree8", "leaf-spine"])
@pytest.mark.parametrize("ecmp", [True, False])
def test_shared_entries_are_each_switchs_own(indexes, topology, ecmp):
    ina, router = indexes
    made: dict = {}
    shared = 0
    seen: set[int] = set()
    for number, (switch, plan) in enumerate(forwarding_plans(topology, True).items()):
        index = ina if number % 3 == 0 else router      # the two programs, mixed
        alone = plan_entries(L3_FORWARD, index, plan, ecmp=ecmp)
        together = plan_entries(L3_FORWARD, index, plan, ecmp=ecmp, made=made)
        assert _bytes(together.members) == _bytes(alone.members), switch
        assert _bytes(together.routes) == _bytes(alone.routes), switch
        assert together.member_labels == alone.member_labels
        assert together.route_labels == alone.route_labels
        assert together.groups == alone.groups
        for entry in together.routes + together.members:
            shared += id(entry) in seen
            seen.add(id(entry))
    assert shared > 0      # the fabric's switches did share entries


def test_programs_with_other_p4infos_get_their_own_entries(indexes):
    ina, router = indexes
    plans = forwarding_plans(fat_tree(4), True)
    plan = next(iter(plans.values()))
    made: dict = {}
    first = plan_entries(L3_FORWARD, ina, plan, made=made)
    second = plan_entries(L3_FORWARD, router, plan, made=made)
    assert not {id(e) for e in first.routes} & {id(e) for e in second.routes}
    assert _bytes(second.routes) == _bytes(plan_entries(L3_FORWARD, router, plan).routes)
