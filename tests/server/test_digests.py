"""P4Runtime digests (p4switch/server/digests.py): DigestEntry writes and reads with
simple_switch_grpc's codes and words, the specification's batching, cache and acknowledgement
rules on the sans-I/O `DigestLists`, and DigestLists streamed to the primary from packets.
tests/server/test_digests_on_bmv2.py runs the same requests on simple_switch_grpc."""

from __future__ import annotations

import json

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.compiler import compile_source
from p4switch.runtime import Switch
from p4switch.server.digests import DigestLists
from p4switch.server.errors import RequestError

from ..compiler.helpers import program
from .helpers import RunningServer, pipeline_request, read, update, write, write_errors

INGRESS = """
    action learn() { meta.l.src = hdr.eth.src; meta.l.port = sm.ingress_port;
                     meta.l.flag = hdr.eth.ether_type == 7; meta.l.s = -2;
                     digest<learn_t>(1, meta.l); }
    apply {
        learn();
        meta.l.src = 0;       // after the call: the digest keeps the value at the call
        if (hdr.eth.ether_type == 1) { digest<tuple<bit<48>, bit<9>>>(1, {hdr.eth.dst, sm.ingress_port}); }
        sm.egress_spec = 1;
    }"""
DECLS = "struct learn_t { bit<48> src; bit<9> port; bool flag; int<8> s; }"
SECOND = 1_000_000_000


def compiled():
    return compile_source(program(INGRESS, decls=DECLS, meta_fields="learn_t l;"), "d.p4")


def frame(src: int, ether_type: int = 0, dst: int = 0x112233445566) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ether_type.to_bytes(2, "big") + \
        bytes(20)


def config(max_timeout_ns=0, max_list_size=1, ack_timeout_ns=SECOND, digest_id=0):
    entry = p4runtime_pb2.DigestEntry(digest_id=digest_id)
    entry.config.max_timeout_ns = max_timeout_ns
    entry.config.max_list_size = max_list_size
    entry.config.ack_timeout_ns = ack_timeout_ns
    return entry


@pytest.fixture
def lists():
    """DigestLists of the program's P4Info and its digests' ids by name."""
    info = compiled().p4info
    return DigestLists(info), {d.preamble.name: d.preamble.id for d in info.digests}


def sample(src: int, port: int = 3) -> bytes:
    return src.to_bytes(6, "big") + port.to_bytes(2, "big") + b"\x00" + b"\xfe"


def enable(lists_, ids, **kwargs):
    lists_.write(p4runtime_pb2.Update.INSERT, config(digest_id=ids["learn_t"], **kwargs))


def srcs(message) -> list[int]:
    return [int.from_bytes(d.struct.members[0].bitstring, "big") for d in message.data]


def test_nothing_is_sent_before_a_digest_entry_enables_it(lists):
    digests, ids = lists
    assert digests.offer("learn_t", sample(1), 0.0) is None
    enable(digests, ids)
    sent = digests.offer("learn_t", sample(1), 0.0)
    assert (sent.digest_id, sent.list_id, srcs(sent)) == (ids["learn_t"], 1, [1])


def test_a_sample_in_an_unacknowledged_list_is_dropped_until_the_ack(lists):
    digests, ids = lists
    enable(digests, ids, ack_timeout_ns=SECOND)
    first = digests.offer("learn_t", sample(1), 0.0)
    assert digests.offer("learn_t", sample(1), 0.1) is None       # in the cache
    assert srcs(digests.offer("learn_t", sample(2), 0.1)) == [2]  # distinct: sent
    digests.ack(p4runtime_pb2.DigestListAck(digest_id=ids["learn_t"], list_id=first.list_id))
    again = digests.offer("learn_t", sample(1), 0.2)
    assert (again.list_id, srcs(again)) == (3, [1])


