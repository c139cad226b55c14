"""BMv2's runtime services on one inaemu switch, and its `standard` service's calls.

`RuntimeService.call(service, method, args)` runs one Thrift call, holding the switch's lock, and
returns its result or raises `CallError` / `ApplicationFailure` (errors.py). The `standard`
service's table and profile calls are `tables.TableCalls`'; its other calls (management,
counters, meters, registers, value sets, CRCs, learning) are here; `simple_pre_lag` is
`pre.PreCalls`' and `simple_switch` is `simple_switch.SimpleSwitchCalls`'. What each answers,
error codes included, follows simple_switch 1.15 as probed call by call; where inaemu differs it
says so in docs/thrift.md.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

from p4switch.thrift import idl
from p4switch.thrift.errors import ApplicationFailure, CallError, runtime_errors
from p4switch.thrift.idl import (ApplicationErrorType, CounterError, CrcError, IdLookupError,
                                 LearnError, MeterError, ParseVSetError, RegisterError,
                                 ResourceType, SwapError, TableError, ToeplitzError)
from p4switch.thrift.learn_engine import UnknownLearnList
from p4switch.thrift.notifications import default_address
from p4switch.thrift.pre import PreCalls
from p4switch.thrift.simple_switch import SimpleSwitchCalls
from p4switch.thrift.tables import TableCalls, nbytes

RESOURCE_LISTS = {ResourceType.MATCH_TABLE: None, ResourceType.ACTION_PROFILE: "action_profiles",
                  ResourceType.COUNTER: "counter_arrays", ResourceType.METER: "meter_arrays",
                  ResourceType.REGISTER: "register_arrays",
                  ResourceType.LEARNING_LIST: "learn_lists"}


def as_i64(value: int) -> int:
    """A register cell as Thrift's signed 64-bit integer (BMv2 sends the low 64 bits)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


class RuntimeService:
    """The Thrift runtime of one switch: what simple_switch_CLI and bmv2stf.py talk to."""

    def __init__(self, switch, *, device_id: int = 0, thrift_port: int = 0,
                 config_text: str | None = None,
                 ports: Callable[[], list[tuple[int, str, bool]]] = list,
                 clock: Callable[[], float] = time.monotonic,
                 learning=None, notifications_address: str | None = None):
        """`learning`: the switch's learning.Learning when it runs as simple_switch (its
        samples published on `notifications_address`), None when P4Runtime takes them."""
        self.sw = switch
        self.learning = learning
        self.notifications_address = notifications_address or default_address(device_id)
        self.device_id = device_id
        self.thrift_port = thrift_port
        self.ports = ports
        self._config: tuple[object, str] | None = None
        self._tables: TableCalls | None = None
        self._tables_program = None
        self.pre = PreCalls(switch)
        self.simple_switch = SimpleSwitchCalls(switch, clock)
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
            if service == "simple_pre_lag":
                handler = getattr(self.pre, name, None)
            elif service == "simple_switch":
                handler = getattr(self.simple_switch, name, None)
            elif name.startswith("bm_mt_"):
                handler = getattr(self.tables(), name, None)
            else:
                handler = getattr(self, name, None)
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
                "notifications_socket": self.notifications_address}

    def bm_reset_state(self, a) -> None:
        """Everything back to the program as loaded: entries, registers, counters, meters, the
        multicast engine, clone sessions."""
        if self.sw.has_program:
            self.sw.load_config(self.sw.program.doc)
            self._config = None if self._config is None else (self.sw.program, self._config[1])
        self.pre.reset()

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
    def _learn(self, a, operation: str, *args) -> None:
        learning = self.learning
        if learning is None:
            lists = [item.get("id") for item in self.doc().get("learn_lists", ())]
            if a.get("list_id") not in lists:
                raise CallError(idl.InvalidLearnOperation, LearnError.INVALID_LIST_ID,
                                f"no learning list {a.get('list_id')}")
            raise CallError(idl.InvalidLearnOperation, LearnError.ERROR,
                            "this switch sends its digests over P4Runtime (run it with "
                            "--no-grpc, as simple_switch, for learning notifications)")
        try:
            learning.call(operation, a.get("list_id"), *args)
        except UnknownLearnList:
            raise CallError(idl.InvalidLearnOperation, LearnError.INVALID_LIST_ID,
                            f"no learning list {a.get('list_id')}") from None

    def bm_learning_ack(self, a) -> None:
        self._learn(a, "ack", a.get("buffer_id", 0), list(a.get("sample_ids") or ()))

    def bm_learning_ack_buffer(self, a) -> None:
        self._learn(a, "ack_buffer", a.get("buffer_id", 0))

    def bm_learning_set_timeout(self, a) -> None:
        # simple_switch takes the i32 as an unsigned int, as a buffer size as a size_t
        self._learn(a, "set_timeout", a.get("timeout_ms", 0) % (1 << 32))

    def bm_learning_set_buffer_size(self, a) -> None:
        self._learn(a, "set_max_samples", a.get("nb_samples", 0) % (1 << 64))
