"""Table entries (direct and indirect), default entries, and their direct counters and meters.

Entries are identified as in P4Runtime: by table, match key and priority. The runtime finds the
handle for that key (`table_find`); the server never keeps its own copy of the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import match_keys, one_shot
from .actions import decode_action, encode_action
from .device_state import DeviceState
from .errors import (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNIMPLEMENTED,
                     UNKNOWN, RequestError)
from .idle_timeout import due
from .meter_config import meter_rates

Update = p4runtime_pb2.Update
ActionRef = p4info_pb2.ActionRef
NewMessage = Callable[[], p4runtime_pb2.TableEntry]  # a fresh entry to fill, inside the reply


@dataclass(frozen=True)
class EntryTarget:
    """What an entry runs: an action with its params, or an action profile member/group."""

    kind: str  # "action", "member", "group" or "one_shot"
    action: str = ""  # JSON action name, for "action"
    params: tuple[int, ...] = ()
    handle: int = 0  # runtime member/group handle, for "member"/"group"
    actions: tuple = ()  # (JSON action name, params) pairs, for "one_shot"


def table_label(table: p4info_pb2.Table) -> str:
    return f"table '{table.preamble.name}'"


def write(state: DeviceState, kind: int, entry: p4runtime_pb2.TableEntry) -> None:
    pipeline = state.pipeline
    if not entry.table_id:
        raise RequestError(INVALID_ARGUMENT, "table entry: table id 0 / missing")
    table = pipeline.index.table(entry.table_id)
    where = table_label(table)
    ageing = _check_idle_timeout(table, entry)
    if entry.is_default_action:
        _write_default(state, kind, table, entry)
        return
    if table.is_const_table:
        raise RequestError(PERMISSION_DENIED, f"{where}: const table, entries cannot be changed")
    keys = match_keys.decode_keys(pipeline.index, table, entry.match, where)
    priority = match_keys.check_priority(table, entry.priority, where)
    name = pipeline.json_name(table)
    sw = state.switch
    table_id = table.preamble.id
    if kind == Update.INSERT:
        if not entry.HasField("action"):
            raise RequestError(INVALID_ARGUMENT, f"{where}: INSERT without an action")
        target = _decode_table_action(state, table, entry.action, where, default=False)
        _check_direct_resources(state, table, entry, where)
        handle = _add(state, table, keys, priority, target, entry, where)
        try:
            _write_direct_resources(state, table, handle, entry, where)
            if ageing:
                state.call(where, sw.table_set_ttl, name, handle, entry.idle_timeout_ns)
        except RequestError:
            _delete(state, table, handle, where)
            raise
        _remember_metadata(state, (table_id, handle), entry)
        return
    handle = state.call(where, sw.table_find, name, keys, priority)
    if handle is None:
        raise RequestError(NOT_FOUND, f"{where}: no entry with this match key and priority")
    if kind == Update.DELETE:
        _delete(state, table, handle, where)
        return
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: unknown update type {kind}")
    _check_direct_resources(state, table, entry, where)
    if entry.HasField("action"):
        target = _decode_table_action(state, table, entry.action, where, default=False)
        _modify(state, name, handle, target, where)
    _write_direct_resources(state, table, handle, entry, where)
    if ageing:         # a MODIFY sets the TTL again and restarts the idle clock, as PI does
        state.call(where, sw.table_set_ttl, name, handle, entry.idle_timeout_ns)
    _remember_metadata(state, (table_id, handle), entry)


def _check_idle_timeout(table: p4info_pb2.Table, entry: p4runtime_pb2.TableEntry) -> bool:
    """The idle-timeout fields of a written entry, checked with simple_switch_grpc's codes and
    words; whether the table ages its entries."""
    if entry.HasField("time_since_last_hit"):
        raise RequestError(INVALID_ARGUMENT,
                           "has_time_since_last_hit must not be set in WriteRequest")
    if entry.idle_timeout_ns < 0:
        raise RequestError(INVALID_ARGUMENT, "idle_timeout_ns must be a positive value")
    ageing = table.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    if entry.idle_timeout_ns and not ageing:
        raise RequestError(INVALID_ARGUMENT, "idle_timeout_ns must be set to 0 for tables "
                                             "which do not support idle timeout")
    if entry.idle_timeout_ns and entry.is_default_action:
        # the specification's rule (simple_switch_grpc takes it and ignores the TTL)
        raise RequestError(INVALID_ARGUMENT, f"{table_label(table)} default entry: "
                                             "idle_timeout_ns must be 0 (a default entry "
                                             "never ages)")
    return ageing


def idle_notification(state: DeviceState) -> p4runtime_pb2.IdleTimeoutNotification | None:
    """The entries of ageing tables due a report now (idle_timeout.due), marked reported, as
    one notification; None if none is due."""
    notification = None
    sw = state.switch
    now = sw.now()
    for table in state.pipeline.index.all("table"):
        if table.idle_timeout_behavior != p4info_pb2.Table.NOTIFY_CONTROL:
            continue
        where = table_label(table)
        name = state.pipeline.json_name(table)
        idle = state.call(where, sw.table_idle, name)
        reported = state.idle_reported.setdefault(table.preamble.id, {})
        alive = {handle for handle, _, _ in idle}
        for handle in [h for h in reported if h not in alive]:
            del reported[handle]           # deleted since: a new entry may get its handle
        handles = set(due(idle, reported, now))
        if not handles:
            continue
        ttls = {handle: ttl for handle, ttl, _ in idle}
        needs_priority = match_keys.needs_priority(table)
        if notification is None:
            notification = p4runtime_pb2.IdleTimeoutNotification()
        for runtime_entry in state.call(where, sw.table_entries, name):
            handle = runtime_entry.handle
            if handle not in handles:
                continue
            reported[handle] = now
            message = notification.table_entry.add()
            message.table_id = table.preamble.id
            message.match.extend(match_keys.encode_keys(table, runtime_entry.keys))
            message.priority = (runtime_entry.priority or 0) if needs_priority else 0
            message.metadata = state.entry_metadata.get((table.preamble.id, handle), b"")
            message.idle_timeout_ns = ttls[handle]
    return notification


def _remember_metadata(state: DeviceState, slot: tuple[int, int], entry) -> None:
    if entry.metadata:
        state.entry_metadata[slot] = bytes(entry.metadata)
    else:
        state.entry_metadata.pop(slot, None)


def _decode_table_action(state, table, table_action, where, *, default: bool):
    """The EntryTarget a TableAction names, checked against the table."""
    pipeline = state.pipeline
    which = table_action.WhichOneof("type")
    profile = pipeline.index.action_profile_of(table)
    if which == "action":
        if profile is not None:
            raise RequestError(
                INVALID_ARGUMENT, f"{where}: indirect table needs a member or group, not an action"
            )
        allowed = {
            ref.id for ref in table.action_refs
            if ref.scope != (ActionRef.TABLE_ONLY if default else ActionRef.DEFAULT_ONLY)
        }
        name, params = decode_action(pipeline, table_action.action, allowed, where)
        return EntryTarget("action", action=name, params=params)
    if which in ("action_profile_member_id", "action_profile_group_id"):
        if profile is None:
            raise RequestError(
                INVALID_ARGUMENT, f"{where}: direct table takes an action, not a profile {which}"
            )
        member = which == "action_profile_member_id"
        ids = (state.members if member else state.groups).get(profile.preamble.id, {})
        wanted = getattr(table_action, which)
        if wanted not in ids:
            what = "member" if member else "group"
            raise RequestError(
                NOT_FOUND,
                f"{where}: action profile '{profile.preamble.name}' has no {what} {wanted}",
            )
        return EntryTarget("member" if member else "group", handle=ids[wanted])
    if which == "action_profile_action_set":
        if profile is None:
            raise RequestError(
                INVALID_ARGUMENT, f"{where}: direct table takes an action, not an action set"
            )
        action_set = table_action.action_profile_action_set
        actions = one_shot.decode(state, table, profile, action_set, where)
        return EntryTarget("one_shot", actions=tuple(actions))
    raise RequestError(INVALID_ARGUMENT, f"{where}: table action is empty")


def _add(state, table, keys, priority, target: EntryTarget, entry, where) -> int:
    sw = state.switch
    name = state.pipeline.json_name(table)
    if target.kind == "one_shot":
        profile = state.pipeline.index.action_profile_of(table)
        handle, record = one_shot.install(
            state, name, profile, keys, priority, target.actions, where
        )
        record.action_set.CopyFrom(one_shot.canonical_copy(entry.action.action_profile_action_set))
        state.one_shots[(table.preamble.id, handle)] = record
        return handle
    try:
        if target.kind == "action":
            return state.call(
                where, sw.table_add, name, keys, target.action, target.params, priority=priority
            )
        add = sw.table_add_member if target.kind == "member" else sw.table_add_group
        return state.call(where, add, name, keys, target.handle, priority=priority)
    except RequestError as error:
        if error.code != RESOURCE_EXHAUSTED:
            raise
        raise table_full(name, table) from None


def table_full(name: str, table: p4info_pb2.Table) -> RequestError:
    """An INSERT into a full table. UNKNOWN, the code simple_switch_grpc gives it (its message:
    "Error when adding match entry to target"; the P4Runtime specification would have
    RESOURCE_EXHAUSTED), with a message that says what happened."""
    size = f" ({table.size} entries, its size)" if table.size else ""
    return RequestError(UNKNOWN, f"table '{name}' is full{size}: delete entries before adding "
                                 "more, or give the table a larger size in the program")


def _delete(state, table, handle, where) -> None:
    """Delete an entry and whatever the server kept for it."""
    key = (table.preamble.id, handle)
    state.call(where, state.switch.table_delete, state.pipeline.json_name(table), handle)
    state.direct_meter_configs.pop(key, None)
    state.entry_metadata.pop(key, None)
    record = state.one_shots.pop(key, None)
    if record is not None:
        one_shot.remove(state, record)


def _modify(state, name, handle, target: EntryTarget, where) -> None:
    if target.kind != "action":
        raise RequestError(
            UNIMPLEMENTED, f"{where}: MODIFY of an indirect entry (delete and insert instead)"
        )
    state.call(where, state.switch.table_modify, name, handle, target.action, target.params)


def _check_direct_resources(state, table, entry, where) -> None:
    index = state.pipeline.index
    if entry.HasField("counter_data") and index.direct_resource(table, "direct counter") is None:
        raise RequestError(
            INVALID_ARGUMENT, f"{where}: counter_data given, table has no direct counter"
        )
    if entry.HasField("meter_config"):
        if index.direct_resource(table, "direct meter") is None:
            raise RequestError(
                INVALID_ARGUMENT, f"{where}: meter_config given, table has no direct meter"
            )
        meter_rates(entry.meter_config)  # checks the config before anything changes


def _write_direct_resources(state, table, handle, entry, where) -> None:
    _check_direct_resources(state, table, entry, where)
    name = state.pipeline.json_name(table)
    if entry.HasField("counter_data"):
        data = entry.counter_data
        state.call(
            where, state.switch.direct_counter_write, name, handle,
            data.packet_count, data.byte_count,
        )
    if entry.HasField("meter_config"):
        rates = meter_rates(entry.meter_config)
        state.call(where, state.switch.direct_meter_set_rates, name, handle, rates)
        state.direct_meter_configs[(table.preamble.id, handle)] = entry.meter_config


def _write_default(state, kind, table, entry) -> None:
    where = table_label(table) + " default entry"
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY is allowed")
    if entry.match or entry.priority:
        raise RequestError(INVALID_ARGUMENT, f"{where}: must have no match and no priority")
    if table.const_default_action_id:
        raise RequestError(PERMISSION_DENIED, f"{where}: the default action is const")
    sw = state.switch
    name = state.pipeline.json_name(table)
    if not entry.HasField("action"):
        state.call(where, sw.table_reset_default, name)
        return
    target = _decode_table_action(state, table, entry.action, where, default=True)
    if target.kind == "one_shot":
        raise RequestError(UNIMPLEMENTED, f"{where}: a one-shot action set as default action")
    if target.kind == "action":
        state.call(where, sw.table_set_default, name, target.action, target.params)
    elif target.kind == "member":
        state.call(where, sw.table_set_default_member, name, target.handle)
    else:
        state.call(where, sw.table_set_default_group, name, target.handle)


# -- reads --------------------------------------------------------------------------------------


def read(state: DeviceState, request: p4runtime_pb2.TableEntry, new: NewMessage) -> None:
    """Fill `new()` TableEntries with the entries a (possibly wildcard) read request covers."""
    index = state.pipeline.index
    tables = [index.table(request.table_id)] if request.table_id else index.all("table")
    for table in tables:
        if request.is_default_action:
            _read_default(state, table, new())
        else:
            _read_table(state, table, request, new)


def read_with_handles(
    state: DeviceState, request: p4runtime_pb2.TableEntry, resource: str, new: NewMessage
) -> list[int]:
    """Fill `new()` TableEntries for the tables with a direct `resource` a read covers; returns
    the runtime handle of each entry filled, in order."""
    index = state.pipeline.index
    if request.table_id:
        tables = [index.table(request.table_id)]
        if index.direct_resource(tables[0], resource) is None:
            raise RequestError(INVALID_ARGUMENT, f"{table_label(tables[0])} has no {resource}")
    else:
        tables = [t for t in index.all("table") if index.direct_resource(t, resource) is not None]
    handles = []
    for table in tables:
        handles.extend(_read_table(state, table, request, new))
    return handles


def locate(state: DeviceState, entry: p4runtime_pb2.TableEntry, resource: str):
    """(P4Info table, runtime handle, label) of the one entry a direct-resource update names."""
    index = state.pipeline.index
    if not entry.table_id:
        raise RequestError(INVALID_ARGUMENT, f"{resource}: table entry has no table id")
    table = index.table(entry.table_id)
    where = f"{resource} of {table_label(table)}"
    if index.direct_resource(table, resource) is None:
        raise RequestError(INVALID_ARGUMENT, f"{where}: the table has no {resource}")
    keys = match_keys.decode_keys(index, table, entry.match, where)
    priority = match_keys.check_priority(table, entry.priority, where)
    name = state.pipeline.json_name(table)
    handle = state.call(where, state.switch.table_find, name, keys, priority)
    if handle is None:
        raise RequestError(NOT_FOUND, f"{where}: no entry with this match key and priority")
    return table, handle, where


def _read_table(state, table, request, new: NewMessage) -> list[int]:
    pipeline = state.pipeline
    where = table_label(table)
    keys = None
    if request.match:
        keys = match_keys.decode_keys(pipeline.index, table, request.match, where)
    name = pipeline.json_name(table)
    counter = pipeline.index.direct_resource(table, "direct counter")
    needs_priority = match_keys.needs_priority(table)
    ageing = {}
    if table.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL:
        ageing = {h: (ttl, idle) for h, ttl, idle in
                  state.call(where, state.switch.table_idle, name)}
    handles = []
    for runtime_entry in state.call(where, state.switch.table_entries, name):
        if keys is not None and list(runtime_entry.keys) != keys:
            continue
        # exact/lpm tables have no P4Runtime priority (p4c still numbers their const entries)
        priority = (runtime_entry.priority or 0) if needs_priority else 0
        if request.priority and priority != request.priority:
            continue
        message = new()
        message.table_id = table.preamble.id
        message.priority = priority
        message.match.extend(match_keys.encode_keys(table, runtime_entry.keys))
        _encode_target(state, table, runtime_entry, message.action)
        if table.is_const_table:
            message.is_const = True
        handle = runtime_entry.handle
        message.metadata = state.entry_metadata.get((table.preamble.id, handle), b"")
        if handle in ageing:
            ttl, idle = ageing[handle]
            message.idle_timeout_ns = ttl
            if request.HasField("time_since_last_hit"):
                message.time_since_last_hit.elapsed_ns = idle
        if request.HasField("counter_data") and counter is not None:
            packets, octets = state.call(where, state.switch.direct_counter_read, name, handle)
            message.counter_data.packet_count = packets
            message.counter_data.byte_count = octets
        if request.HasField("meter_config"):
            config = state.direct_meter_configs.get((table.preamble.id, handle))
            if config is not None:
                message.meter_config.CopyFrom(config)
        handles.append(handle)
    return handles


def _encode_target(state, table, runtime_entry, table_action) -> None:
    profile = state.pipeline.index.action_profile_of(table)
    if profile is None:
        allowed = state.pipeline.index.table_action_ids(table)
        encode_action(
            state.pipeline, runtime_entry.action, runtime_entry.params, allowed,
            table_action.action,
        )
        return
    record = state.one_shots.get((table.preamble.id, runtime_entry.handle))
    if record is not None:
        table_action.action_profile_action_set.CopyFrom(record.action_set)
        return
    pid = profile.preamble.id
    if getattr(runtime_entry, "group", None) is not None:
        table_action.action_profile_group_id = _client_id(
            state.groups.get(pid, {}), runtime_entry.group
        )
    else:
        table_action.action_profile_member_id = _client_id(
            state.members.get(pid, {}), runtime_entry.member
        )


def _client_id(ids: dict[int, int], handle: int) -> int:
    for client_id, runtime_handle in ids.items():
        if runtime_handle == handle:
            return client_id
    raise RequestError(NOT_FOUND, f"runtime handle {handle} has no P4Runtime id")


def _read_default(state, table, message: p4runtime_pb2.TableEntry) -> None:
    where = table_label(table) + " default entry"
    message.table_id = table.preamble.id
    message.is_default_action = True
    if state.pipeline.index.action_profile_of(table) is not None:
        return  # the runtime reports indirect defaults by action only; leave it unset
    name = state.pipeline.json_name(table)
    action, params = state.call(where, state.switch.table_get_default, name)
    allowed = state.pipeline.index.table_action_ids(table)
    encode_action(state.pipeline, action, params, allowed, message.action.action)