def test_the_cache_forgets_a_list_after_the_ack_timeout(lists):
    digests, ids = lists
    enable(digests, ids, ack_timeout_ns=SECOND // 2)
    digests.offer("learn_t", sample(1), 10.0)
    assert digests.next_due() == pytest.approx(10.5)
    assert digests.due(10.4) == [] and digests.offer("learn_t", sample(1), 10.4) is None
    assert digests.due(10.5) == []                                 # expired, nothing to send
    assert srcs(digests.offer("learn_t", sample(1), 10.6)) == [1]


def test_without_an_ack_timeout_nothing_is_cached(lists):
    digests, ids = lists
    enable(digests, ids, ack_timeout_ns=0)
    assert srcs(digests.offer("learn_t", sample(1), 0.0)) == [1]
    assert srcs(digests.offer("learn_t", sample(1), 0.0)) == [1]
    assert digests.next_due() is None


def test_a_list_goes_when_full_or_when_its_first_sample_is_max_timeout_old(lists):
    digests, ids = lists
    enable(digests, ids, max_timeout_ns=SECOND // 4, max_list_size=3, ack_timeout_ns=0)
    assert digests.offer("learn_t", sample(1), 5.0) is None
    assert digests.offer("learn_t", sample(1), 5.0) is None       # a duplicate in the list
    assert digests.offer("learn_t", sample(2), 5.0) is None
    full = digests.offer("learn_t", sample(3), 5.0)
    assert srcs(full) == [1, 2, 3]
    assert digests.offer("learn_t", sample(4), 6.0) is None
    assert digests.next_due() == 6.25
    assert digests.due(6.125) == []
    (late,) = digests.due(6.25)
    assert (late.list_id, srcs(late)) == (2, [4])


def test_no_list_size_limit_means_the_timeout_alone_decides(lists):
    digests, ids = lists
    enable(digests, ids, max_timeout_ns=SECOND, max_list_size=0)
    for src in range(50):
        assert digests.offer("learn_t", sample(src), 0.0) is None
    (message,) = digests.due(1.0)
    assert srcs(message) == list(range(50))


def test_modify_and_delete(lists):
    digests, ids = lists
    enable(digests, ids, max_timeout_ns=SECOND, max_list_size=0)
    digests.offer("learn_t", sample(1), 0.0)
    digests.write(p4runtime_pb2.Update.MODIFY, config(digest_id=ids["learn_t"]))
    assert srcs(digests.offer("learn_t", sample(2), 0.1)) == [1, 2]   # max_timeout 0 now
    digests.write(p4runtime_pb2.Update.DELETE, p4runtime_pb2.DigestEntry(digest_id=ids["learn_t"]))
    assert digests.offer("learn_t", sample(3), 0.2) is None
    enable(digests, ids)
    assert digests.offer("learn_t", sample(1), 0.3).list_id == 2      # ids go on counting


@pytest.mark.parametrize("kind, entry, code, message", [
    ("MODIFY", "learn_t", "NOT_FOUND", "Digest {id} not configured"),
    ("DELETE", "learn_t", "NOT_FOUND", "Digest {id} not configured"),
    ("INSERT", 12345, "NOT_FOUND", "12345 is not a valid digest id"),
])
def test_refused_writes(lists, kind, entry, code, message):
    digests, ids = lists
    digest_id = ids.get(entry, entry)
    with pytest.raises(RequestError) as info:
        digests.write(getattr(p4runtime_pb2.Update, kind), config(digest_id=digest_id))
    assert (info.value.code, info.value.message) == (code, message.format(id=digest_id))


def test_a_second_insert_and_negative_values_are_refused(lists):
    digests, ids = lists
    with pytest.raises(RequestError) as info:
        digests.write(p4runtime_pb2.Update.INSERT,
                      config(digest_id=ids["learn_t"], max_timeout_ns=-1))
    assert info.value.code == "INVALID_ARGUMENT" and "max_timeout_ns" in info.value.message
    enable(digests, ids)
    with pytest.raises(RequestError) as info:
        enable(digests, ids)
    assert (info.value.code, info.value.message) == \
        ("ALREADY_EXISTS", f"Digest {ids['learn_t']} already configured")


def test_samples_of_no_digest_or_of_the_wrong_size_are_dropped_and_counted(lists):
    digests, ids = lists
    enable(digests, ids)
    assert digests.offer("tuple_0", sample(1), 0.0) is None         # p4c's name for a tuple
    assert digests.offer("learn_t", sample(1)[:-1], 0.0) is None
    assert digests.samples_dropped == 2


# -- through the server, from packets -------------------------------------------------------

@pytest.fixture
def served(tmp_path):
    """A server around a runtime switch, the program pushed by a primary stream client;
    (running server, digests' ids by name)."""
    result = compiled()
    (tmp_path / "d.json").write_text(json.dumps(result.bmv2))
    (tmp_path / "d.p4info.txtpb").write_text(result.p4info_text())
    running = RunningServer(Switch(None))
    running.primary = running.stream()
    assert running.primary.arbitrate(1).arbitration.status.code == 0
    running.stub.SetForwardingPipelineConfig(
        pipeline_request(tmp_path / "d.p4info.txtpb", tmp_path / "d.json"))
    yield running, {d.preamble.name: d.preamble.id for d in result.p4info.digests}
    running.close()


def test_packets_give_digest_lists_on_the_primary_stream(served):
    running, ids = served
    write(running.stub, update("INSERT", digest_entry=config(digest_id=ids["learn_t"])))
    running.switch.receive(3, frame(0xAABBCCDDEEFF, ether_type=7))
    message = running.primary.next("digest").digest
    assert (message.digest_id, message.list_id) == (ids["learn_t"], 1)
    (data,) = message.data
    members = [m.WhichOneof("data") for m in data.struct.members]
    assert members == ["bitstring", "bitstring", "bool", "bitstring"]
    assert [data.struct.members[i].bitstring for i in (0, 1, 3)] == \
        [bytes.fromhex("aabbccddeeff"), b"\x03", b"\xfe"]         # int<8> -2: two's complement
    assert data.struct.members[2].bool is True
    running.switch.receive(3, frame(0xAABBCCDDEEFF, ether_type=7))   # cached: no list
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = ids["learn_t"], 1
    running.primary.send(ack)
    # the stream's messages are handled in order: once this arbitration's answer is back, the
    # ack was taken (the frames below enter the switch directly, not over the stream)
    assert running.primary.arbitrate(1).arbitration.status.code == 0
    write(running.stub, update("INSERT", digest_entry=config(digest_id=ids["digest_0"])))
    running.switch.receive(4, frame(0x1234, ether_type=1))           # the tuple digest wins
    tuple_list = running.primary.next("digest").digest
    assert tuple_list.digest_id == ids["digest_0"]
    assert [m.bitstring for m in tuple_list.data[0].tuple.members] == \
        [bytes.fromhex("112233445566"), b"\x04"]
    running.switch.receive(3, frame(0xAABBCCDDEEFF, ether_type=7))   # acked: sent again
    assert running.primary.next("digest").digest.list_id == 2


def test_a_list_waiting_for_its_timeout_is_sent_by_the_server_thread(served):
    running, ids = served
    write(running.stub, update("INSERT", digest_entry=config(
        digest_id=ids["learn_t"], max_timeout_ns=SECOND // 20, max_list_size=10)))
    for src in (1, 2, 1):
        running.switch.receive(3, frame(src))
    message = running.primary.next("digest", timeout=5.0).digest
    assert [int.from_bytes(d.struct.members[0].bitstring, "big") for d in message.data] == [1, 2]


def test_digest_entries_are_read_back_as_written(served):
    running, ids = served
    entry = config(digest_id=ids["learn_t"], max_timeout_ns=7, max_list_size=3)
    write(running.stub, update("INSERT", digest_entry=entry))
    (got,) = read(running.stub, p4runtime_pb2.DigestEntry(digest_id=ids["learn_t"]))
    assert got.digest_entry == entry
    with pytest.raises(grpc.RpcError) as info:
        read(running.stub, p4runtime_pb2.DigestEntry(digest_id=ids["digest_0"]))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        read(running.stub, p4runtime_pb2.DigestEntry())
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "digest_id must be set" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        write(running.stub, update("INSERT", digest_entry=entry))
    (error,) = write_errors(info.value)
    assert error.canonical_code == grpc.StatusCode.ALREADY_EXISTS.value[0]


def test_converters_of_the_types_a_digest_can_have():
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2, p4types_pb2
    from p4.v1 import p4data_pb2

    from p4switch.server.digests import converter
    info = text_format.Parse("""
        type_info {
          serializable_enums { key: "E" value { underlying_type { bitwidth: 12 } } }
          new_types { key: "Port" value { original_type { bitstring { bit { bitwidth: 9 } } } } }
          new_types { key: "Tr" value { translated_type { uri: "u" sdn_bitwidth: 32 } } }
          structs { key: "S" value {
            members { name: "a" type_spec { new_type { name: "Port" } } }
            members { name: "b" type_spec { serializable_enum { name: "E" } } }
            members { name: "c" type_spec { tuple { members { bool { } }
                                                    members { bitstring { int { bitwidth: 4 } } } } } } } }
        }""", p4info_pb2.P4Info()).type_info
    spec = p4types_pb2.P4DataTypeSpec()
    spec.struct.name = "S"
    convert, size = converter(spec, info)
    assert size == 2 + 2 + 1 + 1
    data = p4data_pb2.P4Data()
    assert convert(bytes.fromhex("0105" "0abc" "01" "0f"), 0, data) == 6
    a, b, c = data.struct.members
    assert (a.bitstring, b.enum_value) == (b"\x01\x05", b"\x0a\xbc")
    assert (c.tuple.members[0].bool, c.tuple.members[1].bitstring) == (True, b"\x0f")
    for text, code in (('new_type { name: "Tr" }', "UNIMPLEMENTED"),
                       ('struct { name: "Missing" }', "INVALID_ARGUMENT"),
                       ('error { }', "UNIMPLEMENTED"),
                       ('bitstring { varbit { max_bitwidth: 8 } }', "UNIMPLEMENTED")):
        with pytest.raises(RequestError) as info_:
            converter(text_format.Parse(text, p4types_pb2.P4DataTypeSpec()), info)
        assert info_.value.code == code
