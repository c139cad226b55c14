"""Table entries of every match kind: insert, read (exact and wildcard), modify, delete."""

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from .entities import (
    ACL, BLOCKED, DROP, ECMP, FWD, NO_ACTION, ROUTES, SET_MCAST, TO_CPU, TO_PORT,
    acl_entry, action, fwd_entry, route_entry,
)
from .helpers import read, update, write, write_errors


def read_table(stub, table_id=0, **fields):
    return [e.table_entry for e in read(stub, p4runtime_pb2.TableEntry(table_id=table_id, **fields))]


def test_exact_insert_read_modify_delete(server):
    write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)))
    (entry,) = read_table(server.stub, FWD)
    assert entry.match[0].exact.value == b"\x01"  # canonical: leading zero dropped
    assert entry.action.action.action_id == TO_PORT
    assert entry.action.action.params[0].value == b"\x02"
    write(server.stub, update("MODIFY", table_entry=fwd_entry(1, port=7)))
    (entry,) = read_table(server.stub, FWD)
    assert entry.action.action.params[0].value == b"\x07"
    write(server.stub, update("DELETE", table_entry=fwd_entry(1)))
    assert read_table(server.stub, FWD) == []


def test_lpm_entries_read_back_and_prefix_rules(server):
    dst = bytes.fromhex("0a0000000000")
    write(server.stub, update("INSERT", table_entry=route_entry(dst, 8, port=3)))
    (entry,) = read_table(server.stub, ROUTES)
    assert entry.match[0].lpm.prefix_len == 8
    assert entry.match[0].lpm.value == bytes.fromhex("0a0000000000")
    with pytest.raises(grpc.RpcError) as err:  # bits beyond the prefix
        write(server.stub, update("INSERT", table_entry=route_entry(bytes.fromhex("0a0100000000"), 8)))
    assert "beyond /8" in write_errors(err.value)[0].message
    with pytest.raises(grpc.RpcError) as err:  # /0 must be omitted
        write(server.stub, update("INSERT", table_entry=route_entry(b"\x00", 0)))
    assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]


def test_ternary_range_optional_with_priorities_and_dont_cares(server):
    full = b"\xff" * 6
    entries = [
        acl_entry(10, src=(b"\x0a\x00\x00\x00\x00\x00", full)),
        acl_entry(20, types=(b"\x08\x00", b"\x08\xff")),
        acl_entry(30, dst=b"\x01"),
        acl_entry(40),  # every field a don't-care
    ]
    write(server.stub, *[update("INSERT", table_entry=e) for e in entries])
    back = sorted(read_table(server.stub, ACL), key=lambda e: e.priority)
    assert [e.priority for e in back] == [10, 20, 30, 40]
    assert [len(e.match) for e in back] == [1, 1, 1, 0]
    assert back[0].match[0].ternary.value == b"\x0a\x00\x00\x00\x00\x00"
    assert back[1].match[0].range.low == b"\x08\x00"
    assert back[2].match[0].optional.value == b"\x01"
    stored = server.switch.table_entries("Ingress.acl")
    keys_of_40 = next(e.keys for e in stored if e.priority == 40)
    assert [type(k).__name__ for k in keys_of_40] == ["TernaryKey", "RangeKey", "OptionalKey"]
    assert (keys_of_40[1].low, keys_of_40[1].high) == (0, 0xFFFF)
    # an entry is found by its key *and* priority
    write(server.stub, update("DELETE", table_entry=acl_entry(30, dst=b"\x01")))
    assert len(read_table(server.stub, ACL)) == 3
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("DELETE", table_entry=acl_entry(31, src=(b"\x0a", full))))
    assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.NOT_FOUND.value[0]


def test_priority_rules(server):
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=acl_entry(0, dst=b"\x01")))
    assert "priority must be >= 1" in write_errors(err.value)[0].message
    with_priority = fwd_entry(1, port=2)
    with_priority.priority = 3
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=with_priority))
    assert "priority must be 0" in write_errors(err.value)[0].message


def test_read_with_match_filters_and_wildcard_reads_all_tables(server):
    write(
        server.stub,
        update("INSERT", table_entry=fwd_entry(1, port=2)),
        update("INSERT", table_entry=fwd_entry(3, port=4)),
        update("INSERT", table_entry=route_entry(b"\x01\x00\x00\x00\x00\x00", 8)),
    )
    assert len(read_table(server.stub)) == 4  # and the const entry of Ingress.blocked
    only = read(server.stub, fwd_entry(3))
    assert [e.table_entry.match[0].exact.value for e in only] == [b"\x03"]


def test_default_entry_modify_read_and_reset(server):
    default = p4runtime_pb2.TableEntry(table_id=FWD, is_default_action=True)
    default.action.action.CopyFrom(action(SET_MCAST, b"\x00\x05"))
    write(server.stub, update("MODIFY", table_entry=default))
    (entry,) = read_table(server.stub, FWD, is_default_action=True)
    assert entry.is_default_action and entry.action.action.action_id == SET_MCAST
    write(server.stub, update("MODIFY", table_entry=p4runtime_pb2.TableEntry(
        table_id=FWD, is_default_action=True)))
    assert server.switch.table_get_default("Ingress.fwd")[0] != "Ingress.set_mcast"
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=default))
    assert "only MODIFY" in write_errors(err.value)[0].message


