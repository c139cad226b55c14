"""SetForwardingPipelineConfig with the legacy `p4.tmp.P4DeviceConfig` wrapper (old tutorials,
ONOS): accepted as simple_switch_grpc accepts it, with one deprecation line; raw JSON as before.
The wire format is checked against the reference toolchain's own generated message."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.server.legacy_device_config import unwrap, wrap

from .entities import FWD, fwd_entry
from .helpers import CPU_IO_JSON, pipeline_request, read, update, write

Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
REFERENCE_P4CONFIG = Path("/opt/p4ref/lib/python3.11/site-packages/p4/tmp/p4config_pb2.py")
DEPRECATION = "P4DeviceConfig wrapper, which is deprecated"


def reference_message():
    """PI's generated P4DeviceConfig class, loaded by path (its `p4` package would shadow ours)."""
    spec = importlib.util.spec_from_file_location("ref_p4config_pb2", REFERENCE_P4CONFIG)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.P4DeviceConfig


def test_wrap_unwrap_round_trip_and_json_is_not_a_wrapper():
    json_bytes = CPU_IO_JSON.read_bytes()
    legacy = unwrap(wrap(json_bytes))
    assert legacy.device_data == json_bytes and legacy.reassign
    assert unwrap(json_bytes) is None
    assert unwrap(b"\n  " + json_bytes) is None          # leading whitespace: still JSON
    assert unwrap(b"\x1a\x05ab") is None                 # device_data longer than the message
    assert unwrap(b"\x0a\x01x") is None                  # reassign as a string: wrong wire type


@pytest.mark.skipif(not REFERENCE_P4CONFIG.exists(), reason="reference toolchain not installed")
def test_wire_format_matches_the_reference_message():
    P4DeviceConfig = reference_message()
    json_bytes = CPU_IO_JSON.read_bytes()
    theirs = P4DeviceConfig(reassign=True, device_data=json_bytes)
    theirs.extras.kv["port"] = "9090"
    legacy = unwrap(theirs.SerializeToString())
    assert legacy.device_data == json_bytes and legacy.reassign and legacy.extras
    parsed = P4DeviceConfig()
    parsed.ParseFromString(wrap(json_bytes))
    assert parsed.device_data == json_bytes and parsed.reassign


@pytest.mark.parametrize("wrapped", [True, False], ids=["legacy-wrapper", "raw-json"])
def test_pipeline_pushed_either_way_takes_entries(switch_server, caplog, wrapped):
    request = pipeline_request()
    if wrapped:
        request.config.p4_device_config = wrap(CPU_IO_JSON.read_bytes())
    switch_server.stream().arbitrate(1)
    with caplog.at_level(logging.WARNING, logger="p4switch.server"):
        switch_server.stub.SetForwardingPipelineConfig(request)
    warnings = [r for r in caplog.records if DEPRECATION in r.getMessage()]
    assert len(warnings) == (1 if wrapped else 0)
    assert switch_server.switch.has_program
    write(switch_server.stub, update("INSERT", table_entry=fwd_entry(1, 2)))
    entities = read(switch_server.stub, p4runtime_pb2.TableEntry())
    ours = [e.table_entry for e in entities if e.table_entry.table_id == FWD]
    assert [m.exact.value for entry in ours for m in entry.match] == [b"\x01"]
    got = switch_server.stub.GetForwardingPipelineConfig(Get(device_id=0)).config
    assert got.p4_device_config == request.config.p4_device_config   # as sent, like PI


def test_wrapper_without_device_data_is_invalid_argument(switch_server):
    request = pipeline_request()
    request.config.p4_device_config = wrap(b"")
    switch_server.stream().arbitrate(1)
    with pytest.raises(grpc.RpcError) as err:
        switch_server.stub.SetForwardingPipelineConfig(request)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "without device_data" in err.value.details()
    assert not switch_server.switch.has_program


def test_wrapped_bad_json_reports_the_json_error(switch_server):
    request = pipeline_request()
    request.config.p4_device_config = wrap(b'{"header_types": 3}')
    switch_server.stream().arbitrate(1)
    with pytest.raises(grpc.RpcError) as err:
        switch_server.stub.SetForwardingPipelineConfig(request)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "p4_device_config" in err.value.details()

