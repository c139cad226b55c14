"""`Fabric` over in-process channels (`channels=`, p4switch/server/inprocess.py), as the
simulator uses it: one primary session per switch in topology order, the program and routes
written as over gRPC, every stream ended on close; a switch without a channel fails the
fabric and closes the sessions already opened."""

from __future__ import annotations

import pytest

from controller.errors import ConnectionFailed, P4RuntimeError
from controller.fabric import Fabric
from controller.client import SwitchClient
from inaemu.sim import control
from p4switch.runtime import Switch
from p4switch.server import LocalP4Runtime
from topologies.builders import linear


@pytest.fixture
def served():
    topology = linear(3)
    servers = {s.name: LocalP4Runtime(Switch(None), device_id=s.device_id,
                                      packet_out=lambda _data: None)
               for s in topology.switches}
    yield topology, servers
    for server in servers.values():
        server.stop()


def _open_streams(server) -> int:
    return len(server.device._senders)


def test_a_fabric_over_local_channels_configures_every_switch(served):
    topology, servers = served
    program = control.compile_program(str(control.L3_PROGRAM))
    lines: list[str] = []
    channels = {name: server.channel() for name, server in servers.items()}
    with Fabric(topology, channels=channels, progress=lines.append) as fabric:
        assert list(fabric.clients) == ["s1", "s2", "s3"]
        assert lines[0] == "s1: connected in process (device 1)"
        assert all(_open_streams(server) == 1 for server in servers.values())
        for client in fabric.clients.values():
            client.set_pipeline(program.p4info, program.config)
        assert fabric.install_routes() == 9
        routes = fabric["s2"].read_table("ipv4_lpm")
        assert len(routes) == 3
        with pytest.raises(P4RuntimeError, match="ALREADY_EXISTS"):
            fabric.install_routes()
    assert not any(_open_streams(server) for server in servers.values())
    entries = servers["s1"].device.switch.table_entries("MyIngress.ipv4_lpm")
    assert len(entries) == 3


def test_a_switch_without_a_channel_fails_and_the_rest_are_closed(served):
    topology, servers = served
    channels = {name: servers[name].channel() for name in ("s1", "s3")}
    with pytest.raises(ConnectionFailed, match="^s2: no in-process channel to it"):
        Fabric(topology, channels=channels)
    assert not any(_open_streams(server) for server in servers.values())


def test_a_lower_election_id_is_refused_as_over_grpc(served):
    _, servers = served
    with SwitchClient("s1", "in process", 1, channel=servers["s1"].channel(),
                      election_id=(0, 5)):
        with pytest.raises(ConnectionFailed, match="higher election id than"):
            SwitchClient("s1", "in process", 1, channel=servers["s1"].channel(),
                         election_id=(0, 2))
