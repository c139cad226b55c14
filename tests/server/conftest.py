"""Fixtures: a P4Runtime server on port 0 around a fake switch (translation tests) or the real
runtime (packet I/O and client tests), with the cpu_io program committed by a primary client."""

from __future__ import annotations

import pytest

from .fake_switch import FakeSwitch
from .helpers import RunningServer, pipeline_request


@pytest.fixture
def bare_server():
    """A server around a switch with no program and no clients."""
    running = RunningServer(FakeSwitch())
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
    """A server with no program and no clients, for clients that push their own pipeline."""
    running = RunningServer(FakeSwitch())
    yield running
    running.close()
