"""The P4Runtime StreamChannel: client arbitration, PacketOut and PacketIn, on
tests/server/programs/cpu_io.p4 (a CPU port 64 with packet_out/packet_in controller headers).

The harness drives `P4RuntimeDevice`'s stream methods in process, as the gRPC servicer does for
each stream (`stream_open`, `stream_message` per message, `stream_close` when the stream ends),
with up to 3 clients. It does not go through `P4RuntimeServicer.StreamChannel`, whose reading
thread ends a stream quietly on any exception (a client going away looks like one): a bug there
would be lost. PacketOuts reach the switch on the CPU port (as `Driver.packet_out` does, after the
call that produced them); what leaves on the CPU port, or on port 1 (looped back, and `fwd`
sends it to the CPU), comes to the primary as a PacketIn.

An input is up to 24 steps, each a byte (client = byte % 3, action = byte // 3 % 8) and the
action's bytes: an arbitration update (device id, election id, role), a PacketOut (metadata,
payload), an empty message, a serialized `StreamMessageRequest`, a structure-aware mutation of
a valid arbitration or PacketOut, or the end of that client's stream. At the end every stream
is closed.

Allowed out: `RequestError` from `stream_open`/`stream_message` (the stream ends with it as its
status), never with code INTERNAL. Oracles: no stream error response is INTERNAL; among the
clients that took part in arbitration, their latest arbitration responses agree (at most one
says OK, i.e. primary, and all carry the same election id: when the primary changes, every
client is told); after every stream closed, the device has no stream and no primary left."""

from __future__ import annotations

import functools

from google.protobuf.message import DecodeError
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4switch.runtime import Switch
from p4switch.server.device import P4RuntimeDevice
from p4switch.server.errors import INTERNAL, RequestError

from .common import Finding, Reader, compiled, python_packet_code
from .p4runtime import Context, pipeline_request
from .protomut import mutated

PROGRAM = "tests/server/programs/cpu_io.p4"
CPU_PORT = 64
LOOPBACK_PORT = 1
CLIENTS = 3
MAX_STEPS = 24
DEVICE_ID = 0


class Rig:
    """One device on cpu_io.p4, its switch, and the PacketOuts waiting to enter the switch."""

    def __init__(self):
        from p4switch.server.service import P4RuntimeServicer

        self.queued: list[bytes] = []
        with python_packet_code():
            self.switch = Switch(None)
            self.device = P4RuntimeDevice(self.switch, device_id=DEVICE_ID,
                                          packet_out=self.queued.append)
            servicer = P4RuntimeServicer(self.device)
            servicer.SetForwardingPipelineConfig(pipeline_request(PROGRAM), Context())
            _, _, p4info = compiled(PROGRAM)
            servicer.Write(_fwd_to_cpu(p4info), Context())

    def pump(self) -> None:
        """The PacketOuts into the switch on the CPU port. What the pipeline sends to the CPU
        port comes back as a PacketIn to the primary; port 1 has a loopback cable, and `fwd`
        sends what arrives on port 1 to the CPU (with a packet_in header)."""
        arrivals = [(CPU_PORT, data) for data in self.queued]
        self.queued.clear()
        for _ in range(4):                         # out of port 1 and in again, a few times
            outs = [out for port, data in arrivals for out in self.switch.receive(port, data)]
            for port, data in outs:
                if port == CPU_PORT:
                    self.device.packet_in(bytes(data))
            arrivals = [(port, bytes(data)) for port, data in outs if port == LOOPBACK_PORT]


def _fwd_to_cpu(p4info) -> pb.WriteRequest:
    table = next(t for t in p4info.tables if t.preamble.name == "Ingress.fwd")
    action = next(a for a in p4info.actions if a.preamble.name == "Ingress.to_cpu")
    entry = pb.TableEntry(table_id=table.preamble.id)
    entry.match.add(field_id=table.match_fields[0].id).exact.value = bytes([LOOPBACK_PORT])
    entry.action.action.action_id = action.preamble.id
    update = pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=entry))
    return pb.WriteRequest(device_id=DEVICE_ID, updates=[update])


@functools.cache
def rig() -> Rig:
    return Rig()


