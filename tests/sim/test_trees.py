"""Aggregation trees of any depth (controller.trees) on the simulated network: correct all-reduce on
leaf-spine and on a fat-tree (depth 3: edge → aggregation → core), with and without loss, and the
traffic each link carries, from the simulator's per-link counters."""

from __future__ import annotations

import pytest

from controller.trees import choose_root
from inaemu.sim import SimError, SimJob, simulate
from topologies.builders import fat_tree, leaf_spine, star

SIZE, K = 1024, 8
CHUNKS = SIZE // 4 // K
PER_LINK = CHUNKS + 1                      # one packet per chunk, plus the MAX round's
FRAME = 14 + 20 + 8 + 16 + 4 * K           # Ethernet + IPv4 + UDP + INA header + values


def all_hosts(topology) -> tuple[str, ...]:
    return tuple(h.name for h in topology.hosts)


def run(topology, *, loss: float = 0, hierarchical: bool = True, root: str | None = None):
    hosts = all_hosts(topology)
    root = root or choose_root(topology, hosts)
    return simulate(topology, [SimJob(1, hosts, root, hierarchical=hierarchical)], algo="ina",
                    size_bytes=SIZE, elems_k=K, loss=loss, bw=100, seed=3)


def tree_links(result) -> set[tuple[str, str]]:
    """(child switch, parent switch) of every edge of job 1's tree."""
    return {(s, node["parent"]) for s, node in result.trees[1].items() if node["parent"]}


def switch_links(result) -> dict[tuple[str, str], dict]:
    """(src switch, dst switch) -> that link direction's counters."""
    hosts = {r.host for r in result.records}
    return {(link["src"].split(":")[0], link["dst"].split(":")[0]): link for link in result.links
            if link["src"].split(":")[0] not in hosts and link["dst"].split(":")[0] not in hosts}


def retransmissions_below(result, switch: str) -> int:
    """Worker retransmissions of the hosts in `switch`'s subtree."""
    trees = result.trees[1]

    def hosts(node: str) -> list[str]:
        found = []
        for member in trees[node]["members"]:
            found += hosts(member) if member in trees else [member]
        return found

    below = set(hosts(switch))
    return sum(r.retransmissions for r in result.records if r.host in below)


@pytest.fixture(scope="module")
def fat_tree_clean():
    return run(fat_tree(4))


def test_fat_tree_tree_has_three_levels_rooted_at_a_core(fat_tree_clean) -> None:
    trees = fat_tree_clean.trees[1]
    assert trees["c0"]["parent"] is None
    assert trees["c0"]["members"] == ["a0_0", "a1_0", "a2_0", "a3_0"]
    assert trees["a2_0"] == {**trees["a2_0"], "parent": "c0", "child_index": 2,
                             "members": ["e2_0", "e2_1"]}
    assert trees["e2_1"]["members"] == ["h11", "h12"] and trees["e2_1"]["parent"] == "a2_0"
    assert len(trees) == 4 * 2 + 4 + 1          # every edge, one aggregation switch per pod, c0


def check_correct(result, workers: int) -> None:
    assert len(result.records) == workers
    for record in result.records:
        assert record.error is None and record.correct, record
        assert record.max_abs_err <= record.err_bound


def test_leaf_spine_is_correct_without_loss() -> None:
    result = run(leaf_spine(2, 2, 2))
    check_correct(result, 4)
    assert result.trees[1]["sp1"]["members"] == ["l1", "l2"]


def test_fat_tree_is_correct_without_loss(fat_tree_clean) -> None:
    check_correct(fat_tree_clean, 16)
    assert sum(r.retransmissions for r in fat_tree_clean.records) == 0


def test_each_tree_link_carries_one_partial_aggregate_per_slot(fat_tree_clean) -> None:
    links = switch_links(fat_tree_clean)
    edges = tree_links(fat_tree_clean)
    assert len(edges) == 12
    for (src, dst), link in links.items():
        if (src, dst) in edges or (dst, src) in edges:       # up: partials; down: results
            assert link["delivered_packets"] == PER_LINK, (src, dst)
            assert link["delivered_bytes"] == PER_LINK * FRAME, (src, dst)
        else:
            assert link["sent_packets"] == 0, (src, dst)        # links off the tree stay idle


@pytest.mark.parametrize("topology", [leaf_spine(2, 2, 2), fat_tree(4)],
                         ids=["leafspine", "fattree"])
def test_with_loss_all_reduce_is_correct_and_links_carry_retransmissions(topology) -> None:
    result = run(topology, loss=5)
    check_correct(result, len(topology.hosts))
    assert sum(r.retransmissions for r in result.records) > 0
    links = switch_links(result)
    for child, parent in tree_links(result):
        up, down = links[(child, parent)], links[(parent, child)]
        extra = retransmissions_below(result, child)
        # every partial reaches the parent at least once; a resend is caused by a retransmission
        # of a worker below (each one climbs at most once per link)
        assert PER_LINK <= up["delivered_packets"] <= up["sent_packets"] <= PER_LINK + extra
        # one result per completed cell, plus unicast answers to resent partials
        assert down["delivered_packets"] >= PER_LINK
        assert down["sent_packets"] <= PER_LINK + (up["delivered_packets"] - PER_LINK)


def test_the_tree_carries_less_across_tiers_than_single_switch_aggregation(
        fat_tree_clean) -> None:
    flat = run(fat_tree(4), hierarchical=False, root="c0")
    assert flat.correct
    tree_links_, flat_links = switch_links(fat_tree_clean), switch_links(flat)
    # the aggregation → core link of pod 0: one partial per slot against the pod's 4 workers'
    assert tree_links_[("a0_0", "c0")]["delivered_bytes"] == PER_LINK * FRAME
    assert flat_links[("a0_0", "c0")]["delivered_bytes"] == 4 * PER_LINK * FRAME
    assert flat_links[("c0", "a0_0")]["delivered_bytes"] == 4 * PER_LINK * FRAME
    tree_total = sum(link["delivered_bytes"] for link in tree_links_.values())
    flat_total = sum(link["delivered_bytes"] for link in flat_links.values())
    assert tree_total * 2 < flat_total


def test_a_root_that_aggregates_too_many_members_is_refused() -> None:
    topology = star(65)
    with pytest.raises(SimError, match="s1 would aggregate 65 members; its worker bitmap holds 64"):
        simulate(topology, [SimJob(1, all_hosts(topology), "s1", hierarchical=True)],
                 algo="ina", size_bytes=SIZE, elems_k=K)