def test_action_scope_is_enforced(server):
    only_default = route_entry(b"\x01\x00\x00\x00\x00\x00", 8)
    only_default.action.action.CopyFrom(action(NO_ACTION))
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=only_default))
    assert "not allowed" in write_errors(err.value)[0].message
    default = p4runtime_pb2.TableEntry(table_id=ROUTES, is_default_action=True)
    default.action.action.CopyFrom(action(NO_ACTION))
    write(server.stub, update("MODIFY", table_entry=default))


def test_actions_and_params_are_checked(server):
    cases = {
        "not allowed here": fwd_entry(1, action_id=NO_ACTION),
        "missing parameter": fwd_entry(1, action_id=SET_MCAST),
    }
    wrong_param = fwd_entry(2, port=1)
    wrong_param.action.action.params[0].param_id = 9
    cases["no parameter with id 9"] = wrong_param
    too_wide = fwd_entry(3, port=1)
    too_wide.action.action.params[0].value = b"\x02\x00"
    cases["does not fit in 9 bits"] = too_wide
    missing_exact = fwd_entry(4, port=1)
    del missing_exact.match[:]
    cases["exact field missing"] = missing_exact
    for expected, entry in cases.items():
        with pytest.raises(grpc.RpcError) as err:
            write(server.stub, update("INSERT", table_entry=entry))
        (detail,) = write_errors(err.value)
        assert expected in detail.message, (expected, detail.message)
    assert read_table(server.stub, FWD) == []


def test_duplicate_insert_is_already_exists(server):
    write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)))
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=3)))
    assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.ALREADY_EXISTS.value[0]
    (entry,) = read_table(server.stub, FWD)
    assert entry.action.action.params[0].value == b"\x02"


def test_unknown_table_and_field_ids(server):
    unknown_table = fwd_entry(1, port=2)
    unknown_table.table_id = 12345
    bad_field = fwd_entry(1, port=2)
    bad_field.match[0].field_id = 7
    kind_mismatch = fwd_entry(1, port=2)
    kind_mismatch.match[0].lpm.value = b"\x01"
    kind_mismatch.match[0].lpm.prefix_len = 9
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, *[update("INSERT", table_entry=e)
                             for e in (unknown_table, bad_field, kind_mismatch)])
    details = write_errors(err.value)
    assert details[0].canonical_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert "no match field with id 7" in details[1].message
    assert "is exact, request gives lpm" in details[2].message
    with pytest.raises(grpc.RpcError) as err:
        read(server.stub, p4runtime_pb2.TableEntry(table_id=12345))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_action_on_indirect_table_and_member_on_direct_table_are_refused(server):
    entry = p4runtime_pb2.TableEntry(table_id=ECMP)
    entry.match.add(field_id=1).exact.value = b"\x08\x00"
    entry.action.action.CopyFrom(action(TO_PORT, b"\x01"))
    member_on_direct = fwd_entry(1)
    member_on_direct.action.action_profile_member_id = 1
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=entry),
              update("INSERT", table_entry=member_on_direct))
    first, second = write_errors(err.value)
    assert "indirect table needs a member or group" in first.message
    assert "direct table takes an action" in second.message


def test_to_cpu_and_drop_actions_round_trip(server):
    write(server.stub, update("INSERT", table_entry=fwd_entry(5, action_id=TO_CPU)),
          update("INSERT", table_entry=fwd_entry(6, action_id=DROP)))
    actions = sorted(e.action.action.action_id for e in read_table(server.stub, FWD))
    assert actions == sorted([TO_CPU, DROP])


def test_entry_metadata_round_trips_and_idle_timeout_needs_an_ageing_table(server):
    entry = fwd_entry(1, port=2)
    entry.metadata = b"cookie-42"
    write(server.stub, update("INSERT", table_entry=entry))
    (back,) = read_table(server.stub, FWD)
    assert back.metadata == b"cookie-42"
    timed = fwd_entry(2, port=2)
    timed.idle_timeout_ns = 1000        # fwd has no support_timeout (tests/server/test_idle_*)
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=timed))
    (error,) = write_errors(err.value)
    assert error.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert error.message == ("idle_timeout_ns must be set to 0 for tables which do not "
                             "support idle timeout")


def test_bad_direct_meter_config_on_insert_changes_nothing(server):
    entry = route_entry(b"\x0a\x00\x00\x00\x00\x00", 8)
    entry.meter_config.cir, entry.meter_config.pir = 10, 5
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=entry))
    assert "cir must not exceed pir" in write_errors(err.value)[0].message
    assert read_table(server.stub, ROUTES) == []


def test_const_table_reads_its_entries_and_refuses_writes(server):
    (const,) = read_table(server.stub, BLOCKED)
    assert const.is_const and const.priority == 0
    assert const.match[0].exact.value == b"\x09"
    assert const.action.action.action_id == DROP
    entry = p4runtime_pb2.TableEntry(table_id=BLOCKED)
    entry.match.add(field_id=1).exact.value = b"\x01"
    entry.action.action.action_id = DROP
    for kind, target in (("INSERT", entry), ("DELETE", const)):
        with pytest.raises(grpc.RpcError) as err:
            write(server.stub, update(kind, table_entry=target))
        assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert len(read_table(server.stub, BLOCKED)) == 1
