"""BMv2's match-table and action-profile calls (`bm_mt_*`) over the runtime's tables.

BMv2 checks a call against the program's JSON before it touches a table: the full table and
action names, the table's kind (direct, indirect, with a selector), the match key's kinds and
byte lengths, the number of action parameters. Those checks are made here, in BMv2's order, so
that each failure has the code simple_switch gives; what is left to the runtime (a duplicate
key, a full table) maps by the runtime's error class. Handles are BMv2's (`handles.py`); keys
and action data travel as big-endian bytes, keys at their field's byte length, action data as
BMv2 reports it (the shortest bytes of the value).
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.runtime import (AlreadyExists, ExactKey, LpmKey, NotFound, PermissionDenied,
                              RangeKey, ResourceExhausted, TernaryKey, priority_from_bmv2,
                              priority_to_bmv2)
from p4switch.thrift.errors import CallError, runtime_errors
from p4switch.thrift.handles import INDEX_MASK, HandleBook
from p4switch.thrift.idl import ActionEntryType, InvalidTableOperation, MatchParamType, TableError

E = InvalidTableOperation
NO_PRIORITY = -1          # what BMv2 reports as the priority of an entry of an exact/LPM table

THRIFT_MATCH_TYPE = {"exact": MatchParamType.EXACT, "lpm": MatchParamType.LPM,
                     "ternary": MatchParamType.TERNARY, "range": MatchParamType.RANGE,
                     "valid": MatchParamType.VALID, "optional": MatchParamType.TERNARY}
PARAM_FIELD = {MatchParamType.EXACT: "exact", MatchParamType.LPM: "lpm",
               MatchParamType.TERNARY: "ternary", MatchParamType.VALID: "valid",
               MatchParamType.RANGE: "range"}


def fail(code: TableError, detail: str = "") -> CallError:
    return CallError(E, code, detail)


def nbytes(width: int) -> int:
    return max(1, (width + 7) // 8)


def data_bytes(value: int) -> bytes:
    """An action parameter as BMv2 reports it: the value's shortest big-endian bytes."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _int32(value: int) -> int:
    """An unsigned 32-bit number as Thrift's i32 carries it."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass(frozen=True)
class TableShape:
    """What BMv2 checks a call against: one table of the JSON."""

    name: str
    kind: str                                  # "simple", "indirect" or "indirect_ws"
    keys: tuple[tuple[str, int], ...]          # (match type, bit width), in key order
    actions: dict[str, tuple[int, ...]]        # action name -> its parameters' widths
    profile: str | None
    with_counters: bool
    direct_meters: bool
    support_timeout: bool
    default_action_const: bool
    default_entry_const: bool
    needs_priority: bool


@dataclass(frozen=True)
class ProfileShape:
    name: str
    with_selector: bool
    actions: dict[str, tuple[int, ...]]


def shapes_of(doc: dict, widths_of) -> tuple[dict[str, TableShape], dict[str, ProfileShape]]:
    """Every table and action profile of a BMv2 JSON document; `widths_of(table)` gives the
    key fields' (match type, width), which the runtime has resolved."""
    action_params = {a["name"]: tuple(p["bitwidth"] for p in a.get("runtime_data", ()))
                     for a in doc.get("actions", ())}
    by_id = {a["id"]: a["name"] for a in doc.get("actions", ())}
    tables: dict[str, TableShape] = {}
    profile_actions: dict[str, dict[str, tuple[int, ...]]] = {}
    for pipeline in doc.get("pipelines", ()):
        for t in pipeline.get("tables", ()):
            names = t.get("actions") or [by_id[i] for i in t.get("action_ids", ())]
            actions = {n: action_params.get(n, ()) for n in names}
            default = t.get("default_entry") or {}
            keys = tuple(widths_of(t["name"]))
            tables[t["name"]] = TableShape(
                name=t["name"], kind=t.get("type", "simple"), keys=keys, actions=actions,
                profile=t.get("action_profile"), with_counters=bool(t.get("with_counters")),
                direct_meters=t.get("direct_meters") is not None,
                support_timeout=bool(t.get("support_timeout")),
                default_action_const=bool(default.get("action_const")),
                default_entry_const=bool(default.get("action_entry_const")),
                needs_priority=any(m in ("ternary", "range", "optional") for m, _ in keys))
            if t.get("action_profile"):
                profile_actions.setdefault(t["action_profile"], actions)
    profiles = {p["name"]: ProfileShape(p["name"], p.get("selector") is not None,
                                        profile_actions.get(p["name"], {}))
                for pipeline in doc.get("pipelines", ())
                for p in pipeline.get("action_profiles", ())}
    return tables, profiles


