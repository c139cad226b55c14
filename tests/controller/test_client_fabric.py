"""The controller against an in-process P4Runtime server: what it sends, how it reports failures."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller.client import SwitchClient
from controller.errors import ConnectionFailed, P4RuntimeError
from controller.fabric import Fabric
from controller.p4info import P4InfoIndex
from fake_p4runtime import FakeP4Runtime
from p4info_sample import SAMPLE_P4INFO
from topologies.builders import linear


@pytest.fixture
def files(tmp_path):
    p4info = tmp_path / "prog.p4info.txtpb"
    p4info.write_text(SAMPLE_P4INFO)
    config = tmp_path / "prog.json"
    config.write_bytes(b'{"program": "sample"}')
    return p4info, config


def _with_ports(topology, servers):
    """The topology, with each switch's gRPC port and device id taken from a fake server."""
    switches = [dataclasses.replace(s, grpc_port=srv.port, device_id=srv.device_id)
                for s, srv in zip(topology.switches, servers)]
    return dataclasses.replace(topology, switches=switches)


def test_fabric_pushes_the_pipeline_and_routes_to_every_switch(files):
    p4info, config = files
    with FakeP4Runtime(device_id=1) as s1, FakeP4Runtime(device_id=2) as s2:
        topo = _with_ports(linear(2), [s1, s2])
        lines: list[str] = []
        with Fabric(topo, timeout=5, progress=lines.append) as fabric:
            fabric.push_pipeline(p4info, config)
            assert fabric.install_routes() == 4
        for server in (s1, s2):
            assert server.config.p4_device_config == b'{"program": "sample"}'
            assert [t.preamble.name for t in server.config.p4info.tables][0] == "MyIngress.ipv4_lpm"
            assert all(w.election_id.low == 1 and w.election_id.high == 0 for w in server.writes)
            assert all(u.type == p4runtime_pb2.Update.INSERT for u in server.updates)
        # s1: h1 on port 1, h2 through s2 on port 3; s2: h1 through port 2, h2 on port 1
        def ports(server):
            return {u.entity.table_entry.match[0].lpm.value: u.entity.table_entry.action.action.params[1].value
                    for u in server.updates}
        assert ports(s1) == {b"\x0a\x00\x00\x01": b"\x01", b"\x0a\x00\x00\x02": b"\x03"}
        assert ports(s2) == {b"\x0a\x00\x00\x01": b"\x02", b"\x0a\x00\x00\x02": b"\x01"}
        assert any("s2: 2 routes installed" in line for line in lines)


def test_failed_updates_are_reported_one_by_one(files):
    p4info, config = files
    with FakeP4Runtime() as server:
        server.fail_updates = {1: (code_pb2.ALREADY_EXISTS, "entry exists")}
        with SwitchClient("s1", f"127.0.0.1:{server.port}", 1, timeout=5) as client:
            client.set_pipeline_files(p4info, config)
            entries = [client.index and _route(client.index, i) for i in (1, 2)]
            with pytest.raises(P4RuntimeError) as info:
                client.insert_table_entries(entries, ["route to h1", "route to h2"])
    error = info.value
    assert error.code == "UNKNOWN" and error.switch == "s1" and error.rpc == "Write"
    assert [(u.index, u.code, u.message) for u in error.updates] == [(1, "ALREADY_EXISTS", "entry exists")]
    assert "update 1: ALREADY_EXISTS: entry exists (route to h2)" in str(error)


def _route(index: P4InfoIndex, n: int):
    from controller.entities import table_entry
    return table_entry(index, "ipv4_lpm", {"dstAddr": f"10.0.0.{n}/32"}, "ipv4_forward",
                       {"dstAddr": n, "port": n})


def test_multicast_group_falls_back_to_modify(files):
    with FakeP4Runtime() as server:
        server.fail_existing_groups = True
        with SwitchClient("s1", f"127.0.0.1:{server.port}", 1, timeout=5) as client:
            client.set_multicast_group(7, [(1, 0), (2, 0), (3, 1)])
        (update,) = server.updates
        assert update.type == p4runtime_pb2.Update.MODIFY
        group = update.entity.packet_replication_engine_entry.multicast_group_entry
        assert group.multicast_group_id == 7
        assert [(r.egress_port, r.instance) for r in group.replicas] == [(1, 0), (2, 0), (3, 1)]


