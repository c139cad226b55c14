"""Multicast groups and clone sessions (PacketReplicationEngineEntry)."""

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from .helpers import read, update, write, write_errors


def multicast(mgid, *replicas):
    entry = p4runtime_pb2.PacketReplicationEngineEntry()
    entry.multicast_group_entry.multicast_group_id = mgid
    for port, instance in replicas:
        entry.multicast_group_entry.replicas.add(egress_port=port, instance=instance)
    return entry


def clone(session, *replicas, cos=0):
    entry = p4runtime_pb2.PacketReplicationEngineEntry()
    entry.clone_session_entry.session_id = session
    entry.clone_session_entry.class_of_service = cos
    for port, instance in replicas:
        entry.clone_session_entry.replicas.add(egress_port=port, instance=instance)
    return entry


def test_multicast_insert_read_modify_delete(server):
    write(server.stub, update("INSERT", packet_replication_engine_entry=multicast(1, (1, 0), (2, 0), (2, 1))))
    assert server.switch.mc_group_get(1) == [(1, 0), (2, 0), (2, 1)]
    (back,) = read(server.stub, multicast(0))
    replicas = back.packet_replication_engine_entry.multicast_group_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(1, 0), (2, 0), (2, 1)]
    write(server.stub, update("MODIFY", packet_replication_engine_entry=multicast(1, (3, 7))))
    assert server.switch.mc_group_get(1) == [(3, 7)]
    write(server.stub, update("DELETE", packet_replication_engine_entry=multicast(1)))
    assert read(server.stub, multicast(0)) == []


def test_multicast_port_bytes_form_is_accepted(server):
    entry = multicast(4)
    entry.multicast_group_entry.replicas.add(port=b"\x00\x05", instance=2)
    write(server.stub, update("INSERT", packet_replication_engine_entry=entry))
    assert server.switch.mc_group_get(4) == [(5, 2)]


def test_multicast_errors(server):
    write(server.stub, update("INSERT", packet_replication_engine_entry=multicast(1, (1, 0))))
    with pytest.raises(grpc.RpcError) as err:
        write(
            server.stub,
            update("INSERT", packet_replication_engine_entry=multicast(1, (2, 0))),
            update("MODIFY", packet_replication_engine_entry=multicast(2, (2, 0))),
            update("INSERT", packet_replication_engine_entry=multicast(0, (2, 0))),
            update("INSERT", packet_replication_engine_entry=multicast(3, (2, 0), (2, 0))),
            update("INSERT", packet_replication_engine_entry=multicast(3, (600, 0))),
        )
    codes = [d.canonical_code for d in write_errors(err.value)]
    assert codes == [
        grpc.StatusCode.ALREADY_EXISTS.value[0], grpc.StatusCode.NOT_FOUND.value[0],
        grpc.StatusCode.INVALID_ARGUMENT.value[0], grpc.StatusCode.INVALID_ARGUMENT.value[0],
        grpc.StatusCode.INVALID_ARGUMENT.value[0],
    ]
    assert server.switch.mc_groups() == [1]


def test_clone_session_to_a_port_and_to_several_replicas(server):
    write(server.stub, update("INSERT", packet_replication_engine_entry=clone(5, (3, 0), cos=2)))
    assert server.switch.mirroring_get(5) == {"port": 3, "mgid": None}
    write(server.stub, update("INSERT", packet_replication_engine_entry=clone(6, (1, 0), (2, 1))))
    hidden = server.switch.mirroring_get(6)["mgid"]
    assert server.switch.mc_group_get(hidden) == [(1, 0), (2, 1)]
    assert read(server.stub, multicast(0)) == []  # the hidden group is not shown
    sessions = read(server.stub, clone(0))
    assert [s.packet_replication_engine_entry.clone_session_entry.session_id for s in sessions] == [5, 6]
    assert sessions[0].packet_replication_engine_entry.clone_session_entry.class_of_service == 2
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", packet_replication_engine_entry=multicast(hidden, (1, 0))))
    assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.ALREADY_EXISTS.value[0]
    write(server.stub, update("MODIFY", packet_replication_engine_entry=clone(6, (4, 0))))
    assert server.switch.mirroring_get(6) == {"port": 4, "mgid": None}
    assert hidden not in server.switch.mc_groups()
    write(server.stub, update("DELETE", packet_replication_engine_entry=clone(5)))
    assert server.switch.mirroring_get(5) is None


def test_clone_session_errors(server):
    truncating = clone(7, (1, 0))
    truncating.clone_session_entry.packet_length_bytes = 64
    with pytest.raises(grpc.RpcError) as err:
        write(
            server.stub,
            update("INSERT", packet_replication_engine_entry=clone(0, (1, 0))),
            update("INSERT", packet_replication_engine_entry=clone(8)),
            update("INSERT", packet_replication_engine_entry=truncating),
            update("DELETE", packet_replication_engine_entry=clone(9)),
        )
    codes = [d.canonical_code for d in write_errors(err.value)]
    assert codes == [
        grpc.StatusCode.INVALID_ARGUMENT.value[0], grpc.StatusCode.INVALID_ARGUMENT.value[0],
        grpc.StatusCode.UNIMPLEMENTED.value[0], grpc.StatusCode.NOT_FOUND.value[0],
    ]


def test_clone_session_modify_between_port_and_group_forms(server):
    write(server.stub, update("INSERT", packet_replication_engine_entry=clone(3, (1, 0), (2, 0))))
    first_hidden = server.switch.mirroring_get(3)["mgid"]
    write(server.stub, update("MODIFY", packet_replication_engine_entry=clone(3, (5, 0), (6, 2))))
    second_hidden = server.switch.mirroring_get(3)["mgid"]
    assert server.switch.mc_groups() == [second_hidden]  # the first hidden group is gone
    assert server.switch.mc_group_get(second_hidden) == [(5, 0), (6, 2)]
    assert first_hidden is not None
    (back,) = read(server.stub, clone(3))
    replicas = back.packet_replication_engine_entry.clone_session_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(5, 0), (6, 2)]
