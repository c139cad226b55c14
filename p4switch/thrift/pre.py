"""BMv2's `simple_pre_lag` service: the multicast engine (groups, nodes, LAGs: port bundles).

A node's handle is BMv2's (the lowest free index, `handles.py`), a group's handle is its id, as
simple_switch has them; `bm_mc_get_entries` lists the engine as SimplePreLAG's JSON does, its
hash maps' order taken as newest first (what simple_switch shows for the counts probed).
"""

from __future__ import annotations

import json

from p4switch.runtime import AlreadyExists, NotFound, P4SwitchError, ResourceExhausted
from p4switch.thrift import idl
from p4switch.thrift.errors import ApplicationFailure, CallError, runtime_errors
from p4switch.thrift.handles import HandleBook
from p4switch.thrift.idl import McError

MAP_BITS = 512             # SimplePre's port and LAG maps


def port_list(port_map: str, what: str) -> list[int]:
    """BMv2's port (or LAG) map: a string of 0s and 1s, its last character number 0."""
    if not isinstance(port_map, str) or set(port_map) - {"0", "1"}:
        raise ApplicationFailure(f"{what} {port_map!r} is not a string of 0s and 1s (its last "
                                 "character is number 0)")
    numbers = [i for i, bit in enumerate(reversed(port_map)) if bit == "1"]
    if numbers and numbers[-1] >= MAP_BITS:
        raise ApplicationFailure(f"{what} names {numbers[-1]}; the map has {MAP_BITS} bits")
    return numbers


class PreCalls:
    """The `bm_mc_*` calls on one switch's replication engine."""

    def __init__(self, switch):
        self.sw = switch
        self.nodes = HandleBook(versioned=False)
        self.group_order: list[int] = []          # multicast groups made over Thrift, in order
        self.lag_order: list[int] = []            # LAGs given members over Thrift, in order

    def reset(self) -> None:
        """simple_switch's reset_state of its engine: no groups, nodes or LAGs."""
        self.sw.mc_reset()
        self.nodes.reset()
        self.group_order.clear()
        self.lag_order.clear()

    def _mc(self, code: McError, detail: str) -> CallError:
        return CallError(idl.InvalidMcOperation, code, detail)

    def bm_mc_mgrp_create(self, a) -> int:
        mgid = a.get("mgrp")
        try:
            self.sw.mc_group_create(mgid)
        except AlreadyExists:
            pass                           # simple_switch answers with the same handle
        except P4SwitchError as e:
            raise self._mc(McError.ERROR, str(e)) from None
        if mgid in self.group_order:
            self.group_order.remove(mgid)
        self.group_order.append(mgid)
        return mgid                        # BMv2's group handle is its id

    def bm_mc_mgrp_destroy(self, a) -> None:
        mgid = a.get("mgrp_handle")
        try:
            self.sw.mc_group_delete(mgid)
        except NotFound:
            pass                           # simple_switch does not complain either
        if mgid in self.group_order:
            self.group_order.remove(mgid)

    def _node(self, handle) -> int:
        node = self.nodes.runtime(handle)
        if node is None:
            raise self._mc(McError.INVALID_L1_HANDLE, f"no multicast node {handle}")
        return node

    @staticmethod
    def _maps(a) -> tuple[list[int], list[int]]:
        return (port_list(a.get("port_map", ""), "port map"),
                port_list(a.get("lag_map") or "", "LAG map"))

    def bm_mc_node_create(self, a) -> int:
        ports, lags = self._maps(a)
        try:
            node = self.sw.mc_node_create(a.get("rid"), ports, lags)
        except ResourceExhausted as e:
            raise self._mc(McError.TABLE_FULL, str(e)) from None
        except P4SwitchError as e:
            raise self._mc(McError.ERROR, str(e)) from None
        return self.nodes.add(node)

    def bm_mc_node_update(self, a) -> None:
        node = self._node(a.get("l1_handle"))
        ports, lags = self._maps(a)
        with runtime_errors(idl.InvalidMcOperation, {}, McError.ERROR):
            self.sw.mc_node_update(node, ports, lags)

    def bm_mc_node_destroy(self, a) -> None:
        handle = a.get("l1_handle")
        self.sw.mc_node_destroy(self._node(handle))
        self.nodes.remove(handle)

    def _group(self, mgid) -> int:
        if mgid not in self.sw.mc_groups():
            raise self._mc(McError.INVALID_MGRP_HANDLE, f"no multicast group {mgid}")
        return mgid

    def bm_mc_node_associate(self, a) -> None:
        mgid = self._group(a.get("mgrp_handle"))
        node = self._node(a.get("l1_handle"))
        with runtime_errors(idl.InvalidMcOperation, {}, McError.ERROR):
            self.sw.mc_node_associate(mgid, node)

    def bm_mc_node_dissociate(self, a) -> None:
        mgid = self._group(a.get("mgrp_handle"))
        node = self._node(a.get("l1_handle"))
        with runtime_errors(idl.InvalidMcOperation, {}, McError.ERROR):
            self.sw.mc_node_dissociate(mgid, node)

    def bm_mc_set_lag_membership(self, a) -> None:
        ports = port_list(a.get("port_map", ""), "port map")
        with runtime_errors(idl.InvalidMcOperation, {}, McError.ERROR):
            self.sw.mc_set_lag_members(a.get("lag_index"), ports)
        if a.get("lag_index") in self.lag_order:
            self.lag_order.remove(a.get("lag_index"))
        self.lag_order.append(a.get("lag_index"))

    def bm_mc_get_entries(self, a) -> str:
        """The engine as BMv2 lists it: nodes (L1) with their port sets (L2, one per node),
        groups with their nodes; hash-map order in BMv2, newest first here."""
        groups = [g for g in reversed(self.group_order) if g in self.sw.mc_groups()]
        groups += sorted(set(self.sw.mc_groups()) - set(groups), reverse=True)
        nodes = list(reversed(self.nodes.live()))
        in_group = {g: self.sw.mc_group_nodes(g) for g in groups}
        node_of = {r: self.sw.mc_node_get(r) for _, r in nodes}
        members = self.sw.mc_lag_members()
        lags = [lag for lag in reversed(self.lag_order) if lag in members]
        lags += sorted(set(members) - set(lags), reverse=True)
        doc = {
            "l1_handles": [{"handle": h, "l2_handle": h, "rid": node_of[r][0]}
                           for h, r in nodes],
            "l2_handles": [{"handle": h, "lags": node_of[r][2], "ports": node_of[r][1]}
                           for h, r in nodes],
            "lags": [{"id": lag, "ports": members[lag]} for lag in lags],
            "mgrps": [{"id": g, "l1_handles": [self.nodes.handle_of(r) for r in in_group[g]
                                               if self.nodes.handle_of(r) is not None]}
                      for g in groups],
        }
        return json.dumps(doc, indent="\t")