def test_counter_and_register_reads_decode(files):
    p4info, config = files
    with FakeP4Runtime() as server:
        for i, (packets, octets) in enumerate([(3, 300), (0, 0), (5, 742)]):
            e = p4runtime_pb2.Entity()
            e.counter_entry.counter_id = 301
            e.counter_entry.index.index = i
            e.counter_entry.data.packet_count = packets
            e.counter_entry.data.byte_count = octets
            server.read_replies.append(e)
        e = p4runtime_pb2.Entity()
        e.register_entry.register_id = 401
        e.register_entry.index.index = 4
        e.register_entry.data.bitstring = b"\x01\x00"
        server.read_replies.append(e)
        with SwitchClient("s1", f"127.0.0.1:{server.port}", 1, timeout=5) as client:
            client.set_pipeline_files(p4info, config)
            assert client.read_counter("rx_port_counter") == {0: (3, 300), 1: (0, 0), 2: (5, 742)}
            assert client.read_register("slots", 4) == {4: 256}
        request = server.reads[0].entities[0]
        assert request.counter_entry.counter_id == 301
        assert not request.counter_entry.HasField("index")        # all cells
        assert server.reads[1].entities[0].register_entry.index.index == 4


def test_adopting_the_running_pipeline(files):
    p4info, config = files
    with FakeP4Runtime() as server:
        with SwitchClient("s1", f"127.0.0.1:{server.port}", 1, timeout=5) as first:
            first.set_pipeline_files(p4info, config)
        with SwitchClient("s1", f"127.0.0.1:{server.port}", 1, timeout=5) as second:
            assert second.fetch_p4info().table("ipv4_lpm").id == 101


def test_no_server_means_a_quick_clear_error():
    with pytest.raises(ConnectionFailed, match=r"s9: no P4Runtime server answers at 127.0.0.1:1 "):
        SwitchClient("s9", "127.0.0.1:1", 1, timeout=0.5)


def test_wrong_device_id_is_a_connection_failure():
    with FakeP4Runtime(device_id=1) as server:
        with pytest.raises(ConnectionFailed, match=r"arbitration for device 9 failed: NOT_FOUND: wrong device id"):
            SwitchClient("s1", f"127.0.0.1:{server.port}", 9, timeout=1)


@pytest.fixture(scope="module")
def l3_forward_files(tmp_path_factory):
    """p4src/l3_forward.p4's P4Info (it has ecmp_group and ecmp_nhop), compiled in-process."""
    from pathlib import Path

    from p4switch.compiler import compile_file
    out = tmp_path_factory.mktemp("l3")
    build = compile_file(str(Path(__file__).resolve().parents[2] / "p4src" / "l3_forward.p4"))
    (out / "l3.p4info.txtpb").write_text(build.p4info_text())
    (out / "l3.json").write_bytes(b"{}")
    return out / "l3.p4info.txtpb", out / "l3.json"


def _written(server, index: P4InfoIndex) -> list[tuple]:
    """Every table entry the server received, in order, as (table, match, action, params)."""
    from controller.entities import describe_table_entry
    views = [describe_table_entry(index, u.entity.table_entry) for u in server.updates]
    return [(v.table.split(".")[-1], tuple(v.match.values()), v.action.split(".")[-1],
             tuple(v.params.values())) for v in views]


