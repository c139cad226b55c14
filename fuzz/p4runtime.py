"""P4Runtime requests to the server's servicer, in process (no socket): the same methods the
gRPC server calls, with a stand-in `ServicerContext`.

Targets: `p4rt_set` (SetForwardingPipelineConfig with p4src/l3_forward.p4's P4Info and JSON),
`p4rt_write` and `p4rt_read` (Write and Read against p4src/ina.p4 committed, which has tables,
registers, counters, multicast groups and clone sessions). An input is either a serialized
request as it would arrive on the wire (first byte odd), or (first byte even) a choice of a
valid base request made from the program's P4Info plus structure-aware mutations of its fields
(fuzz/protomut.py).

Allowed out: a gRPC status (context.abort) other than INTERNAL; for Write, per-update errors in
`grpc-status-details-bin` none of which is INTERNAL (the server's code for "a bug of ours").
Anything else raised, or INTERNAL, is a finding."""

from __future__ import annotations

import functools

import grpc
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4switch.runtime import Switch
from p4switch.server.device import P4RuntimeDevice
from p4switch.server.service import P4RuntimeServicer

from .common import Finding, Reader, compiled, python_packet_code
from .protomut import mutated

Set = pb.SetForwardingPipelineConfigRequest


class Aborted(Exception):
    def __init__(self, code, details):
        super().__init__(f"{code}: {details}")
        self.code, self.details = code, details


class Context:
    """The part of grpc.ServicerContext the servicer uses."""

    def __init__(self):
        self.code = None
        self.details = None
        self.trailing = ()

    def abort(self, code, details):
        raise Aborted(code, details)

    def set_code(self, code):
        self.code = code

    def set_details(self, details):
        self.details = details

    def set_trailing_metadata(self, metadata):
        self.trailing = metadata

    def add_callback(self, callback):
        return True


def pipeline_request(program: str, action=Set.VERIFY_AND_COMMIT) -> Set:
    _, json_text, p4info = compiled(program)
    request = Set(device_id=0, action=action)
    request.config.p4info.CopyFrom(p4info)
    request.config.p4_device_config = json_text.encode()
    return request


def _servicer(program: str) -> P4RuntimeServicer:
    device = P4RuntimeDevice(Switch(None), device_id=0, packet_out=lambda data: None)
    servicer = P4RuntimeServicer(device)
    servicer.SetForwardingPipelineConfig(pipeline_request(program), Context())
    return servicer


