"""Batch semantics: CONTINUE_ON_ERROR, one p4.v1.Error per update (OK ones included), and the
request-level errors that are plain gRPC statuses."""

import grpc
import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from .entities import FWD, SCRATCH, fwd_entry
from .helpers import read, update, write, write_errors

OK = grpc.StatusCode.OK.value[0]


def test_mixed_batch_applies_good_updates_and_reports_each(server):
    with pytest.raises(grpc.RpcError) as err:
        write(
            server.stub,
            update("INSERT", table_entry=fwd_entry(1, port=2)),
            update("INSERT", table_entry=fwd_entry(1, port=3)),  # duplicate
            update("DELETE", table_entry=fwd_entry(9)),  # absent
            update("INSERT", table_entry=fwd_entry(4, port=5)),
        )
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    details = write_errors(err.value)
    assert [d.canonical_code for d in details] == [
        OK, grpc.StatusCode.ALREADY_EXISTS.value[0], grpc.StatusCode.NOT_FOUND.value[0], OK,
    ]
    assert details[1].message.startswith("table 'Ingress.fwd'")
    assert details[2].message.startswith("table 'Ingress.fwd'")    # as simple_switch_grpc:
    # no "update N:" in a detail (its place says which); the status's own text names them
    assert "update 1: table 'Ingress.fwd'" in err.value.details()
    assert "update 2: table 'Ingress.fwd'" in err.value.details()
    keys = sorted(e.table_entry.match[0].exact.value for e in read(server.stub, p4runtime_pb2.TableEntry(table_id=FWD)))
    assert keys == [b"\x01", b"\x04"]


def test_single_failed_update_has_one_detail_that_p4runtime_shell_parses(server):
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("DELETE", table_entry=fwd_entry(9)))
    parsed = P4RuntimeWriteException(err.value)
    assert [(index, e.canonical_code) for index, e in parsed.errors] == [
        (0, grpc.StatusCode.NOT_FOUND.value[0])
    ]
    assert "At index 0: NOT_FOUND" in str(parsed)


def test_unsupported_atomicity_is_unimplemented_for_the_whole_request(server):
    request = p4runtime_pb2.WriteRequest(
        device_id=0, atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR
    )
    request.election_id.low = 1
    request.updates.append(update("INSERT", table_entry=fwd_entry(1, port=2)))
    with pytest.raises(grpc.RpcError) as err:
        server.stub.Write(request)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert read(server.stub, p4runtime_pb2.TableEntry(table_id=FWD)) == []


def test_unspecified_update_type_and_empty_entity(server):
    empty = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    unspecified = update("INSERT", table_entry=fwd_entry(1, port=2))
    unspecified.type = p4runtime_pb2.Update.UNSPECIFIED
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, empty, unspecified)
    messages = [d.message for d in write_errors(err.value)]
    assert messages == ["update has no entity", "update type is UNSPECIFIED"]


def test_write_before_any_pipeline_is_failed_precondition(bare_server):
    with pytest.raises(grpc.RpcError) as err:
        write(bare_server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)), election_id=None)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_write_to_wrong_device_is_not_found(server):
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)), device_id=3)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_reading_unsupported_entities_is_unimplemented(server):
    request = p4runtime_pb2.ReadRequest(device_id=0)
    request.entities.add().extern_entry.extern_id = 1
    with pytest.raises(grpc.RpcError) as err:
        list(server.stub.Read(request))
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_crash_inside_one_update_is_internal_for_that_update_only(server, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(server.switch, "register_write", broken)
    register = p4runtime_pb2.RegisterEntry(register_id=SCRATCH)
    register.index.index = 0
    register.data.CopyFrom(p4data_pb2.P4Data(bitstring=b"\x01"))
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("MODIFY", register_entry=register),
              update("INSERT", table_entry=fwd_entry(1, port=2)))
    first, second = write_errors(err.value)
    assert first.canonical_code == grpc.StatusCode.INTERNAL.value[0]
    assert "ZeroDivisionError: boom" in first.message
    assert second.canonical_code == OK
