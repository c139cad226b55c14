"""`inaemu controller` end to end against in-process P4Runtime servers."""

from __future__ import annotations

import dataclasses

from p4.v1 import p4runtime_pb2

from fake_p4runtime import FakeP4Runtime
from inaemu.cli import main
from p4info_sample import SAMPLE_P4INFO
from topologies.builders import star


def _files(tmp_path, port):
    topo = star(2)
    topo = dataclasses.replace(topo, switches=[dataclasses.replace(topo.switches[0], grpc_port=port)])
    topo.save(tmp_path / "topo.json")
    (tmp_path / "p.txtpb").write_text(SAMPLE_P4INFO)
    (tmp_path / "p.json").write_text("{}")
    return [str(tmp_path / name) for name in ("topo.json", "p.txtpb", "p.json")]


def test_push_routes_and_read_counters(tmp_path, capsys):
    with FakeP4Runtime(device_id=1) as server:
        counter = p4runtime_pb2.Entity()
        counter.counter_entry.counter_id = 301
        counter.counter_entry.index.index = 2
        counter.counter_entry.data.packet_count = 4
        counter.counter_entry.data.byte_count = 392
        server.read_replies.append(counter)
        topo, p4info, config = _files(tmp_path, server.port)
        status = main(["controller", "--topology", topo, "--p4info", p4info, "--json", config,
                       "--routes", "--read-counters", "rx_port_counter", "--timeout", "5"])
        assert len(server.updates) == 2
    out = capsys.readouterr().out
    assert status == 0
    assert "controller: s1: 2 routes installed in ipv4_lpm" in out
    assert "controller: s1 rx_port_counter[2]: 4 packets, 392 bytes" in out
    assert "controller: done: 1 switch, pipeline pushed, 2 routes" in out


def test_errors_are_one_line_and_typed(tmp_path, capsys):
    with FakeP4Runtime(device_id=1) as server:
        topo, p4info, config = _files(tmp_path, server.port)
        assert main(["controller", "--topology", topo, "--p4info", p4info]) == 2
        assert "--p4info and --json go together" in capsys.readouterr().err
        assert main(["controller", "--topology", topo, "--p4info", p4info, "--json", config,
                     "--routes", "--route-table", "nope", "--timeout", "5"]) == 2
        assert "no table named 'nope'" in capsys.readouterr().err
        assert server.updates == []
    (tmp_path / "bad.json").write_text('{"hosts": [{"name": "h1"}]}')
    assert main(["controller", "--topology", str(tmp_path / "bad.json")]) == 2
    assert "hosts[0]: missing field 'ip'" in capsys.readouterr().err
