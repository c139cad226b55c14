"""Dispatch of P4Runtime entities to the module that handles each kind, for Write and Read.

Every handler checks its input fully before calling the runtime, and the runtime changes nothing
on a failed call, so a refused update leaves the device as it was.
"""

from __future__ import annotations

from typing import Callable

from p4.v1 import p4runtime_pb2

from . import (
    action_profiles,
    counters,
    digests,
    meters,
    registers,
    replication,
    table_entries,
    value_sets,
)
from .device_state import DeviceState
from .errors import INVALID_ARGUMENT, UNIMPLEMENTED, RequestError

Update = p4runtime_pb2.Update
READ_BATCH = 500  # entities per ReadResponse

_WRITERS: dict[str, Callable] = {
    "table_entry": table_entries.write,
    "action_profile_member": action_profiles.write_member,
    "action_profile_group": action_profiles.write_group,
    "counter_entry": counters.write_counter,
    "direct_counter_entry": counters.write_direct_counter,
    "meter_entry": meters.write_meter,
    "direct_meter_entry": meters.write_direct_meter,
    "register_entry": registers.write_register,
    "value_set_entry": value_sets.write_value_set,
    "digest_entry": digests.write_digest,
}

_READERS: dict[str, Callable] = {
    "table_entry": table_entries.read,
    "action_profile_member": action_profiles.read_members,
    "action_profile_group": action_profiles.read_groups,
    "counter_entry": counters.read_counters,
    "direct_counter_entry": counters.read_direct_counters,
    "meter_entry": meters.read_meters,
    "direct_meter_entry": meters.read_direct_meters,
    "register_entry": registers.read_registers,
    "value_set_entry": value_sets.read_value_sets,
    "digest_entry": digests.read_digests,
}

_PRE_WRITERS = {
    "multicast_group_entry": replication.write_multicast,
    "clone_session_entry": replication.write_clone_session,
}
_PRE_READERS = {
    "multicast_group_entry": replication.read_multicast,
    "clone_session_entry": replication.read_clone_sessions,
}


def apply_update(state: DeviceState, update: p4runtime_pb2.Update) -> None:
    """Apply one Update; RequestError if refused (then nothing changed)."""
    if update.type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise RequestError(INVALID_ARGUMENT, "update type is UNSPECIFIED")
    which = update.entity.WhichOneof("entity")
    if which is None:
        raise RequestError(INVALID_ARGUMENT, "update has no entity")
    if which == "packet_replication_engine_entry":
        pre = update.entity.packet_replication_engine_entry
        kind = pre.WhichOneof("type")
        if kind is None:
            raise RequestError(INVALID_ARGUMENT, "packet replication engine entry is empty")
        _PRE_WRITERS[kind](state, update.type, getattr(pre, kind))
        return
    writer = _WRITERS.get(which)
    if writer is None:
        raise RequestError(UNIMPLEMENTED, f"writing {which} is not supported")
    writer(state, update.type, getattr(update.entity, which))


class ReadReplies:
    """ReadResponses built in place, at most `batch` entities each. Readers ask for a fresh
    message and fill it: with pure-Python protobuf, building then copying costs several times
    more than building where the message will be sent."""

    def __init__(self, batch: int = READ_BATCH) -> None:
        self.batch = batch
        self.responses = [p4runtime_pb2.ReadResponse()]

    def new_entity(self) -> p4runtime_pb2.Entity:
        if len(self.responses[-1].entities) >= self.batch:
            self.responses.append(p4runtime_pb2.ReadResponse())
        return self.responses[-1].entities.add()


def read_entity(state: DeviceState, entity: p4runtime_pb2.Entity, replies: ReadReplies) -> None:
    """Add every entity a (possibly wildcard) read request entity stands for to `replies`."""
    which = entity.WhichOneof("entity")
    if which is None:
        raise RequestError(INVALID_ARGUMENT, "read request entity is empty")
    if which == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        kind = pre.WhichOneof("type")
        if kind is None:
            raise RequestError(INVALID_ARGUMENT, "packet replication engine entry is empty")
        _PRE_READERS[kind](
            state, getattr(pre, kind),
            lambda: getattr(replies.new_entity().packet_replication_engine_entry, kind),
        )
        return
    reader = _READERS.get(which)
    if reader is None:
        raise RequestError(UNIMPLEMENTED, f"reading {which} is not supported")
    reader(state, getattr(entity, which), lambda: getattr(replies.new_entity(), which))
