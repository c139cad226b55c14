"""BMv2's runtime services (standard, simple_pre_lag, simple_switch) on one inaemu switch.

`RuntimeService.call(service, method, args)` runs one Thrift call, holding the switch's lock, and
returns its result or raises `CallError` / `ApplicationFailure` (errors.py). The table and
profile calls are `tables.TableCalls`'; the rest (counters, meters, registers, value sets, CRCs,
the multicast engine, mirroring, queues, management) are here. What each answers, error codes
included, follows simple_switch 1.15 as probed call by call; where inaemu differs it says so in
docs/thrift.md.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

from p4switch.runtime import AlreadyExists, NotFound, P4SwitchError, ResourceExhausted
from p4switch.thrift import idl
from p4switch.thrift.errors import ApplicationFailure, CallError, runtime_errors
from p4switch.thrift.handles import HandleBook
from p4switch.thrift.idl import (ApplicationErrorType, CounterError, CrcError, IdLookupError,
                                 LearnError, McError, MeterError, MirroringError,
                                 ParseVSetError, RegisterError, ResourceType, SwapError,
                                 TableError, ToeplitzError)
from p4switch.thrift.tables import TableCalls, nbytes

RESOURCE_LISTS = {ResourceType.MATCH_TABLE: None, ResourceType.ACTION_PROFILE: "action_profiles",
                  ResourceType.COUNTER: "counter_arrays", ResourceType.METER: "meter_arrays",
                  ResourceType.REGISTER: "register_arrays",
                  ResourceType.LEARNING_LIST: "learn_lists"}


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


def as_i64(value: int) -> int:
    """A register cell as Thrift's signed 64-bit integer (BMv2 sends the low 64 bits)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


