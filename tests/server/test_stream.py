"""Arbitration over real gRPC streams: who is primary, who may write, what happens on exit."""

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.server.service import StreamOutbox

from .entities import fwd_entry
from .helpers import pipeline_request, update, write

OK, ALREADY_EXISTS = 0, 6


def test_primary_and_backup_statuses(bare_server):
    first = bare_server.stream().arbitrate(10)
    assert first.arbitration.status.code == OK
    assert first.arbitration.election_id.low == 10
    assert first.arbitration.device_id == 0
    second = bare_server.stream().arbitrate(4)
    assert second.arbitration.status.code == ALREADY_EXISTS
    assert second.arbitration.election_id.low == 10  # the primary's


def test_lower_election_id_cannot_write(bare_server):
    bare_server.stream().arbitrate(10)
    bare_server.stream().arbitrate(4)
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request(election_id=10))
    with pytest.raises(grpc.RpcError) as err:
        write(bare_server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)), election_id=4)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    write(bare_server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)), election_id=10)


def test_takeover_notifies_everyone_and_disconnect_re_elects(bare_server):
    old = bare_server.stream()
    old.arbitrate(5)
    new = bare_server.stream()
    assert new.arbitrate(8).arbitration.status.code == OK
    told = old.next("arbitration")
    assert (told.arbitration.status.code, told.arbitration.election_id.low) == (ALREADY_EXISTS, 8)
    new.close()
    promoted = old.next("arbitration")
    assert (promoted.arbitration.status.code, promoted.arbitration.election_id.low) == (OK, 5)
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request(election_id=5))


def test_wrong_device_id_ends_the_stream_with_not_found(bare_server):
    client = bare_server.stream()
    assert client.arbitrate(1, device_id=7) is None
    assert client.error.code() == grpc.StatusCode.NOT_FOUND


def test_duplicate_election_id_ends_the_second_stream(bare_server):
    bare_server.stream().arbitrate(3)
    second = bare_server.stream()
    assert second.arbitrate(3) is None
    assert second.error.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_packet_out_from_backup_gets_a_stream_error(server):
    backup = server.stream()
    backup.arbitrate(None)  # no election id: always a backup
    message = p4runtime_pb2.StreamMessageRequest()
    message.packet.payload = b"\x00" * 14
    backup.send(message)
    error = backup.next("error")
    assert error.error.canonical_code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert server.packets_out == []


def test_streams_beyond_the_limit_are_resource_exhausted_and_unary_rpcs_still_work(bare_server):
    from p4switch.server.device import MAX_STREAMS

    for election_id in range(1, MAX_STREAMS + 1):
        assert bare_server.stream().arbitrate(election_id) is not None
    extra = bare_server.stream()
    assert extra.next() is None
    assert extra.error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request(election_id=MAX_STREAMS))


def test_stopping_the_server_ends_open_streams(bare_server):
    client = bare_server.stream()
    client.arbitrate(1)
    bare_server.server.stop(grace=None)
    assert client.next() is None
    assert client.error.code() == grpc.StatusCode.UNAVAILABLE



def test_outbox_refuses_packet_ins_beyond_its_bound_but_never_control_messages():
    outbox = StreamOutbox(max_packets=2)
    packet = p4runtime_pb2.StreamMessageResponse()
    packet.packet.payload = b"x"
    arbitration = p4runtime_pb2.StreamMessageResponse()
    arbitration.arbitration.device_id = 0
    assert [outbox.send(packet) for _ in range(3)] == [True, True, False]
    assert outbox.send(arbitration)
    assert [outbox.get().WhichOneof("update") for _ in range(3)] == ["packet", "packet", "arbitration"]


def test_packet_ins_the_primary_cannot_take_are_counted_as_dropped(server):
    device = server.server.device
    refusing = object()
    device.stream_open(refusing, lambda message: False)
    device.stream_message(refusing, arbitration_request(99))
    before = device.packets_in_dropped
    device.packet_in(bytes(2) + b"frame")
    assert device.packets_in_dropped == before + 1
    device.stream_close(refusing)


def arbitration_request(election_id):
    message = p4runtime_pb2.StreamMessageRequest()
    message.arbitration.device_id = 0
    message.arbitration.election_id.low = election_id
    return message
