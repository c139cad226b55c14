"""The standard P4Runtime shell (p4runtime-shell 0.0.6) against the server: as a library and as
the interactive program fed commands on stdin, exactly as an operator would use it."""

import subprocess
import sys

import pytest
from p4runtime_sh import shell
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from .helpers import CPU_IO_JSON, CPU_IO_P4INFO


@pytest.fixture
def shell_session(switch_server):
    shell.setup(
        device_id=0,
        grpc_addr=switch_server.address,
        election_id=(0, 1),
        config=shell.FwdPipeConfig(str(CPU_IO_P4INFO), str(CPU_IO_JSON)),
        verbose=False,
    )
    yield switch_server
    shell.teardown()


def test_shell_library_lists_tables_inserts_and_reads_back(shell_session):
    tables = sorted(table.name for table in shell.P4Objects(shell.P4Type.table))
    assert tables == ["Ingress.acl", "Ingress.blocked", "Ingress.ecmp", "Ingress.fwd", "Ingress.routes"]
    entry = shell.TableEntry("Ingress.fwd")(action="Ingress.to_port")
    entry.match["smeta.ingress_port"] = "1"
    entry.action["port"] = "2"
    entry.insert()
    acl = shell.TableEntry("Ingress.acl")(action="Ingress.drop")
    acl.match["hdr.eth.src"] = "0a:00:00:00:00:00&&&ff:00:00:00:00:00"
    acl.match["hdr.eth.ether_type"] = "0x0800..0x08ff"
    acl.priority = 5
    acl.insert()
    (back,) = list(shell.TableEntry("Ingress.fwd").read())
    assert back.match["smeta.ingress_port"].exact.value == b"\x01"
    assert back.action["port"].value == b"\x02"
    (back_acl,) = list(shell.TableEntry("Ingress.acl").read())
    assert back_acl.priority == 5
    assert back_acl.match["hdr.eth.src"].ternary.mask == b"\xff\x00\x00\x00\x00\x00"
    group = shell.MulticastGroupEntry(3).add(1).add(2, instance=1)
    group.insert()
    assert sorted(shell_session.switch.mc_group_get(3)) == [(1, 0), (2, 1)]
    with pytest.raises(P4RuntimeWriteException) as err:
        entry.insert()
    assert "ALREADY_EXISTS" in str(err.value)


def test_interactive_shell_driven_through_stdin(switch_server):
    commands = "\n".join([
        "print('TABLES', sorted(t.name for t in tables))",
        'te = table_entry["Ingress.fwd"](action="Ingress.to_port")',
        'te.match["smeta.ingress_port"] = "7"',
        'te.action["port"] = "9"',
        "te.insert()",
        'print("COUNT", len(list(table_entry["Ingress.fwd"].read())))',
        "",
        "exit",
        "",
    ])
    result = subprocess.run(
        [sys.executable, "-m", "p4runtime_sh", "--grpc-addr", switch_server.address,
         "--device-id", "0", "--election-id", "0,1",
         "--config", f"{CPU_IO_P4INFO},{CPU_IO_JSON}"],
        input=commands, capture_output=True, text=True, timeout=120,
    )
    assert "TABLES ['Ingress.acl', 'Ingress.blocked', 'Ingress.ecmp', 'Ingress.fwd', 'Ingress.routes']" in result.stdout, (
        result.stdout + result.stderr
    )
    assert "COUNT 1" in result.stdout
    entries = switch_server.switch.table_entries("Ingress.fwd")
    assert [(e.keys[0].value, e.params) for e in entries] == [(7, (9,))]


def test_shell_enables_a_digest_and_reads_its_lists(switch_server, tmp_path):
    """p4runtime-shell's DigestEntry and its stream's digest queue: what p4-learning's
    P4Runtime L2 learning controller uses."""
    import json

    from p4switch.compiler import compile_source

    from .learning_program import PROGRAM, frame
    result = compile_source(PROGRAM, "d.p4")
    (tmp_path / "d.json").write_text(json.dumps(result.bmv2))
    (tmp_path / "d.txtpb").write_text(result.p4info_text())
    shell.setup(device_id=0, grpc_addr=switch_server.address, election_id=(0, 1),
                config=shell.FwdPipeConfig(str(tmp_path / "d.txtpb"), str(tmp_path / "d.json")),
                verbose=False)
    try:
        digest = shell.DigestEntry("learn_t")
        digest.max_timeout_ns, digest.max_list_size, digest.ack_timeout_ns = 0, 1, 10**9
        digest.insert()
        (back,) = list(shell.DigestEntry("learn_t").read())
        assert back.max_list_size == 1 and back.ack_timeout_ns == 10**9
        switch_server.switch.receive(3, frame(0xA1))
        message = shell.client.get_stream_packet("digest", timeout=5)
        (data,) = message.digest.data
        assert [m.bitstring for m in data.struct.members] == [b"\xa1", b"\x03", b"\x08\x00"]
    finally:
        shell.teardown()
