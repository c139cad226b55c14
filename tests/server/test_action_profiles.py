"""Action profile members and groups, and indirect table entries that point at them."""

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from .entities import ECMP, ECMP_SEL, TO_PORT, action
from .helpers import read, update, write, write_errors


def member(member_id, port):
    message = p4runtime_pb2.ActionProfileMember(action_profile_id=ECMP_SEL, member_id=member_id)
    message.action.CopyFrom(action(TO_PORT, bytes([port])))
    return message


def group(group_id, *member_ids):
    message = p4runtime_pb2.ActionProfileGroup(action_profile_id=ECMP_SEL, group_id=group_id)
    for member_id in member_ids:
        message.members.add(member_id=member_id, weight=1)
    return message


def ecmp_entry(ether_type: bytes, **target):
    entry = p4runtime_pb2.TableEntry(table_id=ECMP)
    entry.match.add(field_id=1).exact.value = ether_type
    for name, value in target.items():
        setattr(entry.action, name, value)
    return entry


def test_members_groups_and_indirect_entries(server):
    write(server.stub, *[update("INSERT", action_profile_member=member(i, i)) for i in (1, 2, 3)])
    write(server.stub, update("INSERT", action_profile_group=group(10, 1, 2)))
    write(
        server.stub,
        update("INSERT", table_entry=ecmp_entry(b"\x08\x00", action_profile_group_id=10)),
        update("INSERT", table_entry=ecmp_entry(b"\x86\xdd", action_profile_member_id=3)),
    )
    members = read(server.stub, p4runtime_pb2.ActionProfileMember(action_profile_id=ECMP_SEL))
    assert [(m.action_profile_member.member_id, m.action_profile_member.action.params[0].value)
            for m in members] == [(1, b"\x01"), (2, b"\x02"), (3, b"\x03")]
    (read_group,) = read(server.stub, p4runtime_pb2.ActionProfileGroup())
    assert sorted(m.member_id for m in read_group.action_profile_group.members) == [1, 2]
    entries = {e.table_entry.match[0].exact.value: e.table_entry.action
               for e in read(server.stub, p4runtime_pb2.TableEntry(table_id=ECMP))}
    assert entries[b"\x08\x00"].action_profile_group_id == 10
    assert entries[b"\x86\xdd"].action_profile_member_id == 3

    write(server.stub, update("MODIFY", action_profile_group=group(10, 2, 3)))
    (read_group,) = read(server.stub, group(10))
    assert sorted(m.member_id for m in read_group.action_profile_group.members) == [2, 3]
    write(server.stub, update("MODIFY", action_profile_member=member(3, 9)))
    (read_member,) = read(server.stub, member(3, 0))
    assert read_member.action_profile_member.action.params[0].value == b"\x09"


def test_profile_errors(server):
    write(server.stub, update("INSERT", action_profile_member=member(1, 1)))
    weighted = group(5, 1)
    weighted.members[0].weight = 3
    with pytest.raises(grpc.RpcError) as err:
        write(
            server.stub,
            update("INSERT", action_profile_member=member(1, 2)),
            update("INSERT", action_profile_group=group(5, 1, 42)),
            update("INSERT", action_profile_group=weighted),
            update("INSERT", table_entry=ecmp_entry(b"\x08\x00", action_profile_member_id=77)),
            update("DELETE", action_profile_member=member(8, 1)),
        )
    codes = [d.canonical_code for d in write_errors(err.value)]
    assert codes == [
        grpc.StatusCode.ALREADY_EXISTS.value[0], grpc.StatusCode.NOT_FOUND.value[0],
        grpc.StatusCode.UNIMPLEMENTED.value[0], grpc.StatusCode.NOT_FOUND.value[0],
        grpc.StatusCode.NOT_FOUND.value[0],
    ]
    assert read(server.stub, p4runtime_pb2.ActionProfileGroup()) == []
    assert server.switch.act_prof_groups("Ingress.ecmp_sel") == {}


def one_shot_entry(ether_type: bytes, *ports, weight=1):
    entry = ecmp_entry(ether_type)
    action_set = entry.action.action_profile_action_set
    for port in ports:
        item = action_set.action_profile_actions.add(weight=weight)
        item.action.CopyFrom(action(TO_PORT, bytes([port])))
    return entry


def test_one_shot_action_sets_use_hidden_objects_and_read_back_as_written(server):
    entry = one_shot_entry(b"\x08\x00", 1, 2)
    entry.action.action_profile_action_set.action_profile_actions[0].action.params[0].value = (
        b"\x00\x01"  # padded: read back canonical
    )
    write(server.stub, update("INSERT", table_entry=entry))
    (back,) = read(server.stub, p4runtime_pb2.TableEntry(table_id=ECMP))
    assert back.table_entry.action == one_shot_entry(b"\x08\x00", 1, 2).action
    assert read(server.stub, p4runtime_pb2.ActionProfileMember()) == []
    assert read(server.stub, p4runtime_pb2.ActionProfileGroup()) == []
    (group_members,) = server.switch.act_prof_groups("Ingress.ecmp_sel").values()
    assert len(group_members) == 2
    write(server.stub, update("DELETE", table_entry=ecmp_entry(b"\x08\x00")))
    assert server.switch.act_prof_groups("Ingress.ecmp_sel") == {}
    assert server.switch.act_prof_members("Ingress.ecmp_sel") == {}


def test_one_shot_errors(server):
    default = p4runtime_pb2.TableEntry(table_id=ECMP, is_default_action=True)
    default.action.CopyFrom(one_shot_entry(b"\x00", 1).action)
    with pytest.raises(grpc.RpcError) as err:
        write(
            server.stub,
            update("INSERT", table_entry=one_shot_entry(b"\x08\x00", 1, weight=3)),
            update("INSERT", table_entry=one_shot_entry(b"\x08\x00")),
            update("MODIFY", table_entry=default),
        )
    codes = [d.canonical_code for d in write_errors(err.value)]
    assert codes == [
        grpc.StatusCode.UNIMPLEMENTED.value[0], grpc.StatusCode.INVALID_ARGUMENT.value[0],
        grpc.StatusCode.UNIMPLEMENTED.value[0],
    ]
    assert server.switch.act_prof_members("Ingress.ecmp_sel") == {}


def test_indirect_default_entry_takes_a_member(server):
    write(server.stub, update("INSERT", action_profile_member=member(4, 4)))
    default = p4runtime_pb2.TableEntry(table_id=ECMP, is_default_action=True)
    default.action.action_profile_member_id = 4
    write(server.stub, update("MODIFY", table_entry=default))
    missing = p4runtime_pb2.TableEntry(table_id=ECMP, is_default_action=True)
    missing.action.action_profile_member_id = 5
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("MODIFY", table_entry=missing))
    assert "has no member 5" in write_errors(err.value)[0].message


def test_member_in_use_by_an_entry_cannot_be_deleted_and_group_reads_stay_consistent(server):
    write(server.stub, *[update("INSERT", action_profile_member=member(i, i)) for i in (1, 2)])
    write(server.stub, update("INSERT", action_profile_group=group(10, 1, 2)),
          update("INSERT", table_entry=ecmp_entry(b"\x08\x00", action_profile_member_id=2)))
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("DELETE", action_profile_member=member(2, 0)))
    assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    write(server.stub, update("DELETE", action_profile_member=member(1, 0)))
    (read_group,) = read(server.stub, group(10))
    assert [m.member_id for m in read_group.action_profile_group.members] == [2]