class TableCalls:
    """The `bm_mt_*` methods of BMv2's standard service, over one loaded program."""

    def __init__(self, switch):
        self.sw = switch
        doc = switch.program.doc
        self.tables, self.profiles = shapes_of(
            doc, lambda name: [(m, w) for _, m, w in switch.table_info(name).keys])
        self.entries = {name: HandleBook(versioned=True) for name in self.tables}
        self.members = {name: HandleBook(versioned=False) for name in self.profiles}
        self.groups = {name: HandleBook(versioned=False) for name in self.profiles}
        self.indirect_default: dict[str, tuple[ActionEntryType, int]] = {}
        # BMv2's direct meters are a meter array indexed by the entries' handle index: rates set
        # there stay with the index, through deletions, for the next entry that takes it
        self.meter_tables = {m["name"]: m["binding"] for m in doc.get("meter_arrays", ())
                             if m.get("is_direct") and m.get("binding") in self.tables}
        self.meter_rates: dict[str, dict[int, list]] = {t: {} for t in self.meter_tables.values()}
        self.meter_default: dict[str, list] = {}

    # ------------------------------------------------------------------------ look-ups
    def table(self, name: str, kinds: tuple[str, ...] | None = None) -> TableShape:
        shape = self.tables.get(name)
        if shape is None:
            raise fail(TableError.INVALID_TABLE_NAME, f"no table named {name!r}")
        if kinds is not None and shape.kind not in kinds:
            raise fail(TableError.WRONG_TABLE_TYPE,
                       f"table {name!r} is {shape.kind}, this call is for {' or '.join(kinds)}")
        return shape

    def profile(self, name: str) -> ProfileShape:
        shape = self.profiles.get(name)
        if shape is None:
            raise fail(TableError.INVALID_ACTION_PROFILE_NAME, f"no action profile {name!r}")
        return shape

    def runtime_entry(self, table: str, handle: int) -> int:
        book = self.entries[table]
        status = book.status(handle)
        if status != "live":
            code = TableError.EXPIRED_HANDLE if status == "expired" else TableError.INVALID_HANDLE
            raise fail(code, f"table {table!r} has no entry with handle {handle}")
        return book.runtime(handle)

    def member_id(self, profile: str, handle: int) -> int:
        rid = self.members[profile].runtime(handle)
        if rid is None:
            raise fail(TableError.INVALID_MBR_HANDLE, f"profile {profile!r} has no member "
                                                      f"{handle}")
        return rid

    def group_id(self, profile: str, handle: int) -> int:
        rid = self.groups[profile].runtime(handle)
        if rid is None:
            raise fail(TableError.INVALID_GRP_HANDLE, f"profile {profile!r} has no group "
                                                      f"{handle}")
        return rid

    # ------------------------------------------------------------------- conversions
    def keys(self, shape: TableShape, match_key) -> list:
        if len(match_key) != len(shape.keys):
            raise fail(TableError.BAD_MATCH_KEY, f"table {shape.name!r} has {len(shape.keys)} "
                                                 f"key fields, the call gives {len(match_key)}")
        out = []
        for i, ((match, width), param) in enumerate(zip(shape.keys, match_key)):
            want = THRIFT_MATCH_TYPE[match]
            got = param.get("type")
            part = param.get(PARAM_FIELD.get(want, ""))
            if got != want or part is None:
                raise fail(TableError.BAD_MATCH_KEY, f"key field {i} of {shape.name!r} is "
                                                     f"{match}, the call gives type {got}")
            out.append(self._key(shape, i, match, width, part))
        return out

    @staticmethod
    def _value(shape, i, raw: bytes, width: int, what: str) -> int:
        if len(raw) != nbytes(width):
            raise fail(TableError.BAD_MATCH_KEY, f"key field {i} of {shape.name!r}: {what} has "
                                                 f"{len(raw)} bytes, the field {nbytes(width)}")
        value = int.from_bytes(raw, "big")
        if value >> width:
            # BMv2 keeps such a key and never matches it; inaemu refuses it
            raise fail(TableError.BAD_MATCH_KEY, f"key field {i} of {shape.name!r}: {what} "
                                                 f"0x{value:x} is wider than {width} bits")
        return value

    def _key(self, shape, i, match, width, part):
        if match == "valid":
            return ExactKey(1 if part.get("key") else 0)
        if match == "exact":
            return ExactKey(self._value(shape, i, part.get("key", b""), width, "the key"))
        if match == "lpm":
            length = part.get("prefix_length", 0)
            if not 0 <= length <= width:
                raise fail(TableError.BAD_MATCH_KEY, f"key field {i} of {shape.name!r}: prefix "
                                                     f"length {length} of a {width}-bit field")
            return LpmKey(self._value(shape, i, part.get("key", b""), width, "the key"), length)
        if match in ("ternary", "optional"):
            return TernaryKey(self._value(shape, i, part.get("key", b""), width, "the key"),
                              self._value(shape, i, part.get("mask", b""), width, "the mask"))
        low = self._value(shape, i, part.get("start", b""), width, "the start")
        high = self._value(shape, i, part.get("end_", b""), width, "the end")
        if low > high:
            raise fail(TableError.BAD_MATCH_KEY, f"key field {i} of {shape.name!r}: range "
                                                 f"start {low} > end {high}")
        return RangeKey(low, high)

    @staticmethod
    def params(actions: dict[str, tuple[int, ...]], action: str, data, where: str) -> tuple:
        widths = actions.get(action)
        if widths is None:
            raise fail(TableError.INVALID_ACTION_NAME, f"action {action!r} is not one of "
                                                       f"{where}'s")
        if len(data) != len(widths):
            raise fail(TableError.BAD_ACTION_DATA, f"action {action!r} takes {len(widths)} "
                                                   f"parameters, the call gives {len(data)}")
        # BMv2 keeps the bytes as given; a parameter is bit<w>, so the value is taken mod 2^w
        return tuple(int.from_bytes(raw, "big") & ((1 << w) - 1) for raw, w in zip(data, widths))

    @staticmethod
    def priority(shape: TableShape, options) -> int | None:
        if not shape.needs_priority:
            return None
        return priority_from_bmv2((options or {}).get("priority", 0))

    def key_params(self, shape: TableShape, entry) -> list[dict]:
        out = []
        for (match, width), key in zip(shape.keys, entry.keys):
            n = nbytes(width)
            if match == "valid":
                out.append({"type": MatchParamType.VALID, "valid": {"key": bool(key.value)}})
            elif match == "exact":
                out.append({"type": MatchParamType.EXACT,
                            "exact": {"key": key.value.to_bytes(n, "big")}})
            elif match == "lpm":
                out.append({"type": MatchParamType.LPM, "lpm": {
                    "key": key.value.to_bytes(n, "big"), "prefix_length": key.prefix_len}})
            elif match in ("ternary", "optional"):
                if isinstance(key, TernaryKey):
                    value, mask = key.value, key.mask
                else:                                   # an optional key the runtime kept
                    value = key.value or 0
                    mask = 0 if key.value is None else (1 << width) - 1
                out.append({"type": MatchParamType.TERNARY, "ternary": {
                    "key": value.to_bytes(n, "big"), "mask": mask.to_bytes(n, "big")}})
            else:
                out.append({"type": MatchParamType.RANGE, "range": {
                    "start": key.low.to_bytes(n, "big"), "end_": key.high.to_bytes(n, "big")}})
        return out

    def action_entry(self, profile: str | None, entry) -> dict:
        if entry.group is not None:
            return {"action_type": ActionEntryType.GRP_HANDLE,
                    "grp_handle": self._book_handle(self.groups[profile], entry.group)}
        if entry.member is not None:
            return {"action_type": ActionEntryType.MBR_HANDLE,
                    "mbr_handle": self._book_handle(self.members[profile], entry.member)}
        return {"action_type": ActionEntryType.ACTION_DATA, "action_name": entry.action,
                "action_data": [data_bytes(v) for v in entry.params]}

    @staticmethod
    def _book_handle(book: HandleBook, runtime_id: int) -> int:
        handle = book.handle_of(runtime_id)
        return book.add(runtime_id) if handle is None else handle

    def entry_record(self, shape: TableShape, handle: int, entry) -> dict:
        record = {"match_key": self.key_params(shape, entry),
                  "options": {"priority": priority_to_bmv2(entry.priority)
                              if shape.needs_priority and entry.priority is not None
                              else NO_PRIORITY},
                  "entry_handle": handle,
                  "action_entry": self.action_entry(shape.profile, entry)}
        if shape.support_timeout:     # BMv2 gives an entry's life once it has a timeout
            ttl_ns, idle_ns = self.sw.table_entry_age(shape.name, entry.handle)
            if ttl_ns:
                record["life"] = {"timeout_ms": _int32(ttl_ns // 1_000_000),
                                  "time_since_hit_ms": _int32(idle_ns // 1_000_000)}
        return record

    def listed(self, shape: TableShape) -> list[tuple[int, object]]:
        """(BMv2 handle, runtime entry) of every entry, in BMv2's order (by index)."""
        entries = {e.handle: e for e in self.sw.table_entries(shape.name)}
        book = self.entries[shape.name]
        book.reconcile(sorted(entries))
        return [(h, entries[r]) for h, r in book.live()]

    # --------------------------------------------------------------------- entries
    ENTRY_ERRORS = {AlreadyExists: TableError.DUPLICATE_ENTRY,
                    ResourceExhausted: TableError.TABLE_FULL,
                    PermissionDenied: TableError.IMMUTABLE_TABLE_ENTRIES,
                    NotFound: TableError.INVALID_HANDLE}

    def _insert(self, shape: TableShape, add) -> int:
        with runtime_errors(E, self.ENTRY_ERRORS, TableError.ERROR):
            runtime_handle = add()
        handle = self.entries[shape.name].add(runtime_handle)
        rates = self.index_meter_rates(shape.name, handle & INDEX_MASK)
        if shape.direct_meters and rates:
            self.sw.direct_meter_set_rates(shape.name, runtime_handle, rates)
        return handle

    def bm_mt_add_entry(self, a) -> int:
        shape = self.table(a.get("table_name"), ("simple",))
        keys = self.keys(shape, a.get("match_key", []))
        action = a.get("action_name")
        params = self.params(shape.actions, action, a.get("action_data", []), shape.name)
        return self._insert(shape, lambda: self.sw.table_add(
            shape.name, keys, action, params, priority=self.priority(shape, a.get("options"))))

    def bm_mt_indirect_add_entry(self, a) -> int:
        shape = self.table(a.get("table_name"), ("indirect", "indirect_ws"))
        keys = self.keys(shape, a.get("match_key", []))
        member = self.member_id(shape.profile, a.get("mbr_handle"))
        return self._insert(shape, lambda: self.sw.table_add_member(
            shape.name, keys, member, priority=self.priority(shape, a.get("options"))))

    def bm_mt_indirect_ws_add_entry(self, a) -> int:
        shape = self.table(a.get("table_name"), ("indirect_ws",))
        keys = self.keys(shape, a.get("match_key", []))
        group = self.group_id(shape.profile, a.get("grp_handle"))
        if not self.sw.act_prof_groups(shape.profile)[group]:
            raise fail(TableError.EMPTY_GRP, f"group {a.get('grp_handle')} has no member")
        return self._insert(shape, lambda: self.sw.table_add_group(
            shape.name, keys, group, priority=self.priority(shape, a.get("options"))))

    def _delete(self, a, kinds) -> None:
        shape = self.table(a.get("table_name"), kinds)
        handle = a.get("entry_handle")
        runtime_handle = self.runtime_entry(shape.name, handle)
        with runtime_errors(E, self.ENTRY_ERRORS, TableError.ERROR):
            self.sw.table_delete(shape.name, runtime_handle)
        self.entries[shape.name].remove(handle)

    def bm_mt_delete_entry(self, a) -> None:
        self._delete(a, ("simple",))

    def bm_mt_indirect_delete_entry(self, a) -> None:
        self._delete(a, ("indirect", "indirect_ws"))

    def bm_mt_modify_entry(self, a) -> None:
        shape = self.table(a.get("table_name"), ("simple",))
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        action = a.get("action_name")
        params = self.params(shape.actions, action, a.get("action_data", []), shape.name)
        with runtime_errors(E, self.ENTRY_ERRORS, TableError.ERROR):
            self.sw.table_modify(shape.name, runtime_handle, action, params)

    def bm_mt_indirect_modify_entry(self, a) -> None:
        shape = self.table(a.get("table_name"), ("indirect", "indirect_ws"))
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        member = self.member_id(shape.profile, a.get("mbr_handle"))
        with runtime_errors(E, self.ENTRY_ERRORS, TableError.ERROR):
            self.sw.table_modify_member(shape.name, runtime_handle, member)

    def bm_mt_indirect_ws_modify_entry(self, a) -> None:
        shape = self.table(a.get("table_name"), ("indirect_ws",))
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        group = self.group_id(shape.profile, a.get("grp_handle"))
        if not self.sw.act_prof_groups(shape.profile)[group]:
            raise fail(TableError.EMPTY_GRP, f"group {a.get('grp_handle')} has no member")
        with runtime_errors(E, self.ENTRY_ERRORS, TableError.ERROR):
            self.sw.table_modify_group(shape.name, runtime_handle, group)

    def bm_mt_get_num_entries(self, a) -> int:
        return len(self.sw.table_entries(self.table(a.get("table_name")).name))

    def bm_mt_clear_entries(self, a) -> None:
        shape = self.table(a.get("table_name"))
        with runtime_errors(E, self.ENTRY_ERRORS, TableError.ERROR):
            self.sw.table_clear(shape.name)
            if a.get("reset_default_entry"):
                self.sw.table_reset_default(shape.name)
                self.indirect_default.pop(shape.name, None)
        self.entries[shape.name].reset()

    # --------------------------------------------------------------- default entries
    def _check_default_mutable(self, shape: TableShape, action: str | None) -> None:
        if shape.default_entry_const:
            raise fail(TableError.DEFAULT_ENTRY_IS_CONST, f"{shape.name!r}'s default entry "
                                                          "is const")
        if shape.default_action_const and action != self.sw.table_get_default(shape.name)[0]:
            raise fail(TableError.DEFAULT_ACTION_IS_CONST, f"{shape.name!r}'s default action "
                                                           "is const")

    def bm_mt_set_default_action(self, a) -> None:
        shape = self.table(a.get("table_name"), ("simple",))
        action = a.get("action_name")
        params = self.params(shape.actions, action, a.get("action_data", []), shape.name)
        self._check_default_mutable(shape, action)
        with runtime_errors(E, {PermissionDenied: TableError.DEFAULT_ACTION_IS_CONST},
                            TableError.ERROR):
            self.sw.table_set_default(shape.name, action, params)

    def bm_mt_reset_default_entry(self, a) -> None:
        shape = self.table(a.get("table_name"), ("simple",))
        self._check_default_mutable(shape, self.sw.table_get_default(shape.name)[0])
        self.sw.table_reset_default(shape.name)

    def bm_mt_indirect_set_default_member(self, a) -> None:
        shape = self.table(a.get("table_name"), ("indirect", "indirect_ws"))
        member = self.member_id(shape.profile, a.get("mbr_handle"))
        with runtime_errors(E, {}, TableError.ERROR):
            self.sw.table_set_default_member(shape.name, member)
        self.indirect_default[shape.name] = (ActionEntryType.MBR_HANDLE, a.get("mbr_handle"))

    def bm_mt_indirect_ws_set_default_group(self, a) -> None:
        shape = self.table(a.get("table_name"), ("indirect_ws",))
        group = self.group_id(shape.profile, a.get("grp_handle"))
        if not self.sw.act_prof_groups(shape.profile)[group]:
            raise fail(TableError.EMPTY_GRP, f"group {a.get('grp_handle')} has no member")
        with runtime_errors(E, {}, TableError.ERROR):
            self.sw.table_set_default_group(shape.name, group)
        self.indirect_default[shape.name] = (ActionEntryType.GRP_HANDLE, a.get("grp_handle"))

    def bm_mt_indirect_reset_default_entry(self, a) -> None:
        shape = self.table(a.get("table_name"), ("indirect", "indirect_ws"))
        self.sw.table_reset_default(shape.name)
        self.indirect_default.pop(shape.name, None)

    def bm_mt_get_default_entry(self, a) -> dict:
        shape = self.table(a.get("table_name"))
        if shape.kind != "simple":
            kind, handle = self.indirect_default.get(shape.name, (ActionEntryType.NONE, None))
            if kind == ActionEntryType.NONE:
                return {"action_type": ActionEntryType.NONE}
            field = "mbr_handle" if kind == ActionEntryType.MBR_HANDLE else "grp_handle"
            return {"action_type": kind, field: handle}
        action, params = self.sw.table_get_default(shape.name)
        if action is None:
            return {"action_type": ActionEntryType.NONE}
        return {"action_type": ActionEntryType.ACTION_DATA, "action_name": action,
                "action_data": [data_bytes(v) for v in params]}

    # ------------------------------------------------------------------ reading entries
    def bm_mt_get_entries(self, a) -> list[dict]:
        shape = self.table(a.get("table_name"))
        return [self.entry_record(shape, h, e) for h, e in self.listed(shape)]

    def bm_mt_get_entry(self, a) -> dict:
        shape = self.table(a.get("table_name"))
        listed = dict(self.listed(shape))
        handle = a.get("entry_handle")
        self.runtime_entry(shape.name, handle)
        return self.entry_record(shape, handle, listed[handle])

    def bm_mt_get_entry_from_key(self, a) -> dict:
        shape = self.table(a.get("table_name"))
        keys = self.keys(shape, a.get("match_key", []))
        with runtime_errors(E, {}, TableError.BAD_MATCH_KEY):
            runtime_handle = self.sw.table_find(shape.name, keys,
                                                self.priority(shape, a.get("options")))
        if runtime_handle is None:
            raise fail(TableError.BAD_MATCH_KEY, f"{shape.name!r} has no entry with this key")
        for handle, entry in self.listed(shape):
            if entry.handle == runtime_handle:
                return self.entry_record(shape, handle, entry)
        raise fail(TableError.BAD_MATCH_KEY, f"{shape.name!r} has no entry with this key")

    # ------------------------------------------------------- direct counters and meters
    def _with_counters(self, a) -> TableShape:
        shape = self.table(a.get("table_name"))
        if not shape.with_counters:
            raise fail(TableError.COUNTERS_DISABLED, f"{shape.name!r} has no direct counter")
        return shape

    def bm_mt_read_counter(self, a) -> dict:
        shape = self._with_counters(a)
        packets, nbytes_ = self.sw.direct_counter_read(
            shape.name, self.runtime_entry(shape.name, a.get("entry_handle")))
        return {"bytes": nbytes_, "packets": packets}

    def bm_mt_write_counter(self, a) -> None:
        shape = self._with_counters(a)
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        value = a.get("value") or {}
        with runtime_errors(E, {}, TableError.ERROR):
            self.sw.direct_counter_write(shape.name, runtime_handle,
                                         value.get("packets", 0) % (1 << 64),
                                         value.get("bytes", 0) % (1 << 64))

    def bm_mt_reset_counters(self, a) -> None:
        shape = self._with_counters(a)
        for entry in self.sw.table_entries(shape.name):
            self.sw.direct_counter_write(shape.name, entry.handle, 0, 0)

    def _with_meters(self, a) -> TableShape:
        shape = self.table(a.get("table_name"))
        if not shape.direct_meters:
            raise fail(TableError.METERS_DISABLED, f"{shape.name!r} has no direct meter")
        return shape

    def bm_mt_set_meter_rates(self, a) -> None:
        shape = self._with_meters(a)
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        rates = [(r.get("units_per_micros", 0.0), r.get("burst_size", 0))
                 for r in a.get("rates", [])]
        with runtime_errors(E, {}, TableError.INVALID_METER_OPERATION):
            self.sw.direct_meter_set_rates(shape.name, runtime_handle, rates)
        self.meter_rates.setdefault(shape.name, {})[a.get("entry_handle") & INDEX_MASK] = rates

    def bm_mt_get_meter_rates(self, a) -> list[dict]:
        shape = self._with_meters(a)
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        rates = self.sw.direct_meter_get_rates(shape.name, runtime_handle) or []
        return [{"units_per_micros": r, "burst_size": b} for r, b in rates]

    # the direct meter arrays as `bm_meter_*` calls address them: by name and index
    def index_meter_rates(self, table: str, index: int) -> list:
        return self.meter_rates.get(table, {}).get(index) or self.meter_default.get(table, [])

    def _live_at(self, table: str, index: int) -> int | None:
        for handle, runtime_handle in self.entries[table].live():
            if handle & INDEX_MASK == index:
                return runtime_handle
        return None

    def set_index_meter_rates(self, table: str, index: int, rates: list) -> None:
        runtime_handle = self._live_at(table, index)
        if runtime_handle is not None:
            self.sw.direct_meter_set_rates(table, runtime_handle, rates)
        self.meter_rates[table][index] = rates

    def set_all_meter_rates(self, table: str, rates: list) -> None:
        self.listed(self.tables[table])
        for _, runtime_handle in self.entries[table].live():
            self.sw.direct_meter_set_rates(table, runtime_handle, rates)
        self.meter_rates[table].clear()
        self.meter_default[table] = rates

    def bm_mt_set_entry_ttl(self, a) -> None:
        self._set_ttl(a, ("simple",))

    def bm_mt_indirect_set_entry_ttl(self, a) -> None:
        self._set_ttl(a, ("indirect", "indirect_ws"))

    def _set_ttl(self, a, kinds) -> None:
        """An entry's idle timeout in ms (0: none); BMv2 keeps it as an unsigned 32-bit number
        (-5 is 2^32 - 5 ms, shown back as -5) and restarts the entry's idle time."""
        shape = self.table(a.get("table_name"), kinds)
        runtime_handle = self.runtime_entry(shape.name, a.get("entry_handle"))
        if not shape.support_timeout:
            raise fail(TableError.AGEING_DISABLED, f"{shape.name!r} does not support ageing")
        ttl_ms = a.get("timeout_ms") & 0xFFFFFFFF
        self.sw.table_set_ttl(shape.name, runtime_handle, ttl_ms * 1_000_000)

    # --------------------------------------------------------------- action profiles
    PROFILE_ERRORS = {ResourceExhausted: TableError.TABLE_FULL}

    def bm_mt_act_prof_add_member(self, a) -> int:
        prof = self.profile(a.get("act_prof_name"))
        action = a.get("action_name")
        params = self.params(prof.actions, action, a.get("action_data", []), prof.name)
        with runtime_errors(E, self.PROFILE_ERRORS, TableError.ERROR):
            member = self.sw.act_prof_add_member(prof.name, action, params)
        return self.members[prof.name].add(member)

    def bm_mt_act_prof_modify_member(self, a) -> None:
        prof = self.profile(a.get("act_prof_name"))
        member = self.member_id(prof.name, a.get("mbr_handle"))
        action = a.get("action_name")
        params = self.params(prof.actions, action, a.get("action_data", []), prof.name)
        with runtime_errors(E, self.PROFILE_ERRORS, TableError.ERROR):
            self.sw.act_prof_modify_member(prof.name, member, action, params)

    def _profile_users(self, prof: ProfileShape) -> list:
        return [e for t in self.tables.values() if t.profile == prof.name
                for e in self.sw.table_entries(t.name)]

    def bm_mt_act_prof_delete_member(self, a) -> None:
        prof = self.profile(a.get("act_prof_name"))
        handle = a.get("mbr_handle")
        member = self.member_id(prof.name, handle)
        in_group = any(member in ms for ms in self.sw.act_prof_groups(prof.name).values())
        if in_group or any(e.member == member for e in self._profile_users(prof)):
            raise fail(TableError.MBR_STILL_USED, f"member {handle} is used by an entry or a "
                                                  "group")
        self.sw.act_prof_delete_member(prof.name, member)
        self.members[prof.name].remove(handle)

    def bm_mt_act_prof_create_group(self, a) -> int:
        prof = self.profile(a.get("act_prof_name"))
        if not prof.with_selector:
            # BMv2 makes one, which no call can then use; inaemu's runtime has no groups there
            raise fail(TableError.NO_ACTION_PROFILE_SELECTION,
                       f"action profile {prof.name!r} has no selector")
        with runtime_errors(E, self.PROFILE_ERRORS, TableError.ERROR):
            group = self.sw.act_prof_create_group(prof.name)
        return self.groups[prof.name].add(group)

    def bm_mt_act_prof_delete_group(self, a) -> None:
        prof = self.profile(a.get("act_prof_name"))
        handle = a.get("grp_handle")
        group = self.group_id(prof.name, handle)
        if any(e.group == group for e in self._profile_users(prof)):
            raise fail(TableError.GRP_STILL_USED, f"group {handle} is used by an entry")
        self.sw.act_prof_delete_group(prof.name, group)
        self.groups[prof.name].remove(handle)

    def bm_mt_act_prof_add_member_to_group(self, a) -> None:
        prof = self.profile(a.get("act_prof_name"))
        member = self.member_id(prof.name, a.get("mbr_handle"))
        group = self.group_id(prof.name, a.get("grp_handle"))
        if member in self.sw.act_prof_groups(prof.name)[group]:
            raise fail(TableError.MBR_ALREADY_IN_GRP, f"member {a.get('mbr_handle')} is in "
                                                      f"group {a.get('grp_handle')}")
        self.sw.act_prof_add_member_to_group(prof.name, member, group)

    def bm_mt_act_prof_remove_member_from_group(self, a) -> None:
        prof = self.profile(a.get("act_prof_name"))
        member = self.member_id(prof.name, a.get("mbr_handle"))
        group = self.group_id(prof.name, a.get("grp_handle"))
        if member not in self.sw.act_prof_groups(prof.name)[group]:
            raise fail(TableError.MBR_NOT_IN_GRP, f"member {a.get('mbr_handle')} is not in "
                                                  f"group {a.get('grp_handle')}")
        self.sw.act_prof_remove_member_from_group(prof.name, member, group)

    def _member_record(self, prof: str, handle: int, member: int) -> dict:
        action, params = self.sw.act_prof_members(prof)[member]
        return {"mbr_handle": handle, "action_name": action,
                "action_data": [data_bytes(v) for v in params]}

    def bm_mt_act_prof_get_members(self, a) -> list[dict]:
        prof = self.profile(a.get("act_prof_name"))
        book = self.members[prof.name]
        book.reconcile(sorted(self.sw.act_prof_members(prof.name)))
        return [self._member_record(prof.name, h, m) for h, m in book.live()]

    def bm_mt_act_prof_get_member(self, a) -> dict:
        prof = self.profile(a.get("act_prof_name"))
        handle = a.get("mbr_handle")
        return self._member_record(prof.name, handle, self.member_id(prof.name, handle))

    def _group_record(self, prof: str, handle: int, group: int) -> dict:
        members = self.members[prof]
        return {"grp_handle": handle, "mbr_handles": [
            self._book_handle(members, m) for m in self.sw.act_prof_groups(prof)[group]]}

    def bm_mt_act_prof_get_groups(self, a) -> list[dict]:
        prof = self.profile(a.get("act_prof_name"))
        book = self.groups[prof.name]
        book.reconcile(sorted(self.sw.act_prof_groups(prof.name)))
        return [self._group_record(prof.name, h, g) for h, g in book.live()]

    def bm_mt_act_prof_get_group(self, a) -> dict:
        prof = self.profile(a.get("act_prof_name"))
        handle = a.get("grp_handle")
        return self._group_record(prof.name, handle, self.group_id(prof.name, handle))

