"""The packet replication engine: multicast groups and clone sessions.

A multicast group's replicas are (egress port, instance); the instance is BMv2's replication id
(`egress_rid`). A clone session with one replica of instance 0 mirrors to that port; any other
clone session is backed by a multicast group the server creates for it (a *hidden* group, the
highest free id below 65536), which multicast reads do not show and multicast writes cannot
touch. Class of service is stored and echoed; truncation (packet_length_bytes) is UNIMPLEMENTED.
The runtime cannot list clone sessions, so the server remembers the ones it created. A MODIFY
sets the new session up before it drops the old one's hidden group, so a refusal changes nothing.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from .device_state import CloneSession, DeviceState
from .errors import (
    ALREADY_EXISTS,
    INVALID_ARGUMENT,
    NOT_FOUND,
    RESOURCE_EXHAUSTED,
    UNIMPLEMENTED,
    RequestError,
)

Update = p4runtime_pb2.Update
MAX_GROUP_ID = 0xFFFF
MAX_RID = 0xFFFF
MAX_PORT = 0x1FF  # v1model's 9-bit ports


def _replicas(replicas, where: str) -> list[tuple[int, int]]:
    result: list[tuple[int, int]] = []
    for replica in replicas:
        which = replica.WhichOneof("port_kind")
        if which == "port":
            if not replica.port:
                raise RequestError(INVALID_ARGUMENT, f"{where}: empty replica port")
            port = int.from_bytes(replica.port, "big")
        else:
            port = replica.egress_port
        if port > MAX_PORT:
            raise RequestError(INVALID_ARGUMENT, f"{where}: port {port} is beyond {MAX_PORT}")
        if replica.instance > MAX_RID:
            raise RequestError(
                INVALID_ARGUMENT, f"{where}: instance {replica.instance} exceeds 16 bits"
            )
        if (port, replica.instance) in result:
            raise RequestError(
                INVALID_ARGUMENT,
                f"{where}: replica (port {port}, instance {replica.instance}) twice",
            )
        result.append((port, replica.instance))
    return result


def write_multicast(
    state: DeviceState, kind: int, entry: p4runtime_pb2.MulticastGroupEntry
) -> None:
    mgid = entry.multicast_group_id
    where = f"multicast group {mgid}"
    if not 0 < mgid <= MAX_GROUP_ID:
        raise RequestError(INVALID_ARGUMENT, f"{where}: group id must be in 1..{MAX_GROUP_ID}")
    if mgid in state.hidden_groups():
        raise RequestError(ALREADY_EXISTS, f"{where}: used by a multi-replica clone session")
    sw = state.switch
    exists = mgid in state.call(where, sw.mc_groups)
    if kind == Update.INSERT and exists:
        raise RequestError(ALREADY_EXISTS, f"{where}: already exists")
    if kind in (Update.MODIFY, Update.DELETE) and not exists:
        raise RequestError(NOT_FOUND, f"{where}: no such group")
    if kind == Update.DELETE:
        state.call(where, sw.mc_group_remove, mgid)
    elif kind in (Update.INSERT, Update.MODIFY):
        state.call(where, sw.mc_group_set, mgid, _replicas(entry.replicas, where))
    else:
        raise RequestError(INVALID_ARGUMENT, f"{where}: unknown update type {kind}")


def read_multicast(state: DeviceState, request: p4runtime_pb2.MulticastGroupEntry, new) -> None:
    sw = state.switch
    hidden = state.hidden_groups()
    groups = [g for g in state.call("multicast groups", sw.mc_groups) if g not in hidden]
    if request.multicast_group_id:
        if request.multicast_group_id not in groups:
            raise RequestError(
                NOT_FOUND, f"multicast group {request.multicast_group_id}: no such group"
            )
        groups = [request.multicast_group_id]
    for mgid in sorted(groups):
        replicas = state.call(f"multicast group {mgid}", sw.mc_group_get, mgid)
        message = new()
        message.multicast_group_id = mgid
        for port, rid in replicas:
            message.replicas.add(egress_port=port, instance=rid)


def write_clone_session(
    state: DeviceState, kind: int, entry: p4runtime_pb2.CloneSessionEntry
) -> None:
    session = entry.session_id
    where = f"clone session {session}"
    if session == 0:
        raise RequestError(INVALID_ARGUMENT, f"{where}: session id 0 is reserved")
    known = session in state.clone_sessions
    if kind == Update.INSERT and known:
        raise RequestError(ALREADY_EXISTS, f"{where}: already exists")
    if kind in (Update.MODIFY, Update.DELETE) and not known:
        raise RequestError(NOT_FOUND, f"{where}: no such session")
    if kind not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise RequestError(INVALID_ARGUMENT, f"{where}: unknown update type {kind}")
    if kind == Update.DELETE:
        _remove_session(state, session, where)
        return
    if entry.packet_length_bytes:
        raise RequestError(UNIMPLEMENTED, f"{where}: truncation (packet_length_bytes)")
    replicas = _replicas(entry.replicas, where)
    if not replicas:
        raise RequestError(INVALID_ARGUMENT, f"{where}: needs at least one replica")
    sw = state.switch
    previous = state.clone_sessions.get(session)  # MODIFY: replaced once the new one is set
    if len(replicas) == 1 and replicas[0][1] == 0:
        state.call(where, sw.mirroring_add, session, port=replicas[0][0])
        hidden = None
    else:
        hidden = _free_group(state, where)
        state.call(where, sw.mc_group_set, hidden, replicas)
        try:
            state.call(where, sw.mirroring_add, session, mgid=hidden)
        except RequestError:
            sw.mc_group_remove(hidden)
            raise
    if previous is not None and previous.hidden_group is not None:
        state.call(where, sw.mc_group_remove, previous.hidden_group)
    stored = p4runtime_pb2.CloneSessionEntry()
    stored.CopyFrom(entry)
    state.clone_sessions[session] = CloneSession(entry=stored, hidden_group=hidden)


def _remove_session(state: DeviceState, session: int, where: str) -> None:
    record = state.clone_sessions.pop(session)
    state.call(where, state.switch.mirroring_delete, session)
    if record.hidden_group is not None:
        state.call(where, state.switch.mc_group_remove, record.hidden_group)


def _free_group(state: DeviceState, where: str) -> int:
    used = set(state.call(where, state.switch.mc_groups))
    for mgid in range(MAX_GROUP_ID, 0, -1):
        if mgid not in used:
            return mgid
    raise RequestError(RESOURCE_EXHAUSTED, f"{where}: no free multicast group id")


def read_clone_sessions(state: DeviceState, request: p4runtime_pb2.CloneSessionEntry, new) -> None:
    sessions = state.clone_sessions
    if request.session_id:
        if request.session_id not in sessions:
            raise RequestError(NOT_FOUND, f"clone session {request.session_id}: no such session")
        wanted = [request.session_id]
    else:
        wanted = sorted(sessions)
    for session in wanted:
        new().CopyFrom(sessions[session].entry)
