"""Resource limits of the P4Runtime server (issue 33): a full table, a Write batch past its
bound, a pipeline config past the message limit, calls that never send their request, a stream
that never reads. Each is refused with a clear status and the switch goes on serving others."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.runtime import Switch
from p4switch.server import P4RuntimeServer

from .entities import FWD, fwd_entry
from .helpers import (CPU_PORT, RunningServer, pipeline_request, read, update, write,
                      write_errors)

REFERENCE = Path("/opt/p4ref/bin")
UNKNOWN = grpc.StatusCode.UNKNOWN.value[0]
FWD_SIZE = 64                                          # cpu_io.p4: table fwd { size = 64; }


def fwd_entries(server) -> list:
    return read(server.stub, p4runtime_pb2.TableEntry(table_id=FWD))


def test_a_full_table_refuses_the_insert_as_simple_switch_grpc_does_and_serves_on(server):
    write(server.stub, *[update("INSERT", table_entry=fwd_entry(port, port=1))
                         for port in range(FWD_SIZE)])
    with pytest.raises(grpc.RpcError) as refused:
        write(server.stub, update("INSERT", table_entry=fwd_entry(100, port=1)),
              update("MODIFY", table_entry=fwd_entry(3, port=9)))
    full, modified = write_errors(refused.value)
    assert full.canonical_code == UNKNOWN              # simple_switch_grpc's code (below)
    assert full.message.startswith("table 'Ingress.fwd' is full (64 entries, its "
                                   "size): delete entries"), full.message
    assert modified.canonical_code == 0                # the rest of the batch is applied
    write(server.stub, update("DELETE", table_entry=fwd_entry(0)))
    write(server.stub, update("INSERT", table_entry=fwd_entry(100, port=1)))
    assert len(fwd_entries(server)) == FWD_SIZE


def test_a_write_past_the_batch_bound_is_resource_exhausted_and_applies_nothing(
        server, monkeypatch):
    import p4switch.server.device as device
    monkeypatch.setattr(device, "MAX_WRITE_UPDATES", 5)
    with pytest.raises(grpc.RpcError) as refused:
        write(server.stub, *[update("INSERT", table_entry=fwd_entry(port, port=1))
                             for port in range(6)])
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "6 updates in one request, more than this switch takes (5)" in \
        refused.value.details()
    assert fwd_entries(server) == []
    write(server.stub, *[update("INSERT", table_entry=fwd_entry(port, port=1))
                         for port in range(5)])
    assert len(fwd_entries(server)) == 5


@pytest.fixture
def small_limits():
    """A server whose message limit is 1 MiB and which holds at most 40 calls at once."""
    packets: list[bytes] = []
    server = P4RuntimeServer(Switch(None), device_id=0, cpu_port=CPU_PORT,
                             address="127.0.0.1:0", packet_out=packets.append,
                             max_message_bytes=1 << 20, max_calls=40)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.bound_port}",
                                    options=[("grpc.max_send_message_length", 8 << 20)])
    yield server, channel, p4runtime_pb2_grpc.P4RuntimeStub(channel)
    channel.close()
    server.stop(grace=0)


def test_a_config_past_the_message_limit_is_resource_exhausted_and_the_next_one_loads(
        small_limits):
    _, _, stub = small_limits
    giant = pipeline_request(election_id=None)
    giant.config.p4_device_config += b" " * (2 << 20)  # JSON: spaces change nothing
    with pytest.raises(grpc.RpcError) as refused:
        stub.SetForwardingPipelineConfig(giant, timeout=10)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "Received message larger than max" in refused.value.details()
    stub.SetForwardingPipelineConfig(pipeline_request(election_id=None), timeout=10)
    write(stub, update("INSERT", table_entry=fwd_entry(1, port=2)), election_id=None)


def stuck_calls(channel, count: int, release: threading.Event) -> list:
    """Write calls whose request never comes: headers sent, the message held until `release`
    (a stream-unary call on a unary method: what a stuck or hostile client does)."""
    method = channel.stream_unary("/p4.v1.P4Runtime/Write",
                                  request_serializer=lambda data: data,
                                  response_deserializer=lambda data: data)

    def never():
        release.wait()
        return
        yield

    return [method.future(never()) for _ in range(count)]


def test_calls_that_never_send_their_request_do_not_block_others(small_limits):
    server, channel, stub = small_limits
    release = threading.Event()
    calls = stuck_calls(channel, 35, release)          # the old thread pool had 32 threads
    try:
        time.sleep(0.5)
        stub.SetForwardingPipelineConfig(pipeline_request(election_id=None), timeout=5)
        write(stub, update("INSERT", table_entry=fwd_entry(1, port=2)), election_id=None)
        assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        # past max_calls: refused at once, not queued behind the stuck ones
        more = stuck_calls(channel, 10, release)
        time.sleep(0.5)
        exhausted = [c for c in more if c.done()
                     and c.exception().code() == grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert exhausted, [c.done() for c in more]
    finally:
        for call in calls:                             # the client gives up: slots come back
            call.cancel()
        release.set()
    time.sleep(0.5)
    assert all(call.done() for call in calls)
    assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
    with pytest.raises(grpc.RpcError) as refused:      # and the bound is still there
        stub.Write(p4runtime_pb2.WriteRequest(device_id=9), timeout=5)
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_primary_that_never_reads_its_stream_does_not_block_the_switch(switch_server):
    server = switch_server                             # over gRPC: a transport to stall
    hold = threading.Event()

    def arbitrate_then_hold():
        yield _arbitration(7)
        hold.wait()                                    # never half-closes

    stalled = server.stub.StreamChannel(arbitrate_then_hold())
    device = server.server.device
    deadline = time.monotonic() + 5                    # it became primary, reads nothing
    while device._arbitration.primary is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert device._arbitration.primary is not None
    frame = b"\x00" * 1400                             # no pipeline: the frame as it is
    for _ in range(12_000):                            # more than its queue (10,000) holds
        server.server.packet_in(frame)
    assert device.packets_in_dropped > 1_000           # (a few sit in gRPC's buffers)
    started = time.monotonic()                         # another client: served at once
    server.stub.SetForwardingPipelineConfig(pipeline_request(election_id=7), timeout=5)
    write(server.stub, update("INSERT", table_entry=fwd_entry(1, port=2)), election_id=7)
    assert len(fwd_entries(server)) == 1 and time.monotonic() - started < 5
    stalled.cancel()
    hold.set()


def _arbitration(election_id: int) -> p4runtime_pb2.StreamMessageRequest:
    message = p4runtime_pb2.StreamMessageRequest()
    message.arbitration.device_id = 0
    message.arbitration.election_id.low = election_id
    return message


# -- what simple_switch_grpc does -----------------------------------------------------------------

SMALL_P4 = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers { eth_t eth; }
struct meta { }
parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control I(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    table small { key = { hdr.eth.dst : exact; } actions = { to_port; } size = 4; }
    apply { small.apply(); }
}
control E(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _full_table_codes(stub, p4info, config: bytes) -> list[int]:
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    request.config.p4info.CopyFrom(p4info)
    request.config.p4_device_config = config
    stub.SetForwardingPipelineConfig(request, timeout=20)
    table = p4info.tables[0].preamble.id
    action = next(a.preamble.id for a in p4info.actions if a.preamble.alias == "to_port")
    codes = []
    for mac in range(1, 7):
        entry = p4runtime_pb2.TableEntry(table_id=table)
        entry.match.add(field_id=1).exact.value = bytes([mac])
        entry.action.action.action_id = action
        entry.action.action.params.add(param_id=1, value=b"\x01")
        try:
            write(stub, update("INSERT", table_entry=entry), election_id=None)
            codes.append(0)
        except grpc.RpcError as error:
            codes.append(write_errors(error)[0].canonical_code)
    return codes


@pytest.mark.skipif(not (REFERENCE / "simple_switch_grpc").exists(),
                    reason="reference toolchain (/opt/p4ref) not installed")
def test_full_table_codes_are_simple_switch_grpcs(tmp_path):
    (tmp_path / "small.p4").write_text(SMALL_P4)
    built = subprocess.run(
        [str(REFERENCE / "p4c-bm2-ss"), str(tmp_path / "small.p4"), "-o",
         str(tmp_path / "small.json"), "--p4runtime-files", str(tmp_path / "small.txtpb")],
        capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    p4info = text_format.Parse((tmp_path / "small.txtpb").read_text(), p4info_pb2.P4Info())
    config = (tmp_path / "small.json").read_bytes()
    address = f"127.0.0.1:{_free_port()}"
    real = subprocess.Popen(
        # a Thrift port of its own: two simple_switch_grpc on 9090 at once (tests on the other
        # xdist worker) leave the second not serving gRPC at all
        [str(REFERENCE / "simple_switch_grpc"), "--no-p4", "--device-id", "0", "--log-level",
         "warn", "--thrift-port", str(_free_port()), "--", "--grpc-server-addr", address],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(channel).result(timeout=30)
        expected = _full_table_codes(p4runtime_pb2_grpc.P4RuntimeStub(channel), p4info, config)
        channel.close()
    finally:
        real.terminate()
        real.wait(timeout=10)
    ours = RunningServer(Switch(None))
    try:
        got = _full_table_codes(ours.stub, p4info, config)
    finally:
        ours.close()
    assert expected == [0, 0, 0, 0, UNKNOWN, UNKNOWN]
    assert got == expected


def pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("p4rt_")}


def test_the_pool_starts_with_its_working_threads_so_calls_do_not_grow_it():
    """A controller's stream plus two unary calls at once (a writer, a counter reader): the
    threads the server started with serve them, none is added (a soak would read growth)."""
    from p4switch.server.p4runtime_server import WARM_WORKERS

    before = pool_threads()
    running = RunningServer(Switch(None))
    try:
        started = pool_threads() - before
        assert len(started) == WARM_WORKERS
        stream = running.stream()
        assert stream.arbitrate(election_id=1) is not None
        calls = [threading.Thread(target=running.stub.Capabilities,
                                  args=(p4runtime_pb2.CapabilitiesRequest(),))
                 for _ in range(2)]
        for call in calls:
            call.start()
        for call in calls:
            call.join(timeout=10)
        assert pool_threads() - before == started
    finally:
        running.close()