class Client:
    """One stream: what the device sent it."""

    def __init__(self, name: str):
        self.name = name
        self.responses: list[pb.StreamMessageResponse] = []
        self.arbitration: pb.MasterArbitrationUpdate | None = None

    def send(self, response: pb.StreamMessageResponse) -> bool:
        response = pb.StreamMessageResponse.FromString(response.SerializeToString())
        if response.WhichOneof("update") == "error" and \
                response.error.canonical_code == code_pb2.INTERNAL:
            raise Finding(f"p4rt_stream: INTERNAL stream error to {self.name}: "
                          f"{response.error.message}")
        if response.WhichOneof("update") == "arbitration":
            self.arbitration = response.arbitration
        self.responses.append(response)
        return True


def _election_id(reader: Reader, update: pb.MasterArbitrationUpdate) -> None:
    how = reader.byte() % 6
    if how == 0:
        return                                     # none: a backup
    if how <= 3:
        update.election_id.low = how               # small ids: clients often collide
    elif how == 4:
        update.election_id.low = reader.int(8)
    else:
        update.election_id.high = reader.int(8)
        update.election_id.low = reader.int(8)


def arbitration_message(reader: Reader) -> pb.StreamMessageRequest:
    message = pb.StreamMessageRequest()
    update = message.arbitration
    update.device_id = reader.pick([DEVICE_ID, DEVICE_ID, DEVICE_ID, 1, (1 << 64) - 1])
    _election_id(reader, update)
    role = reader.byte() % 8
    if role == 6:
        update.role.id = 1
    elif role == 7:
        update.role.name = "other"
    return message


def packet_out_message(reader: Reader) -> pb.StreamMessageRequest:
    message = pb.StreamMessageRequest()
    for _ in range(reader.byte() % 4):
        meta = message.packet.metadata.add(metadata_id=reader.pick([1, 2, 1, 3]))
        meta.value = reader.take(reader.byte() % 4)
    message.packet.payload = reader.take(reader.byte())
    return message


def _message(reader: Reader, action: int) -> pb.StreamMessageRequest | None:
    if action <= 1:
        return arbitration_message(reader)
    if action <= 3:
        return packet_out_message(reader)
    if action == 4:
        return pb.StreamMessageRequest()           # no update: UNIMPLEMENTED on the stream
    if action == 5:
        try:
            return pb.StreamMessageRequest.FromString(reader.take(reader.byte()))
        except DecodeError:
            return None
    base = arbitration_message(reader) if reader.byte() & 1 else packet_out_message(reader)
    return mutated(base, reader)


def _check_agreement(clients: dict[int, Client], connected: set[int]) -> None:
    told = [clients[i] for i in sorted(connected) if clients[i].arbitration is not None]
    primaries = [c.name for c in told if c.arbitration.status.code == code_pb2.OK]
    if len(primaries) > 1:
        raise Finding(f"p4rt_stream: {primaries} were each last told they are primary")
    ids = {(c.arbitration.election_id.high, c.arbitration.election_id.low,
            c.arbitration.HasField("election_id")) for c in told}
    if len(ids) > 1:
        raise Finding(f"p4rt_stream: the clients' last arbitration responses name different "
                      f"election ids: {sorted(ids)}")


def run(data: bytes) -> None:
    the_rig = rig()
    device = the_rig.device
    reader = Reader(data)
    clients: dict[int, Client] = {}
    keys: dict[int, object] = {}                   # a stream's identity, new per (re)open
    connected: set[int] = set()

    def close(index: int) -> None:
        device.stream_close(keys[index])
        connected.discard(index)
        clients[index].arbitration = None

    try:
        for _ in range(MAX_STEPS):
            if not reader.left:
                break
            step = reader.byte()
            index, action = step % CLIENTS, step // CLIENTS % 8
            if action == 7:
                if index in connected:
                    close(index)
                continue
            message = _message(reader, action)
            if message is None:
                continue
            if index not in connected:
                clients[index] = Client(f"client {index}")
                keys[index] = object()
                device.stream_open(keys[index], clients[index].send)
                connected.add(index)
            try:
                device.stream_message(keys[index], message)
            except RequestError as error:          # the stream ends with this status
                if error.code == INTERNAL:
                    raise Finding(f"p4rt_stream: INTERNAL: {error.message}") from error
                close(index)
            the_rig.pump()
            _check_agreement(clients, connected)
    finally:
        for index in sorted(connected):
            close(index)
    with device._streams:
        left = (len(device._senders), device._arbitration.primary)
    if left != (0, None):
        raise Finding(f"p4rt_stream: after every stream closed: {left[0]} streams left, "
                      f"primary {left[1]!r}")


def TestOneInput(data: bytes) -> None:
    run(data)
