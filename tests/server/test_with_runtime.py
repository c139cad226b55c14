"""End to end with the real runtime (`p4switch.runtime.Switch`): the cpu_io program pushed over
P4Runtime, packets through the pipeline, packet-in/out through the CPU port, state read back."""

import pytest
from p4.v1 import p4runtime_pb2

from p4switch.runtime import Switch

from .entities import FWD, PORT_PKTS, SET_MCAST, TO_CPU, action, fwd_entry, route_entry
from .helpers import CPU_PORT, RunningServer, pipeline_request, read, update, write

FRAME = bytes.fromhex("0a0000000002" "0a0000000001" "0800") + b"payload!"


@pytest.fixture
def live():
    running = RunningServer(Switch(None))
    primary = running.stream()
    primary.arbitrate(1)
    running.stub.SetForwardingPipelineConfig(pipeline_request())
    running.primary = primary
    yield running
    running.close()


def receive(live, port, data):
    with live.switch.lock:
        return live.switch.receive(port, data)


def test_pipeline_set_over_p4runtime_forwards_packets(live):
    assert live.switch.has_program
    assert receive(live, 1, FRAME) == []  # fwd's default action drops
    write(live.stub, update("INSERT", table_entry=fwd_entry(1, port=2)))
    assert receive(live, 1, FRAME) == [(2, FRAME)]


def test_packet_in_reaches_the_primary_with_metadata(live):
    write(live.stub, update("INSERT", table_entry=fwd_entry(3, action_id=TO_CPU)))
    outputs = receive(live, 3, FRAME)
    assert [port for port, _ in outputs] == [CPU_PORT]
    data = outputs[0][1]
    assert data[:2] == bytes([0x01, 0x80])  # ingress_port 3 in 9 bits, then 7 pad bits
    live.server.packet_in(data)
    message = live.primary.next("packet").packet
    assert message.payload == FRAME
    assert [(m.metadata_id, m.value) for m in message.metadata] == [(1, b"\x03"), (2, b"\x00")]


def test_packet_out_is_injected_with_its_header_and_leaves_the_right_port(live):
    request = p4runtime_pb2.StreamMessageRequest()
    request.packet.payload = FRAME
    request.packet.metadata.add(metadata_id=1, value=b"\x05")
    live.primary.send(request)
    for _ in range(500):
        if live.packets_out:
            break
        import time

        time.sleep(0.01)
    (injected,) = live.packets_out
    assert injected == bytes([0x02, 0x80]) + FRAME
    assert receive(live, CPU_PORT, injected) == [(5, FRAME)]


def test_counters_and_direct_counters_count_real_packets(live):
    write(live.stub, update("INSERT", table_entry=fwd_entry(1, port=2)))
    for _ in range(3):
        receive(live, 1, FRAME)
    cell = p4runtime_pb2.CounterEntry(counter_id=PORT_PKTS)
    cell.index.index = 1
    (counted,) = read(live.stub, cell)
    assert counted.counter_entry.data.packet_count == 3
    assert counted.counter_entry.data.byte_count == 3 * len(FRAME)
    wanted = p4runtime_pb2.TableEntry(table_id=FWD)
    wanted.counter_data.SetInParent()
    (entry,) = read(live.stub, wanted)
    assert entry.table_entry.counter_data.packet_count == 3


def test_multicast_group_written_over_p4runtime_replicates(live):
    group = p4runtime_pb2.PacketReplicationEngineEntry()
    group.multicast_group_entry.multicast_group_id = 5
    group.multicast_group_entry.replicas.add(egress_port=3, instance=0)
    group.multicast_group_entry.replicas.add(egress_port=4, instance=1)
    entry = fwd_entry(2)
    entry.action.action.CopyFrom(action(SET_MCAST, b"\x05"))
    write(live.stub, update("INSERT", packet_replication_engine_entry=group),
          update("INSERT", table_entry=entry))
    assert sorted(port for port, _ in receive(live, 2, FRAME)) == [3, 4]


def test_lpm_entry_overrides_forwarding(live):
    write(live.stub, update("INSERT", table_entry=fwd_entry(1, port=2)),
          update("INSERT", table_entry=route_entry(bytes.fromhex("0a0000000000"), 8, port=6)))
    assert receive(live, 1, FRAME) == [(6, FRAME)]


def test_const_entry_drops_its_port_whatever_fwd_says(live):
    write(live.stub, update("INSERT", table_entry=fwd_entry(9, port=2)),
          update("INSERT", table_entry=fwd_entry(8, port=2)))
    assert receive(live, 9, FRAME) == []
    assert receive(live, 8, FRAME) == [(2, FRAME)]


def test_groups_and_clone_sessions_written_and_deleted_leave_no_replication_node(live):
    """The soak found 4 nodes left per job: a P4Runtime DELETE removed the group but kept the
    nodes its INSERT had made. Groups, MODIFYs and multi-replica clone sessions, 20 times."""
    for round_ in range(20):
        group = p4runtime_pb2.PacketReplicationEngineEntry()
        group.multicast_group_entry.multicast_group_id = 5
        for port in range(1, 2 + round_ % 4):
            group.multicast_group_entry.replicas.add(egress_port=port, instance=port)
        session = p4runtime_pb2.PacketReplicationEngineEntry()
        session.clone_session_entry.session_id = 7
        session.clone_session_entry.replicas.add(egress_port=3, instance=1)
        session.clone_session_entry.replicas.add(egress_port=4, instance=2)
        write(live.stub, update("INSERT", packet_replication_engine_entry=group),
              update("INSERT", packet_replication_engine_entry=session))
        write(live.stub, update("MODIFY", packet_replication_engine_entry=group),
              update("MODIFY", packet_replication_engine_entry=session))
        write(live.stub, update("DELETE", packet_replication_engine_entry=group),
              update("DELETE", packet_replication_engine_entry=session))
    assert live.switch.pre.nodes == {} and live.switch.mc_groups() == []
