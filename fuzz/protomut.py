"""Structure-aware mutation of protobuf messages, driven by a `Reader` (plain Python, so that a
stored input replays without the fuzzer): each step walks the message's descriptor to one field
and sets, adds, clears, duplicates or removes something there with a value of the field's type,
often an edge value (0, all ones, one past the width, empty or oversized bytes)."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor as F

from .common import Reader

_INT_RANGES = {
    F.TYPE_INT32: (-(1 << 31), (1 << 31) - 1), F.TYPE_SINT32: (-(1 << 31), (1 << 31) - 1),
    F.TYPE_SFIXED32: (-(1 << 31), (1 << 31) - 1), F.TYPE_INT64: (-(1 << 63), (1 << 63) - 1),
    F.TYPE_SINT64: (-(1 << 63), (1 << 63) - 1), F.TYPE_SFIXED64: (-(1 << 63), (1 << 63) - 1),
    F.TYPE_UINT32: (0, (1 << 32) - 1), F.TYPE_FIXED32: (0, (1 << 32) - 1),
    F.TYPE_UINT64: (0, (1 << 64) - 1), F.TYPE_FIXED64: (0, (1 << 64) - 1),
    F.TYPE_ENUM: (-(1 << 31), (1 << 31) - 1),
}
_EDGE_BYTES = (b"", b"\x00", b"\x01", b"\xff", b"\x00\x00", b"\x01\x00", b"\xff" * 6,
               b"\x00" * 16, b"\xff" * 64)
_MAX_DEPTH = 12


def _int_value(field, reader: Reader) -> int:
    low, high = _INT_RANGES[field.type]
    how = reader.byte() % 8
    if field.type == F.TYPE_ENUM and how < 3:
        values = [v.number for v in field.enum_type.values]
        return reader.pick(values)
    if how == 3:
        return reader.pick([0, 1, 2, high, low, 511, 512, 1 << 16, (1 << 16) - 1])
    width = reader.pick([1, 1, 2, 4, 8])
    value = reader.int(width)
    return max(low, min(high, value if low == 0 else value - (1 << (8 * width - 1))))


def scalar_value(field, reader: Reader):
    t = field.type
    if t == F.TYPE_BOOL:
        return bool(reader.byte() & 1)
    if t in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return reader.pick([0.0, -1.0, 1e30, float("inf"), float("nan"), reader.int(2) / 7])
    if t == F.TYPE_BYTES:
        if reader.byte() % 3 == 0:
            return reader.pick(_EDGE_BYTES)
        return reader.take(reader.byte() % 40)
    if t == F.TYPE_STRING:
        if reader.byte() % 3 == 0:
            return reader.pick(["", "x", "MyIngress", ".", "a" * 300])
        return reader.take(reader.byte() % 40).decode("utf-8", errors="replace")
    return _int_value(field, reader)


def mutate(message, reader: Reader, depth: int = 0) -> None:
    """One mutation somewhere in `message` (in place)."""
    fields = message.DESCRIPTOR.fields
    if not fields:
        return
    field = reader.pick(fields)
    op = reader.byte() % 8
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        message.ClearField(field.name) if op == 0 else None
        return
    if op == 0:
        message.ClearField(field.name)
        return
    repeated = field.is_repeated
    if field.message_type is not None:
        if depth >= _MAX_DEPTH:
            return
        if repeated:
            items = getattr(message, field.name)
            if op == 1 or not items:
                child = items.add()
                if len(items) > 1 and reader.byte() & 1:
                    child.CopyFrom(items[reader.byte() % (len(items) - 1)])
            elif op == 2:
                del items[reader.byte() % len(items)]
                return
            else:
                child = items[reader.byte() % len(items)]
        else:
            child = getattr(message, field.name)
            child.SetInParent()
        mutate(child, reader, depth + 1)
        return
    value = scalar_value(field, reader)
    try:
        if repeated:
            items = getattr(message, field.name)
            if op == 1 or not items:
                items.append(value)
            else:
                items[reader.byte() % len(items)] = value
        else:
            setattr(message, field.name, value)
    except (ValueError, TypeError):     # e.g. a closed enum refusing a number
        pass


def mutated(base, reader: Reader, max_steps: int = 8):
    """A mutated copy of `base`: up to `max_steps` mutations, the count from the input."""
    message = type(base)()
    message.CopyFrom(base)
    for _ in range(reader.byte() % (max_steps + 1)):
        if not reader.left:
            break
        mutate(message, reader)
    return message
