"""Action profile members and groups (ActionProfileMember / ActionProfileGroup).

Clients choose member and group ids; the runtime returns its own handles, so the server keeps
the mapping (`DeviceState.members` / `.groups`). A member's action must be allowed in a table
that uses the profile. Group members carry weights; the runtime has no weighted groups, so a
weight other than 1 (or 0, read as 1) is UNIMPLEMENTED. Watch ports are ignored.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from .actions import decode_action, encode_action
from .device_state import DeviceState
from .errors import (
    ALREADY_EXISTS,
    INVALID_ARGUMENT,
    NOT_FOUND,
    RESOURCE_EXHAUSTED,
    UNIMPLEMENTED,
    RequestError,
)

Update = p4runtime_pb2.Update


def _profile(state: DeviceState, profile_id: int):
    if not profile_id:
        raise RequestError(INVALID_ARGUMENT, "action profile id 0 / missing")
    profile = state.pipeline.index.get("action profile", profile_id)
    if profile.preamble.id not in state.pipeline.json_names:
        raise RequestError(NOT_FOUND, f"action profile '{profile.preamble.name}' is used by no "
                                      "table, so the data plane has none")
    return profile, f"action profile '{profile.preamble.name}'"


def _allowed_actions(state: DeviceState, profile) -> set[int]:
    index = state.pipeline.index
    return {a for t in profile.table_ids for a in index.table_action_ids(index.table(t))}


def write_member(state: DeviceState, kind: int, entry: p4runtime_pb2.ActionProfileMember) -> None:
    profile, where = _profile(state, entry.action_profile_id)
    where = f"{where} member {entry.member_id}"
    members = state.members.setdefault(profile.preamble.id, {})
    name = state.pipeline.json_name(profile)
    sw = state.switch
    if kind == Update.INSERT:
        if entry.member_id in members:
            raise RequestError(ALREADY_EXISTS, f"{where}: already exists")
        action, params = decode_action(
            state.pipeline, entry.action, _allowed_actions(state, profile), where
        )
        members[entry.member_id] = state.call(where, sw.act_prof_add_member, name, action, params)
        return
    if entry.member_id not in members:
        raise RequestError(NOT_FOUND, f"{where}: no such member")
    handle = members[entry.member_id]
    if kind == Update.MODIFY:
        action, params = decode_action(
            state.pipeline, entry.action, _allowed_actions(state, profile), where
        )
        state.call(where, sw.act_prof_modify_member, name, handle, action, params)
    elif kind == Update.DELETE:
        state.call(where, sw.act_prof_delete_member, name, handle)
        del members[entry.member_id]
    else:
        raise RequestError(INVALID_ARGUMENT, f"{where}: unknown update type {kind}")


def write_group(state: DeviceState, kind: int, entry: p4runtime_pb2.ActionProfileGroup) -> None:
    profile, where = _profile(state, entry.action_profile_id)
    where = f"{where} group {entry.group_id}"
    if not profile.with_selector:
        raise RequestError(INVALID_ARGUMENT, f"{where}: the profile has no selector, so no groups")
    groups = state.groups.setdefault(profile.preamble.id, {})
    name = state.pipeline.json_name(profile)
    sw = state.switch
    if kind == Update.DELETE:
        if entry.group_id not in groups:
            raise RequestError(NOT_FOUND, f"{where}: no such group")
        state.call(where, sw.act_prof_delete_group, name, groups.pop(entry.group_id))
        return
    wanted = _member_handles(state, profile, entry, where)
    if kind == Update.INSERT:
        if entry.group_id in groups:
            raise RequestError(ALREADY_EXISTS, f"{where}: already exists")
        handle = state.call(where, sw.act_prof_create_group, name)
        current: list[int] = []
    elif kind == Update.MODIFY:
        if entry.group_id not in groups:
            raise RequestError(NOT_FOUND, f"{where}: no such group")
        handle = groups[entry.group_id]
        current = list(state.call(where, sw.act_prof_groups, name).get(handle, []))
    else:
        raise RequestError(INVALID_ARGUMENT, f"{where}: unknown update type {kind}")
    _set_membership(state, name, handle, current, wanted, where, created=kind == Update.INSERT)
    groups[entry.group_id] = handle


def _member_handles(state, profile, entry, where) -> list[int]:
    members = state.members.get(profile.preamble.id, {})
    max_size = profile.max_group_size
    if max_size and len(entry.members) > max_size:
        raise RequestError(
            RESOURCE_EXHAUSTED, f"{where}: {len(entry.members)} members exceed max {max_size}"
        )
    if entry.max_size and len(entry.members) > entry.max_size:
        raise RequestError(
            INVALID_ARGUMENT, f"{where}: {len(entry.members)} members exceed its max_size"
        )
    handles = []
    for member in entry.members:
        if member.member_id not in members:
            raise RequestError(NOT_FOUND, f"{where}: no member {member.member_id} in the profile")
        if member.weight not in (0, 1):
            raise RequestError(UNIMPLEMENTED, f"{where}: member weight {member.weight} (only 1)")
        handle = members[member.member_id]
        if handle in handles:
            raise RequestError(INVALID_ARGUMENT, f"{where}: member {member.member_id} listed twice")
        handles.append(handle)
    return handles


def _set_membership(state, name, group, current, wanted, where, *, created: bool) -> None:
    """Make `group` hold exactly `wanted`, undoing partial changes if the runtime refuses one."""
    sw = state.switch
    done: list[tuple[str, int]] = []
    try:
        for member in wanted:
            if member not in current:
                state.call(where, sw.act_prof_add_member_to_group, name, member, group)
                done.append(("added", member))
        for member in current:
            if member not in wanted:
                state.call(where, sw.act_prof_remove_member_from_group, name, member, group)
                done.append(("removed", member))
    except RequestError:
        for change, member in reversed(done):
            undo = (
                sw.act_prof_remove_member_from_group if change == "added"
                else sw.act_prof_add_member_to_group
            )
            undo(name, member, group)
        if created:
            sw.act_prof_delete_group(name, group)
        raise


def read_members(state: DeviceState, request: p4runtime_pb2.ActionProfileMember, new) -> None:
    for profile in _profiles(state, request.action_profile_id):
        ids = state.members.get(profile.preamble.id, {})
        runtime = state.switch.act_prof_members(state.pipeline.json_name(profile))
        allowed = _allowed_actions(state, profile)
        for member_id, handle in sorted(ids.items()):
            if request.member_id and member_id != request.member_id:
                continue
            action, params = runtime[handle]
            message = new()
            message.action_profile_id = profile.preamble.id
            message.member_id = member_id
            encode_action(state.pipeline, action, params, allowed, message.action)


def read_groups(state: DeviceState, request: p4runtime_pb2.ActionProfileGroup, new) -> None:
    for profile in _profiles(state, request.action_profile_id):
        if not profile.with_selector:
            continue
        groups = state.groups.get(profile.preamble.id, {})
        member_ids = {h: i for i, h in state.members.get(profile.preamble.id, {}).items()}
        runtime = state.switch.act_prof_groups(state.pipeline.json_name(profile))
        for group_id, handle in sorted(groups.items()):
            if request.group_id and group_id != request.group_id:
                continue
            message = new()
            message.action_profile_id = profile.preamble.id
            message.group_id = group_id
            for member in runtime.get(handle, []):
                if member in member_ids:  # a member deleted while in the group is gone
                    message.members.add(member_id=member_ids[member], weight=1)


def _profiles(state: DeviceState, profile_id: int) -> list:
    """The profiles a read names (0: all), but those no table uses (they hold nothing)."""
    index = state.pipeline.index
    named = [index.get("action profile", profile_id)] if profile_id else \
        index.all("action profile")
    return [p for p in named if p.preamble.id in state.pipeline.json_names]
