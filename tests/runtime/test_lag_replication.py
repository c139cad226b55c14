"""Link aggregation groups in the replication engine (state/pre.py), as SimplePreLAG has them:
a node's LAG makes one copy, on member number 0xFF mod (member count) in port order, chosen
when the packet is replicated (membership changes apply to the next packet); tests/thrift/
test_pre_on_bmv2.py compares the copies with real simple_switch's."""

from __future__ import annotations

import pytest

from p4switch.runtime import InvalidArgument
from p4switch.runtime.state.pre import Replication


def test_a_lag_copy_takes_member_0xff_mod_count_and_follows_membership():
    pre = Replication()
    pre.group_create(1)
    node = pre.node_create(7, [1], lags=[3, 2])
    pre.node_associate(1, node)
    assert pre.replicas(1) == [(1, 7)]                 # LAGs without members: no copy
    pre.set_lag_members(2, [6, 4, 5])
    pre.set_lag_members(3, [2])
    assert pre.replicas(1) == [(1, 7), (4, 7), (2, 7)]  # 255 % 3 = 0 -> 4; LAG order 2, 3
    pre.set_lag_members(2, [7, 5])
    assert pre.replicas(1) == [(1, 7), (7, 7), (2, 7)]  # 255 % 2 = 1 -> 7 (the cache follows)
    pre.set_lag_members(2, [])
    pre.node_update(node, [0, 1])                       # ports replaced, LAGs kept
    assert pre.replicas(1) == [(0, 7), (1, 7), (2, 7)]
    pre.node_update(node, [0], lags=[])
    assert pre.replicas(1) == [(0, 7)]


@pytest.mark.parametrize("call", [
    lambda pre: pre.set_lag_members(257, [1]),          # LAG_MAX_ENTRIES is 256
    lambda pre: pre.set_lag_members(-1, [1]),
    lambda pre: pre.node_create(1, [1], lags=[512]),    # a LAG map has 512 bits
    lambda pre: pre.set_lag_members(1, [512]),
])
def test_out_of_range_lags_are_refused(call):
    with pytest.raises(InvalidArgument):
        call(Replication())


def test_reset_forgets_groups_nodes_and_lags():
    pre = Replication()
    pre.group_create(1)
    pre.node_associate(1, pre.node_create(1, [1], lags=[1]))
    pre.set_lag_members(1, [2])
    pre.reset()
    assert (pre.groups, pre.nodes, pre.lag_members) == ({}, {}, {})
    assert pre.node_create(1, [1]) == 0
