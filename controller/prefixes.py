"""The fewest LPM prefixes that send every host address where its /32 would: route aggregation.

Why: one /32 per host per switch is hosts × switches entries (327,680 on a fat-tree(16), whose
`ipv4_lpm` holds 1024). A fabric operator writes one prefix per pod or leaf instead. Here that
falls out of the routes themselves, for any topology and addressing: given, for one switch, the
action of every host address (its next-hop set), `aggregate` returns the smallest prefix table
with the same longest-prefix-match result on every host address (the ORTC construction, Draves
et al., 1999: candidate sets bottom-up over the address trie, intersection where the halves
agree, union where they do not; then top-down, a prefix only where the inherited action is not a
candidate).

Addresses that belong to no host are "don't care", but only inside the hosts' subnet (the
`within` prefix): a packet to an unknown address of the subnet follows some route (the TTL ends
any loop), one outside the subnet still misses the table. Longer prefixes written later (the
aggregators' /32s) win over these as LPM wants.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, Sequence, TypeVar

Action = TypeVar("Action", bound=Hashable)


@dataclass(frozen=True)
class Prefix(Generic[Action]):
    network: int        # the address as an integer, bits beyond `length` zero
    length: int
    action: Action


@dataclass
class _Node:
    network: int
    length: int
    candidates: frozenset
    children: tuple["_Node", ...] = ()


def aggregate(hosts: Sequence[tuple[int, Action]], within: tuple[int, int] = (0, 0),
              order: Callable[[Action], object] | None = None) -> list[Prefix[Action]]:
    """Prefixes (shortest first, then by address) equivalent to a /32 per (address, action) in
    `hosts` under longest-prefix match, covering nothing outside `within` = (network, length).
    `order` breaks ties between equally good actions (default: first seen in `hosts`), so the
    result is deterministic."""
    items = sorted(set(hosts))
    addresses = [address for address, _ in items]
    if len(set(addresses)) != len(addresses):
        raise ValueError("an address has two actions")
    if order is None:
        first_seen: dict = {}
        for _, action in hosts:
            first_seen.setdefault(action, len(first_seen))
        order = first_seen.__getitem__
    starts = [i for i in range(len(items)) if i == 0 or items[i][1] != items[i - 1][1]]
    return aggregate_runs(addresses, starts, [items[i][1] for i in starts], within, order)


def aggregate_runs(addresses: Sequence[int], starts: Sequence[int], actions: Sequence[Action],
                   within: tuple[int, int], order: Callable[[Action], object]
                   ) -> list[Prefix[Action]]:
    """`aggregate` for hosts given as runs: `addresses` ascending, and hosts `starts[i]` up to
    the next start share `actions[i]`. Why: on a large fabric most switches see the hosts of a
    whole edge switch alike (a fat-tree(40) has 16,000 hosts in ~800 runs per switch), and the
    trie below only needs to know whether a span of hosts has one action, which the runs tell
    without looking at every host."""
    base, base_len = within
    _check_ascending(addresses)
    if len(starts) != len(actions) or (addresses and (not starts or starts[0] != 0)) or \
            any(b <= a for a, b in zip(starts, starts[1:])) or \
            (starts and starts[-1] >= len(addresses)):
        raise ValueError("runs must start at 0 and ascend within the addresses, one action each")
    mask = _mask(base_len)
    if addresses and (addresses[0] & mask != base & mask or addresses[-1] & mask != base & mask):
        raise ValueError("a host address lies outside the aggregation prefix")
    if not addresses:
        return []
    # merge neighbouring runs with one action: then a span has one action iff it lies in one run
    merged_starts, merged_actions = [], []
    for start, action in zip(starts, actions):
        if merged_actions and merged_actions[-1] == action:
            continue
        merged_starts.append(start)
        merged_actions.append(action)
    runs = _Runs(addresses, merged_starts, merged_actions)
    root = _build(runs, 0, len(addresses), base & mask, base_len)
    out: list[Prefix[Action]] = []
    _emit(root, None, out, order, top=(base & mask, base_len))
    out.sort(key=lambda p: (p.length, p.network))
    return out


_last_checked: list = [None]     # the last addresses found ascending (a tuple: immutable)


def _check_ascending(addresses: Sequence[int]) -> None:
    """ValueError unless strictly ascending. A tuple already checked is not checked again:
    a fabric's switches all aggregate the same subnet's addresses (16,000 per switch, 2,000
    switches at fat-tree(40): 32 million comparisons)."""
    if addresses is _last_checked[0]:
        return
    if any(b <= a for a, b in zip(addresses, addresses[1:])):
        raise ValueError("an address has two actions" if len(set(addresses)) != len(addresses)
                         else "addresses must ascend")
    if isinstance(addresses, tuple):
        _last_checked[0] = addresses


@dataclass(frozen=True)
class _Runs:
    addresses: Sequence[int]
    starts: list[int]
    actions: list

    def actions_of(self, lo: int, hi: int) -> set:
        """The actions of hosts lo..hi-1."""
        first = bisect.bisect_right(self.starts, lo) - 1
        last = bisect.bisect_right(self.starts, hi - 1) - 1
        return set(self.actions[first:last + 1])


def _mask(length: int) -> int:
    return (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF if length else 0


def _build(runs: _Runs, lo: int, hi: int, network: int, length: int) -> _Node:
    """The trie node for hosts lo..hi-1 (all inside network/length); halves holding no host are
    skipped, so a chain of single children collapses into its lowest node."""
    actions = runs.actions_of(lo, hi)
    if len(actions) == 1 or length == 32:
        return _Node(network, length, frozenset(actions))
    addresses = runs.addresses
    while True:
        half = network | (1 << (31 - length))
        mid = bisect.bisect_left(addresses, half, lo, hi)
        if mid == lo:                       # everything in the upper half
            network, length = half, length + 1
        elif mid == hi:                     # everything in the lower half
            length += 1
        else:
            break
    left = _build(runs, lo, mid, network, length + 1)
    right = _build(runs, mid, hi, half, length + 1)
    common = left.candidates & right.candidates
    return _Node(network, length, common or (left.candidates | right.candidates),
                 (left, right))


def _emit(node: _Node, inherited, out: list, order, top: tuple[int, int] | None = None) -> None:
    """Top-down: keep the inherited action where it is a candidate, else write a prefix."""
    if inherited in node.candidates:
        chosen = inherited
    else:
        chosen = min(node.candidates, key=order)
        network, length = top if top is not None else (node.network, node.length)
        out.append(Prefix(network, length, chosen))
    for child in node.children:
        _emit(child, chosen, out, order)


def lookup(prefixes: Sequence[Prefix[Action]], address: int):
    """Longest-prefix match (the action, or None on a miss): what a test checks `aggregate`
    against."""
    best = None
    for prefix in prefixes:
        if address & _mask(prefix.length) == prefix.network and \
                (best is None or prefix.length > best.length):
            best = prefix
    return None if best is None else best.action
