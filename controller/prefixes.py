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
    base, base_len = within
    items = sorted(set(hosts))
    addresses = [address for address, _ in items]
    if len(set(addresses)) != len(addresses):
        raise ValueError("an address has two actions")
    mask = _mask(base_len)
    if any(address & mask != base & mask for address in addresses):
        raise ValueError("a host address lies outside the aggregation prefix")
    if not items:
        return []
    if order is None:
        first_seen: dict = {}
        for _, action in hosts:
            first_seen.setdefault(action, len(first_seen))
        order = first_seen.__getitem__
    root = _build(items, addresses, 0, len(items), base & mask, base_len)
    out: list[Prefix[Action]] = []
    _emit(root, None, out, order, top=(base & mask, base_len))
    out.sort(key=lambda p: (p.length, p.network))
    return out


def _mask(length: int) -> int:
    return (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF if length else 0


def _build(items, addresses, lo: int, hi: int, network: int, length: int) -> _Node:
    """The trie node for items[lo:hi] (all inside network/length); halves holding no host are
    skipped, so a chain of single children collapses into its lowest node."""
    actions = {items[i][1] for i in range(lo, hi)}
    if len(actions) == 1 or length == 32:
        return _Node(network, length, frozenset(actions))
    while True:
        half = network | (1 << (31 - length))
        mid = bisect.bisect_left(addresses, half, lo, hi)
        if mid == lo:                       # everything in the upper half
            network, length = half, length + 1
        elif mid == hi:                     # everything in the lower half
            length += 1
        else:
            break
    left = _build(items, addresses, lo, mid, network, length + 1)
    right = _build(items, addresses, mid, hi, half, length + 1)
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
