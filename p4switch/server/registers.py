"""Registers (RegisterEntry): MODIFY writes a cell (or every cell, without an index), reads expand
wildcards (register id 0 = every register, no index = every cell). Values are P4Data bitstrings
of the register's width, as BMv2's server takes them.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .cells import indexed_cells
from .device_state import DeviceState
from .errors import INVALID_ARGUMENT, UNIMPLEMENTED, RequestError

Update = p4runtime_pb2.Update


def register_bitwidth(register, index) -> int:
    spec = register.type_spec
    which = spec.WhichOneof("type_spec")
    if which == "bitstring":
        kind = spec.bitstring.WhichOneof("type_spec")
        if kind in ("bit", "int"):
            return getattr(spec.bitstring, kind).bitwidth
    if which == "new_type":   # `register<T>` of a `type bit<W> T`: W bits
        width = index.new_type_bitwidth(spec.new_type.name)
        if width is not None:
            return width
    if which == "serializable_enum":   # `register<E>` of an `enum bit<W> E`: W bits
        enum = index.p4info.type_info.serializable_enums.get(spec.serializable_enum.name)
        if enum is not None:
            return enum.underlying_type.bitwidth
    raise RequestError(
        UNIMPLEMENTED, f"register '{register.preamble.name}': only bit<W> registers are supported"
    )


def write_register(state: DeviceState, kind: int, entry: p4runtime_pb2.RegisterEntry) -> None:
    register = state.pipeline.index.get("register", entry.register_id)
    where = f"register '{register.preamble.name}'"
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY is allowed for registers")
    if entry.data.WhichOneof("data") != "bitstring":
        raise RequestError(INVALID_ARGUMENT, f"{where}: data must be a bitstring")
    width = register_bitwidth(register, state.pipeline.index)
    value = bytestrings.decode(entry.data.bitstring, width, where)
    cells = indexed_cells(register, entry, where)
    name = state.pipeline.json_name(register)
    for cell in cells:
        state.call(where, state.switch.register_write, name, cell, value)


def read_registers(state: DeviceState, request: p4runtime_pb2.RegisterEntry, new) -> None:
    index = state.pipeline.index
    if request.register_id:
        registers = [index.get("register", request.register_id)]
    else:
        registers = index.all("register")
    for register in registers:
        where = f"register '{register.preamble.name}'"
        name = state.pipeline.json_name(register)
        cells = indexed_cells(register, request, where)
        if request.HasField("index"):
            values = [state.call(where, state.switch.register_read, name, cells[0])]
        else:
            values = state.call(where, state.switch.register_read_all, name)
        register_id = register.preamble.id
        for cell, value in zip(cells, values):
            message = new()
            message.register_id = register_id
            message.index.index = cell
            message.data.bitstring = bytestrings.encode(value)
