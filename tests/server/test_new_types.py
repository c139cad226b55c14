"""The server and types made by `type` (P4Info's type_name, new_type, type_info.new_types).

A register of a new type takes values of the type it renames; keys and action data of a new
type are their bits. A type with @p4runtime_translation has the controller's width in P4Info,
not the data plane's, and this server (like simple_switch_grpc) does not translate: writes that
use it and packet I/O headers holding it are refused, never stored with the wrong width.
"""

from __future__ import annotations

import json

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.compiler import compile_source

from ..compiler.helpers import program
from .helpers import pipeline_request, read, update, write, write_errors

DECLS = ('type bit<8> Level_t;\n'
         '@p4runtime_translation("p4.org/psa/v1/PortId_t", 32) type bit<9> Port_t;')
BODY = """
    register<Level_t>(2) levels;
    action set_level(Level_t v) { meta.level = v; levels.write(0, v); }
    table by_level { key = { meta.level : exact; } actions = { set_level; NoAction; } }
    table by_port { key = { meta.port : exact; } actions = { set_level; NoAction; } }
    apply { by_level.apply(); by_port.apply(); }"""


def compiled(tmp_path, src: str):
    result = compile_source(src, "p.p4")
    (tmp_path / "p.json").write_text(json.dumps(result.bmv2))
    (tmp_path / "p.p4info.txtpb").write_text(result.p4info_text())
    return result.p4info


@pytest.fixture
def pushed(switch_server, tmp_path):
    p4info = compiled(tmp_path, program(BODY, decls=DECLS,
                                        meta_fields="Level_t level; Port_t port;"))
    client = switch_server.stream()
    assert client.arbitrate(1).arbitration.status.code == 0
    switch_server.stub.SetForwardingPipelineConfig(
        pipeline_request(tmp_path / "p.p4info.txtpb", tmp_path / "p.json"))
    ids = {e.preamble.name.split(".")[-1]: e.preamble.id
           for e in list(p4info.tables) + list(p4info.actions) + list(p4info.registers)}
    return switch_server, ids


def entry(ids, table: str, key: bytes, level: bytes) -> p4runtime_pb2.TableEntry:
    message = p4runtime_pb2.TableEntry(table_id=ids[table])
    match = message.match.add(field_id=1)
    match.exact.value = key
    message.action.action.action_id = ids["set_level"]
    message.action.action.params.add(param_id=1, value=level)
    return message


def register_cell(ids, index: int, value: bytes | None = None) -> p4runtime_pb2.RegisterEntry:
    message = p4runtime_pb2.RegisterEntry(register_id=ids["levels"])
    message.index.index = index
    if value is not None:
        message.data.bitstring = value
    return message


def test_a_register_of_a_new_type_holds_values_of_its_width(pushed):
    server, ids = pushed
    write(server.stub, update("MODIFY", register_entry=register_cell(ids, 1, b"\x7f")))
    (back,) = read(server.stub, register_cell(ids, 1))
    assert back.register_entry.data.bitstring == b"\x7f"
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("MODIFY", register_entry=register_cell(ids, 1, b"\x01\xff")))
    assert "does not fit in 8 bits" in write_errors(err.value)[0].message


def test_keys_and_action_data_of_a_new_type_are_their_bits(pushed):
    server, ids = pushed
    write(server.stub, update("INSERT", table_entry=entry(ids, "by_level", b"\x05", b"\x06")))
    (back,) = read(server.stub, p4runtime_pb2.TableEntry(table_id=ids["by_level"]))
    assert back.table_entry.match[0].exact.value == b"\x05"
    assert back.table_entry.action.action.params[0].value == b"\x06"


def test_a_translated_key_is_refused_not_stored_with_the_wrong_width(pushed):
    server, ids = pushed
    with pytest.raises(grpc.RpcError) as err:
        write(server.stub, update("INSERT", table_entry=entry(ids, "by_port", b"\x00\x00\x01\x00",
                                                              b"\x01")))
    (error,) = write_errors(err.value)
    assert error.canonical_code == grpc.StatusCode.UNIMPLEMENTED.value[0]
    assert "match field 'meta.port' is of type Port_t, which has @p4runtime_translation" in \
        error.message
    assert read(server.stub, p4runtime_pb2.TableEntry(table_id=ids["by_port"])) == []


def test_a_packet_io_header_with_a_translated_field_is_refused_with_the_pipeline(
        switch_server, tmp_path):
    compiled(tmp_path, program(
        "apply { }", decls=DECLS + '\n@controller_header("packet_in") header pin_t '
                                   "{ Port_t port; bit<7> pad; }", header_fields="pin_t pin;"))
    client = switch_server.stream()
    assert client.arbitrate(1).arbitration.status.code == 0
    with pytest.raises(grpc.RpcError) as err:
        switch_server.stub.SetForwardingPipelineConfig(
            pipeline_request(tmp_path / "p.p4info.txtpb", tmp_path / "p.json"))
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "controller header 'packet_in' field 'port' is of type Port_t" in err.value.details()


def test_registers_of_signed_bits_and_of_a_serializable_enum_take_their_width(
        switch_server, tmp_path):
    p4info = compiled(tmp_path, program(
        "register<int<8>>(2) r;\nregister<E>(2) re;\n"
        "apply { r.write(0, 8s1); re.write(0, E.A); }", decls="enum bit<4> E { A = 1 }"))
    client = switch_server.stream()
    assert client.arbitrate(1).arbitration.status.code == 0
    switch_server.stub.SetForwardingPipelineConfig(
        pipeline_request(tmp_path / "p.p4info.txtpb", tmp_path / "p.json"))
    ids = {r.preamble.name.split(".")[-1]: r.preamble.id for r in p4info.registers}
    for name, fits, too_wide in (("r", b"\xff", b"\x01\x00"), ("re", b"\x0f", b"\x10")):
        cell = p4runtime_pb2.RegisterEntry(register_id=ids[name])
        cell.index.index = 1
        cell.data.bitstring = fits
        write(switch_server.stub, update("MODIFY", register_entry=cell))
        wanted = p4runtime_pb2.RegisterEntry(register_id=ids[name])
        wanted.index.index = 1
        (back,) = read(switch_server.stub, wanted)
        assert back.register_entry.data.bitstring == fits
        cell.data.bitstring = too_wide
        with pytest.raises(grpc.RpcError) as err:
            write(switch_server.stub, update("MODIFY", register_entry=cell))
        assert "does not fit in" in write_errors(err.value)[0].message
