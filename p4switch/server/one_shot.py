"""One-shot action profile programming: a table entry that carries its own action set.

As BMv2's server does, the set is realised with hidden action profile objects: one member per
action, and (for a profile with a selector) a group holding them; the entry points at the group,
or at the single member of a profile without selector. The hidden objects have no P4Runtime
ids, so member and group reads do not show them; they are deleted with the entry. Weights other
than 1 are UNIMPLEMENTED (the runtime has no weighted groups); watch ports are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .actions import decode_action
from .errors import INVALID_ARGUMENT, UNIMPLEMENTED, RequestError


@dataclass
class OneShot:
    action_set: p4runtime_pb2.ActionProfileActionSet  # as the client wrote it
    profile: str  # JSON name of the action profile
    members: list[int]  # runtime handles of the hidden members
    group: int | None  # runtime handle of the hidden group, if the profile has a selector


def decode(state, table, profile, action_set, where) -> list[tuple[str, tuple[int, ...]]]:
    """(JSON action name, params) per action of the set, checked against the table."""
    actions = list(action_set.action_profile_actions)
    if not actions:
        raise RequestError(INVALID_ARGUMENT, f"{where}: empty one-shot action set")
    if len(actions) > 1 and not profile.with_selector:
        raise RequestError(
            INVALID_ARGUMENT,
            f"{where}: action profile '{profile.preamble.name}' has no selector, so one action",
        )
    allowed = state.pipeline.index.table_action_ids(table)
    decoded = []
    for position, item in enumerate(actions):
        if item.weight not in (0, 1):
            raise RequestError(UNIMPLEMENTED, f"{where}: one-shot action weight {item.weight}")
        label = f"{where}: one-shot action {position}"
        decoded.append(decode_action(state.pipeline, item.action, allowed, label))
    return decoded


def install(state, table_name, profile, keys, priority, actions, where) -> tuple[int, OneShot]:
    """Create the hidden member(s) and group, then the entry; undo everything if one fails."""
    sw = state.switch
    profile_name = state.pipeline.json_name(profile)
    members: list[int] = []
    group = None
    try:
        for name, params in actions:
            members.append(state.call(where, sw.act_prof_add_member, profile_name, name, params))
        if profile.with_selector:
            group = state.call(where, sw.act_prof_create_group, profile_name)
            for member in members:
                state.call(where, sw.act_prof_add_member_to_group, profile_name, member, group)
            handle = state.call(
                where, sw.table_add_group, table_name, keys, group, priority=priority
            )
        else:
            handle = state.call(
                where, sw.table_add_member, table_name, keys, members[0], priority=priority
            )
    except RequestError:
        _delete_hidden(sw, profile_name, members, group)
        raise
    return handle, OneShot(p4runtime_pb2.ActionProfileActionSet(), profile_name, members, group)


def canonical_copy(action_set) -> p4runtime_pb2.ActionProfileActionSet:
    """The set as reads return it: parameter values as canonical byte strings."""
    copy = p4runtime_pb2.ActionProfileActionSet()
    copy.CopyFrom(action_set)
    for item in copy.action_profile_actions:
        for param in item.action.params:
            param.value = bytestrings.encode(int.from_bytes(param.value, "big"))
    return copy


def remove(state, one_shot: OneShot) -> None:
    """Delete the hidden objects of an entry that is gone."""
    _delete_hidden(state.switch, one_shot.profile, one_shot.members, one_shot.group)


def _delete_hidden(sw, profile_name, members, group) -> None:
    if group is not None:
        sw.act_prof_delete_group(profile_name, group)
    for member in members:
        sw.act_prof_delete_member(profile_name, member)
