"""Counters, direct counters, registers, meters and direct meters."""

import grpc
import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4switch.server.meter_config import meter_rates

from .entities import FWD, FWD_HITS, PORT_PKTS, RATE, ROUTES, SCRATCH, fwd_entry, route_entry
from .helpers import read, update, write, write_errors


def counter(index=None, packets=0, octets=0, counter_id=PORT_PKTS):
    message = p4runtime_pb2.CounterEntry(counter_id=counter_id)
    if index is not None:
        message.index.index = index
    message.data.packet_count = packets
    message.data.byte_count = octets
    return message


def test_counter_cells_modify_and_wildcard_read(server):
    write(server.stub, update("MODIFY", counter_entry=counter(3, 5, 500)))
    cells = read(server.stub, p4runtime_pb2.CounterEntry(counter_id=PORT_PKTS))
    assert len(cells) == 8
    assert [(c.counter_entry.index.index, c.counter_entry.data.packet_count,
             c.counter_entry.data.byte_count) for c in cells][3] == (3, 5, 500)
    assert len(read(server.stub, p4runtime_pb2.CounterEntry())) == 8  # every counter
    (one,) = read(server.stub, counter(3))
    assert one.counter_entry.data.byte_count == 500


def test_counter_errors(server):
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", counter_entry=counter(1)),
              update("MODIFY", counter_entry=counter(8, 1, 1)),
              update("MODIFY", counter_entry=counter(1, counter_id=42)))
    messages = [d.message for d in write_errors(err.value)]
    assert "only MODIFY" in messages[0]
    assert "index 8 not in 0..7" in messages[1]
    assert "no counter with id 42" in messages[2]
    with pytest.raises(grpc.RpcError) as err:
        read(server.stub, counter(9))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_direct_counter_through_table_entry_and_direct_counter_entry(server):
    entry = fwd_entry(1, port=2)
    entry.counter_data.packet_count = 7
    entry.counter_data.byte_count = 700
    write(server.stub, update("INSERT", table_entry=entry))
    wanted = p4runtime_pb2.TableEntry(table_id=FWD)
    wanted.counter_data.SetInParent()
    (back,) = read(server.stub, wanted)
    assert (back.table_entry.counter_data.packet_count, back.table_entry.counter_data.byte_count) == (7, 700)

    direct = p4runtime_pb2.DirectCounterEntry()
    direct.table_entry.CopyFrom(fwd_entry(1))
    direct.data.packet_count = 1
    direct.data.byte_count = 64
    write(server.stub, update("MODIFY", direct_counter_entry=direct))
    (back,) = read(server.stub, p4runtime_pb2.DirectCounterEntry())  # every table, every entry
    assert back.direct_counter_entry.table_entry.table_id == FWD
    assert back.direct_counter_entry.data.byte_count == 64
    no_counter = p4runtime_pb2.DirectCounterEntry()
    no_counter.table_entry.table_id = ROUTES
    with pytest.raises(grpc.RpcError) as err:
        read(server.stub, no_counter)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert FWD_HITS  # the P4Info id the direct counter has, for the record


def register(index=None, value=None):
    message = p4runtime_pb2.RegisterEntry(register_id=SCRATCH)
    if index is not None:
        message.index.index = index
    if value is not None:
        message.data.CopyFrom(p4data_pb2.P4Data(bitstring=value))
    return message


def test_register_write_read_and_width_check(server):
    write(server.stub, update("MODIFY", register_entry=register(2, b"\x00\x01\x02\x03")))
    (cell,) = read(server.stub, register(2))
    assert cell.register_entry.data.bitstring == b"\x01\x02\x03"
    cells = read(server.stub, p4runtime_pb2.RegisterEntry())
    assert [c.register_entry.data.bitstring for c in cells] == [b"\x00"] * 2 + [b"\x01\x02\x03"] + [b"\x00"] * 5
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("MODIFY", register_entry=register(2, b"\x01\x00\x00\x00\x00")))
    assert write_errors(err.value)[0].canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert server.switch.register_read("Ingress.scratch", 2) == 0x010203


def test_meter_and_direct_meter_configs(server):
    meter = p4runtime_pb2.MeterEntry(meter_id=RATE)
    meter.index.index = 1
    meter.config.CopyFrom(p4runtime_pb2.MeterConfig(cir=1_000_000, cburst=1500, pir=2_000_000, pburst=3000))
    write(server.stub, update("MODIFY", meter_entry=meter))
    cells = read(server.stub, p4runtime_pb2.MeterEntry(meter_id=RATE))
    assert [c.meter_entry.HasField("config") for c in cells] == [False, True, False, False]
    assert cells[1].meter_entry.config.pburst == 3000

    write(server.stub, update("INSERT", table_entry=route_entry(b"\x0a\x00\x00\x00\x00\x00", 8)))
    direct = p4runtime_pb2.DirectMeterEntry()
    direct.table_entry.CopyFrom(route_entry(b"\x0a\x00\x00\x00\x00\x00", 8))
    direct.table_entry.ClearField("action")
    direct.config.CopyFrom(p4runtime_pb2.MeterConfig(cir=10, cburst=1, pir=20, pburst=2))
    write(server.stub, update("MODIFY", direct_meter_entry=direct))
    (back,) = read(server.stub, p4runtime_pb2.DirectMeterEntry())
    assert back.direct_meter_entry.config.pir == 20

    bad = p4runtime_pb2.MeterEntry(meter_id=RATE)
    bad.index.index = 0
    bad.config.CopyFrom(p4runtime_pb2.MeterConfig(cir=5, pir=1))
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("MODIFY", meter_entry=bad))
    assert "cir must not exceed pir" in write_errors(err.value)[0].message


def test_meter_rates_convert_per_second_to_per_microsecond():
    config = p4runtime_pb2.MeterConfig(cir=1_000_000, cburst=1500, pir=2_000_000, pburst=3000)
    assert meter_rates(config) == [(1.0, 1500), (2.0, 3000)]
