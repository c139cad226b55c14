"""Meters and direct meters: MeterConfig (per second) -> the runtime's rates (per microsecond).

P4Runtime gives committed/peak information rates in units per second (bytes or packets, as the
meter's P4Info unit says) and burst sizes in units; BMv2's runtime takes rates per microsecond,
which is what the runtime API documents too. The runtime cannot read meter configs back, so the
server remembers what it wrote and reads return that. Meters can only be MODIFY'd; resetting a
meter to "no config" is not supported by the runtime API (UNIMPLEMENTED).
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from . import table_entries
from .cells import indexed_cells
from .device_state import DeviceState
from .meter_config import meter_rates
from .errors import INVALID_ARGUMENT, UNIMPLEMENTED, RequestError

Update = p4runtime_pb2.Update


def write_meter(state: DeviceState, kind: int, entry: p4runtime_pb2.MeterEntry) -> None:
    meter = state.pipeline.index.get("meter", entry.meter_id)
    where = f"meter '{meter.preamble.name}'"
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY is allowed for meters")
    if not entry.HasField("index"):
        raise RequestError(INVALID_ARGUMENT, f"{where}: MODIFY needs an index")
    index = entry.index.index
    if not 0 <= index < meter.size:
        raise RequestError(INVALID_ARGUMENT, f"{where}: index {index} not in 0..{meter.size - 1}")
    if not entry.HasField("config"):
        raise RequestError(UNIMPLEMENTED, f"{where}: resetting a meter to no config")
    rates = meter_rates(entry.config)
    name = state.pipeline.json_name(meter)
    state.call(where, state.switch.meter_set_rates, name, index, rates)
    state.meter_configs[(meter.preamble.id, index)] = entry.config


def read_meters(state: DeviceState, request: p4runtime_pb2.MeterEntry, new) -> None:
    index = state.pipeline.index
    meters = [index.get("meter", request.meter_id)] if request.meter_id else index.all("meter")
    for meter in meters:
        for cell in indexed_cells(meter, request, f"meter '{meter.preamble.name}'"):
            message = new()
            message.meter_id = meter.preamble.id
            message.index.index = cell
            config = state.meter_configs.get((meter.preamble.id, cell))
            if config is not None:
                message.config.CopyFrom(config)


def write_direct_meter(
    state: DeviceState, kind: int, entry: p4runtime_pb2.DirectMeterEntry
) -> None:
    table, handle, where = table_entries.locate(state, entry.table_entry, "direct meter")
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY is allowed for direct meters")
    if not entry.HasField("config"):
        raise RequestError(UNIMPLEMENTED, f"{where}: resetting a meter to no config")
    rates = meter_rates(entry.config)
    name = state.pipeline.json_name(table)
    state.call(where, state.switch.direct_meter_set_rates, name, handle, rates)
    state.direct_meter_configs[(table.preamble.id, handle)] = entry.config


def read_direct_meters(state: DeviceState, request: p4runtime_pb2.DirectMeterEntry, new) -> None:
    messages: list[p4runtime_pb2.DirectMeterEntry] = []

    def new_entry() -> p4runtime_pb2.TableEntry:
        messages.append(new())
        return messages[-1].table_entry

    handles = table_entries.read_with_handles(state, request.table_entry, "direct meter", new_entry)
    for handle, message in zip(handles, messages):
        config = state.direct_meter_configs.get((message.table_entry.table_id, handle))
        if config is not None:
            message.config.CopyFrom(config)
