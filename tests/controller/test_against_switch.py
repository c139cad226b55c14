"""The controller library against a real `inaemu switch` process (no ports, so no root needed).

A small program of this test's own (a ternary table, a register, a counter) is compiled with
`inaemu compile`, pushed over P4Runtime to a switch started with `--no-p4`, and then written and
read back through `SwitchClient`: what the controller encodes must be what the server decodes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.client import SwitchClient
from controller.errors import ConnectionFailed, P4RuntimeError

INAEMU = str(Path(sys.executable).with_name("inaemu"))

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_h eth; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(16) slots;
    counter(8, CounterType.packets_and_bytes) hits;
    action forward(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table classify {
        key = { hdr.eth.type : ternary; sm.ingress_port : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 64;
    }
    apply { classify.apply(); hits.count((bit<32>)sm.ingress_port); slots.write(0, 1); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def switch(tmp_path_factory):
    """(address, p4info, json) of a running `inaemu switch --no-p4` with a free gRPC port."""
    work = tmp_path_factory.mktemp("ctl")
    (work / "prog.p4").write_text(PROGRAM)
    built = subprocess.run([INAEMU, "compile", str(work / "prog.p4"), "-o", str(work / "prog.json"),
                            "--p4runtime-files", str(work / "prog.p4info.txtpb")],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    process = subprocess.Popen([INAEMU, "switch", "--no-p4", "--device-id", "3",
                                "--grpc-server-addr", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ready = process.stdout.readline()
        match = re.search(r"grpc (127\.0\.0\.1:\d+)", ready)
        assert match, f"no ready line: {ready!r} {process.stdout.read() if process.poll() else ''}"
        yield match.group(1), work / "prog.p4info.txtpb", work / "prog.json"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_push_write_and_read_back(switch):
    address, p4info, bmv2_json = switch
    with SwitchClient("sw", address, 3, timeout=10) as client:
        client.set_pipeline_files(p4info, bmv2_json)
        client.add_entry("classify", {"type": (0x0800, 0xFFFF), "ingress_port": 1}, "forward",
                         {"port": 2}, priority=10)
        client.add_entry("classify", {"ingress_port": 2}, "drop", priority=1)   # type: wildcard
        entries = sorted(client.read_table("classify"), key=lambda e: e.priority)
        assert [(e.match, e.action, e.params, e.priority) for e in entries] == [
            ({"sm.ingress_port": (2,)}, "I.drop", {}, 1),
            ({"hdr.eth.type": (0x0800, 0xFFFF), "sm.ingress_port": (1,)},
             "I.forward", {"port": 2}, 10)]

        client.write_register("slots", 5, 0xDEADBEEF)
        assert client.read_register("slots", 5) == {5: 0xDEADBEEF}
        cells = client.read_register("slots")
        assert len(cells) == 16 and cells[5] == 0xDEADBEEF and cells[4] == 0

        assert client.read_counter("hits") == {i: (0, 0) for i in range(8)}

        client.set_multicast_group(4, [(1, 0), (2, 0)])
        client.set_multicast_group(4, [(3, 1)])              # exists: replaced
        assert client.read_multicast_group(4) == [(3, 1)]


def test_the_real_server_reports_each_failed_update(switch):
    address, p4info, bmv2_json = switch
    with SwitchClient("sw", address, 3, timeout=10, election_id=(0, 2)) as client:
        client.fetch_p4info()
        with pytest.raises(P4RuntimeError) as info:
            client.add_entry("classify", {"ingress_port": 2}, "drop", priority=1)
    assert [u.code for u in info.value.updates] == ["ALREADY_EXISTS"]
    assert str(info.value).startswith("sw: Write failed:")


def test_wrong_device_id_is_refused(switch):
    address, _, _ = switch
    with pytest.raises(ConnectionFailed, match="sw: .*arbitration for device 99 failed: NOT_FOUND"):
        SwitchClient("sw", address, 99, timeout=3)