def _width_bytes(bits: int, value: int = 1) -> bytes:
    return (value % (1 << bits)).to_bytes((bits + 7) // 8, "big")


def _table_entry(p4info, table, action_id: int) -> pb.TableEntry:
    entry = pb.TableEntry(table_id=table.preamble.id)
    ternary = False
    for mf in table.match_fields:
        m = entry.match.add(field_id=mf.id)
        kind = mf.match_type
        if kind == mf.EXACT:
            m.exact.value = _width_bytes(mf.bitwidth)
        elif kind == mf.LPM:
            m.lpm.value = _width_bytes(mf.bitwidth)
            m.lpm.prefix_len = mf.bitwidth
        elif kind == mf.TERNARY:
            m.ternary.value = _width_bytes(mf.bitwidth)
            m.ternary.mask = _width_bytes(mf.bitwidth, -1)
            ternary = True
        elif kind == mf.RANGE:
            m.range.low = _width_bytes(mf.bitwidth, 0)
            m.range.high = _width_bytes(mf.bitwidth, 1)
            ternary = True
        else:
            m.optional.value = _width_bytes(mf.bitwidth)
            ternary = True
    if ternary:
        entry.priority = 1
    action = next(a for a in p4info.actions if a.preamble.id == action_id)
    entry.action.action.action_id = action_id
    for param in action.params:
        entry.action.action.params.add(param_id=param.id, value=_width_bytes(param.bitwidth))
    return entry


@functools.cache
def base_updates(program: str) -> tuple[pb.Update, ...]:
    """One valid INSERT per table (its first action) and per other writable entity kind."""
    _, _, p4info = compiled(program)
    updates = []
    for table in p4info.tables:
        if table.action_refs and not table.implementation_id:
            refs = [r.id for r in table.action_refs if r.scope != r.DEFAULT_ONLY]
            if refs:
                entity = pb.Entity(table_entry=_table_entry(p4info, table, refs[0]))
                updates.append(pb.Update(type=pb.Update.INSERT, entity=entity))
    group = pb.Entity()
    group.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 7
    group.packet_replication_engine_entry.multicast_group_entry.replicas.add(
        egress_port=1, instance=1)
    updates.append(pb.Update(type=pb.Update.INSERT, entity=group))
    clone = pb.Entity()
    clone.packet_replication_engine_entry.clone_session_entry.session_id = 5
    clone.packet_replication_engine_entry.clone_session_entry.replicas.add(egress_port=2)
    updates.append(pb.Update(type=pb.Update.INSERT, entity=clone))
    for register in p4info.registers[:2]:
        entity = pb.Entity()
        entity.register_entry.register_id = register.preamble.id
        entity.register_entry.index.index = 1
        entity.register_entry.data.bitstring = _width_bytes(
            register.type_spec.bitstring.bit.bitwidth or 32, 5)
        updates.append(pb.Update(type=pb.Update.MODIFY, entity=entity))
    for counter in p4info.counters[:2]:
        entity = pb.Entity()
        entity.counter_entry.counter_id = counter.preamble.id
        entity.counter_entry.index.index = 0
        entity.counter_entry.data.packet_count = 3
        entity.counter_entry.data.byte_count = 300
        updates.append(pb.Update(type=pb.Update.MODIFY, entity=entity))
    return tuple(updates)


@functools.cache
def base_reads(program: str) -> tuple[pb.Entity, ...]:
    """Wildcard reads of every entity kind, and exact reads of the writes above."""
    entities = [pb.Entity(table_entry=pb.TableEntry()),
                pb.Entity(counter_entry=pb.CounterEntry()),
                pb.Entity(register_entry=pb.RegisterEntry()),
                pb.Entity(direct_counter_entry=pb.DirectCounterEntry()),
                pb.Entity(meter_entry=pb.MeterEntry())]
    pre = pb.Entity()
    pre.packet_replication_engine_entry.multicast_group_entry.SetInParent()
    entities.append(pre)
    entities += [u.entity for u in base_updates(program)]
    return tuple(entities)


def _check_status(target: str, error: Aborted) -> None:
    if error.code == grpc.StatusCode.INTERNAL:
        raise Finding(f"{target}: INTERNAL: {error.details}")


def _check_write_errors(context: Context) -> None:
    for key, value in context.trailing:
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for packed in status.details:
                detail = pb.Error()
                packed.Unpack(detail)
                if detail.canonical_code == code_pb2.INTERNAL:
                    raise Finding(f"p4rt_write: INTERNAL: {detail.message}")


def _request(reader: Reader, cls, base):
    if reader.byte() & 1:
        try:
            return cls.FromString(reader.rest())
        except DecodeError:
            return None
    return mutated(base, reader)


def _write_base(reader: Reader) -> pb.WriteRequest:
    updates = base_updates(WRITE_PROGRAM)
    request = pb.WriteRequest(device_id=0, atomicity=pb.WriteRequest.CONTINUE_ON_ERROR)
    for _ in range(1 + reader.byte() % 3):
        request.updates.append(reader.pick(updates))
    return request


SET_PROGRAM = "p4src/l3_forward.p4"
WRITE_PROGRAM = "p4src/ina.p4"


@functools.cache
def servicer(program: str, user: str = "") -> P4RuntimeServicer:
    """One device per target (`user`), so that Write's inputs do not change what Read sees."""
    with python_packet_code():
        return _servicer(program)


def set_pipeline(data: bytes) -> None:
    reader = Reader(data)
    base = pipeline_request(SET_PROGRAM, action=reader.pick(
        [Set.VERIFY, Set.VERIFY_AND_COMMIT, Set.VERIFY_AND_SAVE, Set.RECONCILE_AND_COMMIT]))
    request = _request(reader, Set, base)
    if request is None:
        return
    try:
        with python_packet_code():
            servicer(SET_PROGRAM, "set").SetForwardingPipelineConfig(request, Context())
    except Aborted as error:
        _check_status("p4rt_set", error)


def write(data: bytes) -> None:
    reader = Reader(data)
    request = _request(reader, pb.WriteRequest, _write_base(reader))
    if request is None:
        return
    context = Context()
    try:
        servicer(WRITE_PROGRAM, "write").Write(request, context)
    except Aborted as error:
        _check_status("p4rt_write", error)
    _check_write_errors(context)


def read(data: bytes) -> None:
    reader = Reader(data)
    base = pb.ReadRequest(device_id=0)
    base.entities.append(reader.pick(base_reads(WRITE_PROGRAM)))
    request = _request(reader, pb.ReadRequest, base)
    if request is None:
        return
    device = servicer(WRITE_PROGRAM, "read")
    if not getattr(device, "_read_state", False):      # something to read back
        for update in base_updates(WRITE_PROGRAM):
            device.Write(pb.WriteRequest(device_id=0, updates=[update]), Context())
        device._read_state = True
    try:
        for _ in device.Read(request, Context()):
            pass
    except Aborted as error:
        _check_status("p4rt_read", error)
