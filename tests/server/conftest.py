"""Fixtures: a P4Runtime server on port 0 around a fake switch (translation tests) or the real
runtime (packet I/O and client tests), with the cpu_io program committed by a primary client."""

from __future__ import annotations

import pytest

from p4switch.runtime import Switch

from .fake_switch import FakeSwitch
from .helpers import RunningServer, pipeline_request
from .local_server import LocalRunningServer


@pytest.fixture(params=["fake", "runtime", "local"])
def bare_server(request):
    """A server around a switch with no program and no clients: the in-memory stand-in of the
    runtime API (exact call records) and the real runtime (the integration that matters), over
    gRPC; and the real runtime served in-process (`local`: p4switch/server/inprocess.py), so
    every test of the server's semantics holds for that transport too."""
    switch = FakeSwitch() if request.param == "fake" else Switch(None)
    running = (LocalRunningServer if request.param == "local" else RunningServer)(switch)
    yield running
    running.close()


@pytest.fixture
def server(bare_server):
    """The cpu_io program committed; one primary stream client with election id 1."""
    primary = bare_server.stream()
    assert primary.arbitrate(1).arbitration.status.code == 0
    bare_server.stub.SetForwardingPipelineConfig(pipeline_request())
    bare_server.primary = primary
    return bare_server


@pytest.fixture
def switch_server():
    """The real runtime with no program and no clients, for clients that push their own pipeline."""
    running = RunningServer(Switch(None))
    yield running
    running.close()
