"""`Fabric` opens its sessions concurrently: they are kept in topology order, and when one switch
cannot be reached the first failure in topology order is raised and every session already
opened is closed (the servers see their streams end)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from controller.errors import ConnectionFailed
from controller.fabric import Fabric
from p4switch.runtime import Switch
from p4switch.server import P4RuntimeServer
from topologies.builders import linear


@pytest.fixture
def servers():
    running = []
    for device_id in range(1, 7):
        server = P4RuntimeServer(Switch(None), device_id=device_id, cpu_port=None,
                                 address="127.0.0.1:0", packet_out=lambda _data: None)
        server.start()
        running.append(server)
    yield running
    for server in running:
        server.stop(grace=0)


def _topology(servers, unreachable=()):
    """Switch i on server i's port, or, if unreachable, on a port nothing listens on (1, 2...)."""
    topology = linear(len(servers))
    dead = {name: port for port, name in enumerate(unreachable, start=1)}
    switches = [dataclasses.replace(s, grpc_port=dead.get(s.name, srv.bound_port),
                                    device_id=srv.device.device_id)
                for s, srv in zip(topology.switches, servers)]
    return dataclasses.replace(topology, switches=switches)


def _open_streams(server) -> int:
    return len(server.device._senders)


def test_sessions_in_topology_order_each_primary(servers):
    topology = _topology(servers)
    lines: list[str] = []
    with Fabric(topology, timeout=5, progress=lines.append) as fabric:
        assert list(fabric.clients) == [s.name for s in topology.switches]
        assert all(_open_streams(server) == 1 for server in servers)
        assert [line.split(":")[0] for line in lines] == list(fabric.clients)
    deadline = time.monotonic() + 5
    while any(_open_streams(s) for s in servers) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(_open_streams(s) for s in servers)


def test_first_failure_in_order_is_raised_and_the_rest_closed(servers):
    topology = _topology(servers, unreachable=("s3", "s5"))
    with pytest.raises(ConnectionFailed, match=r"^s3: no P4Runtime server answers"):
        Fabric(topology, timeout=0.5)
    deadline = time.monotonic() + 5
    while any(_open_streams(s) for s in servers) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(_open_streams(s) for s in servers)