class RuntimeService:
    """The Thrift runtime of one switch: what simple_switch_CLI and bmv2stf.py talk to."""

    def __init__(self, switch, *, device_id: int = 0, thrift_port: int = 0,
                 config_text: str | None = None,
                 ports: Callable[[], list[tuple[int, str, bool]]] = list,
                 clock: Callable[[], float] = time.monotonic):
        self.sw = switch
        self.device_id = device_id
        self.thrift_port = thrift_port
        self.ports = ports
        self.clock = clock
        self.started = clock()
        self._config: tuple[object, str] | None = None
        self._tables: TableCalls | None = None
        self._tables_program = None
        self.nodes = HandleBook(versioned=False)
        self.group_order: list[int] = []          # multicast groups made over Thrift, in order
        self.lag_order: list[int] = []            # LAGs given members over Thrift, in order
        self.mirror_mappings: dict[int, int] = {}
        if config_text is not None and switch.has_program:
            self._config = (switch.program, config_text)

    # --------------------------------------------------------------------- dispatch
    def call(self, service: str, name: str, args: dict):
        """One call of `idl.SERVICES[service][name]` (the connection checks that it is one)."""
        cxt = args.get("cxt_id", 0)
        if cxt != 0:
            raise ApplicationFailure(f"context {cxt} does not exist: simple_switch has one "
                                     "context, 0")
        with self.sw.lock:
            handler = getattr(self, name, None)
            if handler is None and name.startswith("bm_mt_"):
                handler = getattr(self.tables(), name, None)
            if handler is None:
                raise ApplicationFailure(f"{service}:{name} is not served by inaemu's switch",
                                         ApplicationErrorType.UNKNOWN_METHOD)
            return handler(args)

    def tables(self) -> TableCalls:
        if not self.sw.has_program:
            raise CallError(idl.InvalidTableOperation, TableError.INVALID_TABLE_NAME,
                            "no program is loaded")
        if self._tables is None or self._tables_program is not self.sw.program:
            self._tables = TableCalls(self.sw)
            self._tables_program = self.sw.program
        return self._tables

    def doc(self) -> dict:
        return self.sw.program.doc if self.sw.has_program else {}

    # ------------------------------------------------------------------- management
    def config_text(self) -> str:
        if not self.sw.has_program:
            return ""
        if self._config is None or self._config[0] is not self.sw.program:
            self._config = (self.sw.program, json.dumps(self.sw.program.doc, indent=2))
        return self._config[1]

    def bm_get_config(self, a) -> str:
        return self.config_text()

    def bm_get_config_md5(self, a) -> bytes:
        return hashlib.md5(self.config_text().encode()).digest()

    def bm_mgmt_get_info(self, a) -> dict:
        return {"device_id": self.device_id, "thrift_port": self.thrift_port,
                "notifications_socket": f"ipc:///tmp/bmv2-{self.device_id}-notifications.ipc"}

    def bm_reset_state(self, a) -> None:
        """Everything back to the program as loaded: entries, registers, counters, meters, the
        multicast engine, clone sessions."""
        if self.sw.has_program:
            self.sw.load_config(self.sw.program.doc)
            self._config = None if self._config is None else (self.sw.program, self._config[1])
        self.sw.mc_reset()
        self.nodes.reset()
        self.group_order.clear()
        self.lag_order.clear()
        self.mirror_mappings.clear()

    def bm_serialize_state(self, a) -> str:
        raise ApplicationFailure("bm_serialize_state: inaemu's switch does not serialize its "
                                 "state")

    def bm_load_new_config(self, a) -> None:
        raise CallError(idl.InvalidSwapOperation, SwapError.CONFIG_SWAP_DISABLED,
                        "configuration swaps are disabled, as in simple_switch by default")

    def bm_swap_configs(self, a) -> None:
        self.bm_load_new_config(a)

    def bm_get_id_from_name(self, a) -> int:
        try:
            kind = ResourceType(a.get("resource_type"))
        except ValueError:
            raise CallError(idl.InvalidIdLookup, IdLookupError.INVALID_RESOURCE_TYPE,
                            f"resource type {a.get('resource_type')}") from None
        doc = self.doc()
        key = RESOURCE_LISTS[kind]
        pipelines = doc.get("pipelines", ())
        if key is None:
            items = [t for p in pipelines for t in p.get("tables", ())]
        elif key == "action_profiles":
            items = [a for p in pipelines for a in p.get("action_profiles", ())]
        else:
            items = doc.get(key, ())
        for item in items:
            if item.get("name") == a.get("resource_name"):
                return item["id"]
        raise CallError(idl.InvalidIdLookup, IdLookupError.INVALID_RESOURCE_NAME,
                        f"no {kind.name.lower()} named {a.get('resource_name')!r}")

    def bm_dev_mgr_show_ports(self, a) -> list[dict]:
        return [{"port_num": port, "iface_name": iface, "is_up": up, "extra": {}}
                for port, iface, up in self.ports()]

    def bm_dev_mgr_add_port(self, a) -> None:
        raise CallError(idl.InvalidDevMgrOperation, idl.DevMgrError.ERROR,
                        "inaemu's switch takes its ports from its command line")

    def bm_dev_mgr_remove_port(self, a) -> None:
        self.bm_dev_mgr_add_port(a)

    # ---------------------------------------------------------------------- counters
    def _counter(self, name) -> str:
        if not self.sw.has_program or name not in self.sw.counters():
            raise CallError(idl.InvalidCounterOperation, CounterError.INVALID_COUNTER_NAME,
                            f"no indexed counter named {name!r}")
        return name

    def _counter_index(self, name: str, index) -> int:
        if not isinstance(index, int) or not 0 <= index < self._array_size("counter_arrays",
                                                                            name):
            raise CallError(idl.InvalidCounterOperation, CounterError.INVALID_INDEX,
                            f"index {index} of counter {name!r}")
        return index

    def _array_size(self, key: str, name: str) -> int:
        for item in self.doc().get(key, ()):
            if item.get("name") == name:
                return item.get("size", 0)
        return 0

    def bm_counter_read(self, a) -> dict:
        name = self._counter(a.get("counter_name"))
        packets, nbytes_ = self.sw.counter_read(name, self._counter_index(name, a.get("index")))
        return {"bytes": as_i64(nbytes_), "packets": as_i64(packets)}

    def bm_counter_write(self, a) -> None:
        name = self._counter(a.get("counter_name"))
        index = self._counter_index(name, a.get("index"))
        value = a.get("value") or {}
        self.sw.counter_write(name, index, value.get("packets", 0) % (1 << 64),
                              value.get("bytes", 0) % (1 << 64))

    def bm_counter_reset_all(self, a) -> None:
        self.sw.counter_reset(self._counter(a.get("counter_name")))

    # ------------------------------------------------------------------------ meters
    def _meter(self, name) -> str:
        if name not in {m.get("name") for m in self.doc().get("meter_arrays", ())}:
            raise CallError(idl.InvalidMeterOperation, MeterError.INVALID_METER_NAME,
                            f"no meter named {name!r}")
        return name

    def _direct_table(self, name: str) -> str | None:
        """The table a direct meter belongs to (BMv2 addresses its meters by entry index)."""
        return self.tables().meter_tables.get(name)

    def _meter_index(self, name: str, index) -> int:
        if not isinstance(index, int) or not 0 <= index < self._array_size("meter_arrays",
                                                                            name):
            raise CallError(idl.InvalidMeterOperation, MeterError.INVALID_INDEX,
                            f"index {index} of meter {name!r}")
        return index

    def _rates(self, name: str, rates) -> list[tuple[float, int]]:
        count = next((m.get("rate_count", 2) for m in self.doc().get("meter_arrays", ())
                      if m.get("name") == name), 2)
        pairs = [(r.get("units_per_micros", 0.0), r.get("burst_size", 0)) for r in rates]
        if len(pairs) != count:
            raise CallError(idl.InvalidMeterOperation, MeterError.BAD_RATES_LIST,
                            f"meter {name!r} takes {count} rates, the call gives {len(pairs)}")
        for (r0, b0), (r1, b1) in zip(pairs, pairs[1:]):
            if r0 > r1:
                raise CallError(idl.InvalidMeterOperation, MeterError.INVALID_INFO_RATE_VALUE,
                                f"rate {r0} is above the next rate {r1}")
            if b0 > b1:
                raise CallError(idl.InvalidMeterOperation, MeterError.INVALID_BURST_SIZE_VALUE,
                                f"burst {b0} is above the next burst {b1}")
        return pairs

    def bm_meter_set_rates(self, a) -> None:
        name = self._meter(a.get("meter_array_name"))
        index = self._meter_index(name, a.get("index"))
        rates = self._rates(name, a.get("rates", []))
        table = self._direct_table(name)
        with runtime_errors(idl.InvalidMeterOperation, {}, MeterError.ERROR):
            if table is not None:
                self.tables().set_index_meter_rates(table, index, rates)
            else:
                self.sw.meter_set_rates(name, index, rates)

    def bm_meter_array_set_rates(self, a) -> None:
        name = self._meter(a.get("meter_array_name"))
        rates = self._rates(name, a.get("rates", []))
        table = self._direct_table(name)
        with runtime_errors(idl.InvalidMeterOperation, {}, MeterError.ERROR):
            if table is not None:
                self.tables().set_all_meter_rates(table, rates)
                return
            for index in range(self._array_size("meter_arrays", name)):
                self.sw.meter_set_rates(name, index, rates)

    def bm_meter_get_rates(self, a) -> list[dict]:
        name = self._meter(a.get("meter_array_name"))
        index = self._meter_index(name, a.get("index"))
        table = self._direct_table(name)
        if table is not None:
            rates = self.tables().index_meter_rates(table, index)
        else:
            rates = self.sw.meter_get_rates(name, index) or []
        return [{"units_per_micros": r, "burst_size": b} for r, b in rates]

    # --------------------------------------------------------------------- registers
    def _register(self, name) -> str:
        if not self.sw.has_program or name not in self.sw.registers():
            raise CallError(idl.InvalidRegisterOperation, RegisterError.INVALID_REGISTER_NAME,
                            f"no register named {name!r}")
        return name

    def _register_index(self, name: str, index) -> int:
        if not isinstance(index, int) or not 0 <= index < self.sw.register_size(name):
            raise CallError(idl.InvalidRegisterOperation, RegisterError.INVALID_INDEX,
                            f"index {index} of register {name!r}")
        return index

    def _cell(self, name: str, value: int) -> int:
        """BMv2 keeps the value's low bits, as many as the register has."""
        return value & ((1 << self.sw.register_bitwidth(name)) - 1)

    def bm_register_read(self, a) -> int:
        name = self._register(a.get("register_array_name"))
        return as_i64(self.sw.register_read(name, self._register_index(name, a.get("idx"))))

    def bm_register_read_all(self, a) -> list[int]:
        name = self._register(a.get("register_array_name"))
        return [as_i64(v) for v in self.sw.register_read_all(name)]

    def bm_register_write(self, a) -> None:
        name = self._register(a.get("register_array_name"))
        index = self._register_index(name, a.get("index"))
        self.sw.register_write(name, index, self._cell(name, a.get("value", 0)))

    def bm_register_write_range(self, a) -> None:
        name = self._register(a.get("register_array_name"))
        start, end = a.get("start_index", 0), a.get("end_index", 0)
        if not 0 <= start <= end <= self.sw.register_size(name):
            raise CallError(idl.InvalidRegisterOperation, RegisterError.INVALID_INDEX,
                            f"range [{start}, {end}) of register {name!r}")
        value = self._cell(name, a.get("value", 0))
        for index in range(start, end):
            self.sw.register_write(name, index, value)

    def bm_register_reset(self, a) -> None:
        self.sw.register_reset(self._register(a.get("register_array_name")))

    # -------------------------------------------------------------- parse value sets
    def _vset(self, name) -> str:
        if not self.sw.has_program or name not in self.sw.parse_vsets():
            raise CallError(idl.InvalidParseVSetOperation, ParseVSetError.INVALID_PARSE_VSET_NAME,
                            f"no parser value set named {name!r}")
        return name

    def bm_parse_vset_add(self, a) -> None:
        name = self._vset(a.get("parse_vset_name"))
        with runtime_errors(idl.InvalidParseVSetOperation, {}, ParseVSetError.ERROR):
            self.sw.parse_vset_add(name, int.from_bytes(a.get("value", b""), "big"))

    def bm_parse_vset_remove(self, a) -> None:
        name = self._vset(a.get("parse_vset_name"))
        with runtime_errors(idl.InvalidParseVSetOperation, {}, ParseVSetError.ERROR):
            self.sw.parse_vset_remove(name, int.from_bytes(a.get("value", b""), "big"))

    def bm_parse_vset_get(self, a) -> list[bytes]:
        name = self._vset(a.get("parse_vset_name"))
        n = nbytes(self.sw.parse_vset_bitwidth(name))
        return [value.to_bytes(n, "big") for value, _ in self.sw.parse_vset_values(name)]

    def bm_parse_vset_clear(self, a) -> None:
        self.sw.parse_vset_clear(self._vset(a.get("parse_vset_name")))

    # ------------------------------------------------------------------------ hashes
    def _set_crc(self, a, key: str, width: int) -> None:
        name = a.get("calc_name")
        if not self.sw.has_program or name not in self.sw.crc_calculations():
            raise CallError(idl.InvalidCrcOperation, CrcError.INVALID_CALCULATION_NAME,
                            f"no custom CRC calculation named {name!r}")
        if self.sw.crc_width(name) != width:
            raise CallError(idl.InvalidCrcOperation, CrcError.WRONG_TYPE_CALCULATION,
                            f"{name!r} is a {self.sw.crc_width(name)}-bit CRC")
        c = a.get(key) or {}
        mask = (1 << width) - 1
        with runtime_errors(idl.InvalidCrcOperation, {}, CrcError.INVALID_CONFIG):
            self.sw.set_crc_parameters(name, c.get("polynomial", 0) & mask,
                                       c.get("initial_remainder", 0) & mask,
                                       c.get("final_xor_value", 0) & mask,
                                       c.get("data_reflected", False),
                                       c.get("remainder_reflected", False))

    def bm_set_crc16_custom_parameters(self, a) -> None:
        self._set_crc(a, "crc16_config", 16)

    def bm_set_crc32_custom_parameters(self, a) -> None:
        self._set_crc(a, "crc32_config", 32)

    def bm_set_toeplitz_hash_key(self, a) -> None:
        raise CallError(idl.InvalidToeplitzHashOperation, ToeplitzError.INVALID_CALCULATION_NAME,
                        f"no Toeplitz hash calculation named {a.get('calc_name')!r}")

    # ---------------------------------------------------------------------- learning
    def _learning(self, a) -> None:
        lists = [item.get("id") for item in self.doc().get("learn_lists", ())]
        if a.get("list_id") not in lists:
            raise CallError(idl.InvalidLearnOperation, LearnError.INVALID_LIST_ID,
                            f"no learning list {a.get('list_id')}")
        raise CallError(idl.InvalidLearnOperation, LearnError.ERROR,
                        "inaemu's switch sends digests over P4Runtime, not nanomsg")

    bm_learning_ack = bm_learning_ack_buffer = _learning
    bm_learning_set_timeout = bm_learning_set_buffer_size = _learning

    # --------------------------------------------------------- multicast (SimplePreLAG)
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

    # ------------------------------------------------------ simple_switch's own calls
    def _mirroring_errors(self):
        return runtime_errors(idl.InvalidMirroringOperation,
                              {NotFound: MirroringError.SESSION_NOT_FOUND},
                              MirroringError.SESSION_NOT_FOUND)

    def mirroring_session_add(self, a) -> None:
        config = a.get("config") or {}
        with runtime_errors(idl.InvalidMirroringOperation, {},
                            MirroringError.SESSION_NOT_FOUND):
            self.sw.mirroring_add(a.get("mirror_id"), port=config.get("port"),
                                  mgid=config.get("mgid"))

    def mirroring_session_delete(self, a) -> None:
        with self._mirroring_errors():
            self.sw.mirroring_delete(a.get("mirror_id"))

    def mirroring_session_get(self, a) -> dict:
        with self._mirroring_errors():
            found = self.sw.mirroring_get(a.get("mirror_id"))
        if found is None:
            raise CallError(idl.InvalidMirroringOperation, MirroringError.SESSION_NOT_FOUND,
                            f"no mirroring session {a.get('mirror_id')}")
        return {k: v for k, v in found.items() if v is not None}

    def mirroring_mapping_add(self, a) -> int:
        try:
            self.sw.mirroring_add(a.get("mirror_id"), port=a.get("egress_port"))
        except P4SwitchError:
            return 0
        self.mirror_mappings[a.get("mirror_id")] = a.get("egress_port")
        return 1

    def mirroring_mapping_delete(self, a) -> int:
        try:
            self.sw.mirroring_delete(a.get("mirror_id"))
        except P4SwitchError:
            return 0
        return 1

    def mirroring_mapping_get_egress_port(self, a) -> int:
        try:
            found = self.sw.mirroring_get(a.get("mirror_id"))
        except P4SwitchError:
            found = None
        return -1 if found is None or found.get("port") is None else found["port"]

    def _queue_priority(self, priority) -> int:
        if not 0 <= priority < self.sw.priority_queues:
            raise ApplicationFailure(f"priority {priority} is not one of the switch's "
                                     f"{self.sw.priority_queues} queues (--priority-queues)")
        return priority

    def _queues(self, set_, value, port=None, priority=None) -> int:
        try:
            set_(value, port=port, priority=priority)
        except P4SwitchError as e:
            raise ApplicationFailure(str(e)) from None
        return 0

    def set_egress_queue_depth(self, a) -> int:
        return self._queues(self.sw.set_queue_depth, a.get("depth_pkts"), a.get("port_num"))

    def set_all_egress_queue_depths(self, a) -> int:
        return self._queues(self.sw.set_queue_depth, a.get("depth_pkts"))

    def set_egress_queue_rate(self, a) -> int:
        return self._queues(self.sw.set_queue_rate, a.get("rate_pps"), a.get("port_num"))

    def set_all_egress_queue_rates(self, a) -> int:
        return self._queues(self.sw.set_queue_rate, a.get("rate_pps"))

    def set_egress_priority_queue_depth(self, a) -> int:
        return self._queues(self.sw.set_queue_depth, a.get("depth_pkts"), a.get("port_num"),
                            self._queue_priority(a.get("priority")))

    def set_egress_priority_queue_rate(self, a) -> int:
        return self._queues(self.sw.set_queue_rate, a.get("rate_pps"), a.get("port_num"),
                            self._queue_priority(a.get("priority")))

    def get_time_elapsed_us(self, a) -> int:
        return int((self.clock() - self.started) * 1e6)

    def get_time_since_epoch_us(self, a) -> int:
        return int(time.time() * 1e6)

