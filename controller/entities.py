"""Build P4Runtime entities from names, and read them back as plain data.

Sans-I/O: these functions turn (`ipv4_lpm`, `{"dstAddr": "10.0.0.1/32"}`, `ipv4_forward`, ...)
into `p4.v1` protobuf messages using a `P4InfoIndex`, and decode what a Read returns. Nothing here
opens a channel, so every rule about encoding is testable without a switch.

Match values, per key match type:
- exact, optional: a value (int, "10.0.0.1", "aa:bb:cc:dd:ee:ff", bytes);
- lpm: "10.0.0.0/24" or (value, prefix_len); bits beyond the prefix must be zero;
- ternary: (value, mask); range: (low, high).
A key left out of `match` is a wildcard (allowed for lpm, ternary, range and optional keys only),
and so is an lpm prefix of 0 or a ternary mask of 0: P4Runtime requires those to be omitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from p4.v1 import p4data_pb2, p4runtime_pb2

from controller.encoding import Value, decode, encode, to_int
from controller.errors import EncodingError, P4InfoError
from controller.p4info import Field, P4InfoIndex, Table


@dataclass(frozen=True)
class TableEntryView:
    """A table entry as read back: names and ints, no protobuf."""

    table: str
    match: dict[str, tuple[int, ...]]   # field -> (value,) / (value, prefix_len) / (value, mask) ...
    action: str
    params: dict[str, int]
    priority: int
    is_default: bool = False


# A match field as planned: (field id, kind, byte strings) with kind "exact", "optional"
# (value,), "lpm" (value, prefix_len as an int), "ternary" (value, mask), "range" (low, high).
Match = tuple[int, str, tuple]


@dataclass(frozen=True)
class EntryPlan:
    """A checked table entry as numbers and byte strings: what `table_entry` puts in a
    TableEntry message."""

    table_id: int
    matches: tuple[Match, ...]
    action_id: int
    params: tuple[tuple[int, bytes], ...]
    priority: int = 0


def _field_match(key: Field, raw: Any, where: str) -> Match | None:
    """One match field, or None when the value means "don't care" and must be omitted."""
    kind = key.match_type
    if kind in ("exact", "optional"):
        return (key.id, kind, (encode(raw, key.bitwidth, where=where),))
    if kind == "lpm":
        if isinstance(raw, str) and "/" in raw:
            address, _, length = raw.partition("/")
            raw = (address, length)
        if not isinstance(raw, (tuple, list)) or len(raw) != 2:
            raise EncodingError(f"{where}: an lpm key needs 'address/length' or (value, prefix_len)")
        value = to_int(raw[0], where=where)
        try:
            prefix_len = int(raw[1])
        except (TypeError, ValueError):
            raise EncodingError(f"{where}: prefix length {raw[1]!r} is not a number") from None
        if not 0 <= prefix_len <= key.bitwidth:
            raise EncodingError(f"{where}: prefix length {prefix_len} outside 0..{key.bitwidth}")
        host_bits = key.bitwidth - prefix_len
        if value & ((1 << host_bits) - 1):
            raise EncodingError(f"{where}: value has bits set beyond the /{prefix_len} prefix")
        if prefix_len == 0:
            return None
        return (key.id, kind, (encode(value, key.bitwidth, where=where), prefix_len))
    if kind == "ternary":
        if not isinstance(raw, (tuple, list)) or len(raw) != 2:
            raise EncodingError(f"{where}: a ternary key needs (value, mask)")
        value, mask = to_int(raw[0], where=where), to_int(raw[1], where=where)
        if mask == 0:
            return None
        return (key.id, kind, (encode(value & mask, key.bitwidth, where=where),
                               encode(mask, key.bitwidth, where=where)))
    if kind == "range":
        if not isinstance(raw, (tuple, list)) or len(raw) != 2:
            raise EncodingError(f"{where}: a range key needs (low, high)")
        return (key.id, kind, (encode(raw[0], key.bitwidth, where=where),
                               encode(raw[1], key.bitwidth, where=where)))
    raise EncodingError(f"{where}: match type {kind!r} is not supported")


def _action_params(index: P4InfoIndex, table: Table, action_name: str,
                   params: Mapping[str, Value]) -> tuple[int, tuple[tuple[int, bytes], ...]]:
    """(action id, (param id, value bytes) in P4Info order), checked against the table; kept
    per index for the (table, action, params) seen before: a fabric's routes and job entries
    repeat a few actions (a next hop, a group) thousands of times (fat-tree(40): 200,000
    entries, ~40 % of the controller's time per entry was this)."""
    try:
        key = (table.id, action_name, tuple(params.items()))
        cache = index.__dict__.setdefault("_action_plans", {})
        return cache[key]
    except TypeError:           # an unhashable value (a bytearray): planned each time
        return _plan_action_params(index, table, action_name, params)
    except KeyError:
        if len(cache) >= ACTION_PLANS_KEPT:     # job entries carry per-worker values: bounded
            cache.clear()
        planned = cache[key] = _plan_action_params(index, table, action_name, params)
        return planned


ACTION_PLANS_KEPT = 65536


def _plan_action_params(index: P4InfoIndex, table: Table, action_name: str,
                        params: Mapping[str, Value]) -> tuple[int, tuple[tuple[int, bytes], ...]]:
    action = index.action(action_name)
    if action.id not in table.action_ids:
        allowed = ", ".join(index.name_of(i) for i in table.action_ids)
        raise P4InfoError(f"action {action.name} is not allowed in table {table.name} "
                          f"(allowed: {allowed})")
    given = {action.param(name).name: value for name, value in params.items()}
    missing = [p.name for p in action.params if p.name not in given]
    if missing:
        raise EncodingError(f"action {action.name}: missing parameter(s) {', '.join(missing)}")
    return action.id, tuple(
        (p.id, encode(given[p.name], p.bitwidth, where=f"{action.name}.{p.name}"))
        for p in action.params)


def _action_message(action_id: int, params) -> p4runtime_pb2.Action:
    message = p4runtime_pb2.Action(action_id=action_id)
    for param_id, value in params:
        message.params.add(param_id=param_id, value=value)
    return message


def entry_plan(index: P4InfoIndex, table: str, match: Mapping[str, Any], action: str,
               params: Mapping[str, Value] | None = None,
               priority: int | None = None) -> EntryPlan:
    """A table entry for an insert, modify or delete, checked against the P4Info."""
    info = index.table(table)
    given = {info.key(name).name: value for name, value in match.items()}
    matches = []
    for key in info.keys:
        if key.name not in given:
            if key.match_type == "exact":
                raise EncodingError(f"table {info.name}: exact key {key.name} needs a value")
            continue
        planned = _field_match(key, given[key.name], f"{info.name}: key {key.name}")
        if planned is not None:
            matches.append(planned)
    if info.needs_priority:
        if priority is None or priority < 1:
            raise EncodingError(f"table {info.name} has ternary/range/optional keys: "
                                "its entries need a priority >= 1 (higher wins)")
    elif priority:
        raise EncodingError(f"table {info.name} takes no priority")
    action_id, values = _action_params(index, info, action, params or {})
    return EntryPlan(info.id, tuple(matches), action_id, values,
                     priority if info.needs_priority else 0)


def entry_message(plan: EntryPlan) -> p4runtime_pb2.TableEntry:
    """The TableEntry message of a plan."""
    entry = p4runtime_pb2.TableEntry(table_id=plan.table_id)
    for field_id, kind, values in plan.matches:
        fm = entry.match.add(field_id=field_id)
        if kind == "exact":
            fm.exact.value = values[0]
        elif kind == "optional":
            fm.optional.value = values[0]
        elif kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = values
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = values
        else:
            fm.range.low, fm.range.high = values
    if plan.priority:
        entry.priority = plan.priority
    entry.action.action.CopyFrom(_action_message(plan.action_id, plan.params))
    return entry


def table_entry(index: P4InfoIndex, table: str, match: Mapping[str, Any], action: str,
                params: Mapping[str, Value] | None = None,
                priority: int | None = None) -> p4runtime_pb2.TableEntry:
    """A TableEntry for an insert, modify or delete."""
    return entry_message(entry_plan(index, table, match, action, params, priority))


def default_entry(index: P4InfoIndex, table: str, action: str,
                  params: Mapping[str, Value] | None = None) -> p4runtime_pb2.TableEntry:
    """The default (miss) action of a table; write it with MODIFY."""
    info = index.table(table)
    entry = p4runtime_pb2.TableEntry(table_id=info.id, is_default_action=True)
    entry.action.action.CopyFrom(_action_message(*_action_params(index, info, action,
                                                                 params or {})))
    return entry


def multicast_group(group_id: int, replicas: Iterable[tuple[int, int]]) -> p4runtime_pb2.Entity:
    """A multicast group: (egress port, instance) pairs; instance becomes the replica's rid."""
    if not 1 <= group_id <= 0xFFFF:
        raise EncodingError(f"multicast group id {group_id} outside 1..65535")
    entity = p4runtime_pb2.Entity()
    group = entity.packet_replication_engine_entry.multicast_group_entry
    group.multicast_group_id = group_id
    for port, instance in replicas:
        group.replicas.add(egress_port=port, instance=instance)
    return entity


def counter_request(index: P4InfoIndex, name: str, cell: int | None = None) -> p4runtime_pb2.Entity:
    """A Read of one counter cell, or of every cell when `cell` is None."""
    info = index.counter(name)
    entity = p4runtime_pb2.Entity()
    entity.counter_entry.counter_id = info.id
    if cell is not None:
        _check_cell(info.name, info.size, cell)
        entity.counter_entry.index.index = cell
    return entity


def register_request(index: P4InfoIndex, name: str, cell: int | None = None) -> p4runtime_pb2.Entity:
    """A Read of one register cell, or of every cell when `cell` is None."""
    info = index.register(name)
    entity = p4runtime_pb2.Entity()
    entity.register_entry.register_id = info.id
    if cell is not None:
        _check_cell(info.name, info.size, cell)
        entity.register_entry.index.index = cell
    return entity


def register_write(index: P4InfoIndex, name: str, cell: int, value: Value) -> p4runtime_pb2.Entity:
    info = index.register(name)
    _check_cell(info.name, info.size, cell)
    entity = p4runtime_pb2.Entity()
    entity.register_entry.register_id = info.id
    entity.register_entry.index.index = cell
    entity.register_entry.data.bitstring = encode(value, info.bitwidth, where=f"{info.name}[{cell}]")
    return entity


def _check_cell(name: str, size: int, cell: int) -> None:
    if not 0 <= cell < size:
        raise EncodingError(f"{name}: index {cell} outside 0..{size - 1}")


def describe_table_entry(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> TableEntryView:
    """Names and ints for a TableEntry read back from a switch."""
    names = {k.id: k.name for t in index.tables() if t.id == entry.table_id for k in t.keys}
    match: dict[str, tuple[int, ...]] = {}
    for fm in entry.match:
        kind = fm.WhichOneof("field_match_type")
        part = getattr(fm, kind)
        if kind in ("exact", "optional"):
            values: tuple[int, ...] = (decode(part.value),)
        elif kind == "lpm":
            values = (decode(part.value), part.prefix_len)
        elif kind == "ternary":
            values = (decode(part.value), decode(part.mask))
        else:
            values = (decode(part.low), decode(part.high))
        match[names.get(fm.field_id, str(fm.field_id))] = values
    action_name, params = "", {}
    if entry.action.WhichOneof("type") == "action":
        action = index.action(index.name_of(entry.action.action.action_id))
        by_id = {p.id: p.name for p in action.params}
        action_name = action.name
        params = {by_id.get(p.param_id, str(p.param_id)): decode(p.value)
                  for p in entry.action.action.params}
    return TableEntryView(index.name_of(entry.table_id), match, action_name, params,
                          entry.priority, entry.is_default_action)


def bitstring_of(data: p4data_pb2.P4Data) -> int:
    """A register cell's value (bit<W> registers only)."""
    if data.WhichOneof("data") != "bitstring":
        raise EncodingError(f"register data of kind {data.WhichOneof('data')!r} is not a bitstring")
    return decode(data.bitstring)
