"""The harnesses themselves: they reach the code they are meant to and their oracles fire."""

from __future__ import annotations

import numpy as np
import pytest

from fuzz import hosts, packets, p4runtime, stream
from fuzz.common import Finding, Reader, generated_functions
from fuzz.protomut import mutated
from fuzz.seeds import SEEDS
from fuzz.targets import TARGETS


def test_every_target_has_seeds_and_a_harness():
    assert set(SEEDS) == set(TARGETS)


def test_reader_runs_out_into_zeros():
    reader = Reader(b"\x01\x02")
    assert (reader.byte(), reader.int(2), reader.take(5), reader.left) == (1, 0x0200, b"", 0)


def test_packet_inputs_round_trip():
    sent = [(1, b"\x00" * 20), (7, b"abc")]
    assert packets.packets_of(packets.encode_packets(sent)) == sent


def test_packet_oracle_compares_c_and_python(monkeypatch):
    native, python = packets.switches("packet_l3")
    monkeypatch.setattr(python, "receive", lambda port, data: [(9, b"x")])
    with pytest.raises(Finding, match="C code sent"):
        packets.run("packet_l3", packets.encode_packets([(1, b"\x00" * 40)]))


def test_generated_packet_code_is_found_for_instrumenting():
    native, python = packets.switches("packet_l3")
    found = generated_functions()
    # the engine's fast path of both switches (what every packet runs) is among them, and
    # nothing of an imported module is (atheris instruments those at import)
    assert any(f is python._engine.fast for f in found)
    assert any(f is native._engine.fast for f in found)
    assert {f.__name__ for f in found} >= {"ingress", "egress", "deparse"}
    assert all(f.__code__.co_filename.startswith("<p4switch") for f in found)


def test_ina_round_trip_oracle_fires_on_a_lossy_encoder(monkeypatch):
    seed = SEEDS["host_ina"]()[0]
    monkeypatch.setattr(hosts.ina_wire, "encode", lambda packet: b"")
    with pytest.raises(Finding, match="decode/encode"):
        hosts.ina(seed)


def test_p4runtime_internal_status_is_a_finding():
    with pytest.raises(Finding, match="INTERNAL"):
        p4runtime._check_status("p4rt_write", p4runtime.Aborted(
            p4runtime.grpc.StatusCode.INTERNAL, "boom"))


def test_protobuf_mutation_changes_a_copy_only():
    base = p4runtime.base_updates(p4runtime.WRITE_PROGRAM)[0]
    before = base.SerializeToString()
    changed = [mutated(base, Reader(bytes([8, i, 1, 3, 4, 5, 6, 7, 8, 9]))) for i in range(20)]
    assert base.SerializeToString() == before
    assert any(m.SerializeToString() != before for m in changed)


def test_write_seeds_insert_entries():
    servicer = p4runtime._servicer(p4runtime.WRITE_PROGRAM)
    context = p4runtime.Context()
    updates = p4runtime.base_updates(p4runtime.WRITE_PROGRAM)
    servicer.Write(p4runtime.pb.WriteRequest(device_id=0, updates=updates), context)
    assert context.code is None, context.details     # every base update is valid
    assert len(updates) >= 5


def _stream_step(client, action, *data):
    return bytes([client + 3 * action, *data])


def test_stream_packet_out_comes_back_to_the_primary_as_packet_in(monkeypatch):
    received = []
    real_send = stream.Client.send
    monkeypatch.setattr(stream.Client, "send",
                        lambda self, r: received.append((self.name, r)) or real_send(self, r))
    frame = bytes(range(1, 15))
    stream.run(_stream_step(0, 0, 0, 1, 0)                        # client 0: election id 1
               + _stream_step(0, 2, 1, 0, 1, 1, len(frame)) + frame)   # PacketOut to port 1
    packet_ins = [r.packet for name, r in received if r.WhichOneof("update") == "packet"]
    # looped back on port 1, sent to the CPU with the packet_in header (ingress port 1)
    assert [(p.payload, p.metadata[0].value) for p in packet_ins] == [(frame, b"\x01")]


def test_stream_oracle_fires_when_a_primary_change_is_not_told_to_everybody(monkeypatch):
    from p4switch.server.arbitration import Arbitration

    real_update = Arbitration.update

    def only_the_sender(self, client, **kwargs):
        return [n for n in real_update(self, client, **kwargs) if n.client is client]

    monkeypatch.setattr(Arbitration, "update", only_the_sender)
    with pytest.raises(Finding, match="each last told they are primary"):
        stream.run(_stream_step(0, 0, 0, 1, 0) + _stream_step(1, 0, 0, 2, 0))


def test_stream_oracle_fires_on_a_stream_left_open(monkeypatch):
    from p4switch.server.device import P4RuntimeDevice

    monkeypatch.setattr(P4RuntimeDevice, "stream_close", lambda self, client: None)
    with pytest.raises(Finding, match="streams left"):
        stream.run(_stream_step(0, 0, 0, 1, 0))
    monkeypatch.undo()
    with stream.rig().device._streams:                            # tidy for the next test
        stream.rig().device._senders.clear()
        stream.rig().device._arbitration._clients.clear()