@pytest.mark.parametrize("ecmp", [True, False], ids=["ecmp", "single_path"])
def test_fabric_writes_ecmp_members_before_the_routes_that_use_them(l3_forward_files, ecmp):
    from controller.routing import switch_mac
    from topologies.builders import leaf_spine
    p4info, config = l3_forward_files
    index = P4InfoIndex.from_file(p4info)
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(FakeP4Runtime(device_id=i)) for i in range(1, 5)]
        topo = _with_ports(leaf_spine(2, 2, 1), servers)        # l1, l2, sp1, sp2
        lines: list[str] = []
        with Fabric(topo, timeout=5, progress=lines.append) as fabric:
            fabric.push_pipeline(p4info, config)
            assert fabric.install_routes(ecmp=ecmp) == 8         # routes, members not counted
        l1, sp1 = _written(servers[0], index), _written(servers[2], index)
    h1, h2 = 0x0A000001, 0x0A000002
    mac = {name: int(switch_mac(topo.switch(name)).replace(":", ""), 16) for name in ("sp1", "sp2")}
    h1_mac = int(topo.host("h1").mac.replace(":", ""), 16)
    h2_mac = int(topo.host("h2").mac.replace(":", ""), 16)
    if ecmp:
        # l1 reaches h2 over both spines (ports 2, 3): group 1's members come first
        assert l1 == [
            ("ecmp_nhop", ((1,), (0,)), "ipv4_forward", (mac["sp1"], 2)),
            ("ecmp_nhop", ((1,), (1,)), "ipv4_forward", (mac["sp2"], 3)),
            ("ipv4_lpm", ((h1, 32),), "ipv4_forward", (h1_mac, 1)),
            ("ipv4_lpm", ((h2, 32),), "ecmp_group", (1, 2, 0)),   # group, size, hash shift
        ]
        assert any("l1: 2 routes installed in ipv4_lpm, 1 ECMP groups (2 members)" in line
                   for line in lines)
    else:
        assert l1 == [("ipv4_lpm", ((h1, 32),), "ipv4_forward", (h1_mac, 1)),
                      ("ipv4_lpm", ((h2, 32),), "ipv4_forward", (h2_mac, 2))]
    # a spine has one way down to each leaf either way
    assert sp1 == [("ipv4_lpm", ((h1, 32),), "ipv4_forward", (h1_mac, 1)),
                   ("ipv4_lpm", ((h2, 32),), "ipv4_forward", (h2_mac, 2))]


@pytest.mark.parametrize("extra, l1_writes", [([], 4), (["--no-ecmp"], 2)], ids=["ecmp", "no_ecmp"])
def test_controller_cli_installs_ecmp_groups_unless_told_not_to(l3_forward_files, tmp_path, capsys,
                                                                extra, l1_writes):
    from inaemu.cli import main
    from topologies.builders import leaf_spine
    p4info, config = l3_forward_files
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(FakeP4Runtime(device_id=i)) for i in range(1, 5)]
        _with_ports(leaf_spine(2, 2, 1), servers).save(tmp_path / "topo.json")
        status = main(["controller", "--topology", str(tmp_path / "topo.json"), "--p4info",
                       str(p4info), "--json", str(config), "--routes", "--timeout", "5", *extra])
        assert len(servers[0].updates) == l1_writes
    out = capsys.readouterr().out
    assert status == 0
    assert "controller: done: 4 switches, pipeline pushed, 8 routes" in out
    assert ("1 ECMP groups (2 members)" in out) == (not extra)


def test_aggregated_routes_resolve_every_host_as_its_host_route(l3_forward_files):
    """install_routes(aggregate=True) writes fewer LPM entries, and on every switch each host's
    address still resolves (longest prefix) to its /32's action: the port, or the ECMP group."""
    from controller.prefixes import Prefix, lookup
    from topologies.builders import leaf_spine
    p4info, config = l3_forward_files
    index = P4InfoIndex.from_file(p4info)
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(FakeP4Runtime(device_id=i)) for i in range(1, 5)]
        topo = _with_ports(leaf_spine(2, 2, 2), servers)        # l1, l2, sp1, sp2; h1..h4
        with Fabric(topo, timeout=5) as fabric:
            fabric.push_pipeline(p4info, config)
            aggregated = fabric.install_routes(aggregate=True)
            split = [len(server.updates) for server in servers]
            assert aggregated < fabric.install_routes() == 16
        written = [_written(server, index) for server in servers]

    def table(rows):        # the port (towards a switch the MAC is that switch's), or the group
        return [Prefix(m[0][0], m[0][1],
                       (action, params[-1] if action == "ipv4_forward" else params))
                for name, m, action, params in rows if name == "ipv4_lpm"]
    for switch, entries, cut in zip(("l1", "l2", "sp1", "sp2"), written, split):
        short, exact = table(entries[:cut]), table(entries[cut:])
        assert len(exact) == 4 and len(short) < 4
        for host in topo.hosts:
            address = int.from_bytes(bytes(int(b) for b in host.ip.split(".")), "big")
            assert lookup(short, address) == lookup(exact, address), (switch, host.name)
