"""Indexed counters (CounterEntry) and direct counters (DirectCounterEntry).

Counters exist as long as the pipeline does, so the only write is MODIFY (set the cell's packet
and byte counts); INSERT and DELETE are INVALID_ARGUMENT. Reads expand wildcards: counter id 0
means every counter, an unset index every cell, a direct counter read without a table id every
table with a direct counter, and without a match every entry of those tables.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from . import table_entries
from .cells import indexed_cells
from .device_state import DeviceState
from .errors import INVALID_ARGUMENT, RequestError

Update = p4runtime_pb2.Update


def write_counter(state: DeviceState, kind: int, entry: p4runtime_pb2.CounterEntry) -> None:
    counter = state.pipeline.index.get("counter", entry.counter_id)
    where = f"counter '{counter.preamble.name}'"
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY is allowed for counters")
    if not entry.HasField("data"):
        raise RequestError(INVALID_ARGUMENT, f"{where}: MODIFY needs counter data")
    name = state.pipeline.json_name(counter)
    for cell in indexed_cells(counter, entry, where):  # no index: every cell, as BMv2 allows
        state.call(
            where, state.switch.counter_write, name, cell,
            entry.data.packet_count, entry.data.byte_count,
        )


def read_counters(state: DeviceState, request: p4runtime_pb2.CounterEntry, new) -> None:
    index = state.pipeline.index
    if request.counter_id:
        counters = [index.get("counter", request.counter_id)]
    else:
        counters = index.all("counter")
    for counter in counters:
        where = f"counter '{counter.preamble.name}'"
        name = state.pipeline.json_name(counter)
        for cell in indexed_cells(counter, request, where):
            packets, octets = state.call(where, state.switch.counter_read, name, cell)
            message = new()
            message.counter_id = counter.preamble.id
            message.index.index = cell
            message.data.packet_count = packets
            message.data.byte_count = octets


def write_direct_counter(
    state: DeviceState, kind: int, entry: p4runtime_pb2.DirectCounterEntry
) -> None:
    table, handle, where = table_entries.locate(state, entry.table_entry, "direct counter")
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY is allowed for direct counters")
    if not entry.HasField("data"):
        raise RequestError(INVALID_ARGUMENT, f"{where}: MODIFY needs counter data")
    state.call(
        where, state.switch.direct_counter_write, state.pipeline.json_name(table), handle,
        entry.data.packet_count, entry.data.byte_count,
    )


def read_direct_counters(
    state: DeviceState, request: p4runtime_pb2.DirectCounterEntry, new
) -> None:
    messages: list[p4runtime_pb2.DirectCounterEntry] = []

    def new_entry() -> p4runtime_pb2.TableEntry:
        messages.append(new())
        return messages[-1].table_entry

    handles = table_entries.read_with_handles(
        state, request.table_entry, "direct counter", new_entry
    )
    for handle, message in zip(handles, messages):
        table = state.pipeline.index.table(message.table_entry.table_id)
        where = f"direct counter of {table_entries.table_label(table)}"
        packets, octets = state.call(
            where, state.switch.direct_counter_read, state.pipeline.json_name(table), handle
        )
        message.data.packet_count = packets
        message.data.byte_count = octets
