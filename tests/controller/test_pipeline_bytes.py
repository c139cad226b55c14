"""SetForwardingPipelineConfig requests built from a config field serialised once per program
(controller/pipeline_request.py) are byte for byte what protobuf's serializer makes of the whole
request, and a real simple_switch_grpc takes them (when /opt/p4ref is installed)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller import pipeline_request
from controller.client import SwitchClient
from controller.p4info import P4InfoIndex

from p4info_sample import SAMPLE_P4INFO

REFERENCE = Path("/opt/p4ref/bin")
ROOT = Path(__file__).resolve().parents[2]
SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest


def sample_index() -> P4InfoIndex:
    return P4InfoIndex(text_format.Parse(SAMPLE_P4INFO, p4info_pb2.P4Info()))


def whole_request(header: SetRequest, index: P4InfoIndex, config: bytes) -> bytes:
    request = SetRequest()
    request.CopyFrom(header)
    request.config.p4info.CopyFrom(index.p4info)
    request.config.p4_device_config = config
    return request.SerializeToString()


@pytest.mark.parametrize("device_id, election, action", [
    (0, (0, 1), SetRequest.VERIFY_AND_COMMIT),
    (300, (7, 2**64 - 1), SetRequest.VERIFY),
    (2**40, (0, 0), SetRequest.RECONCILE_AND_COMMIT),
])
def test_request_bytes_are_the_serializers_bytes(device_id, election, action):
    index, config = sample_index(), b'{"program": "x"}' * 1000
    header = SetRequest(device_id=device_id, action=action)
    header.election_id.high, header.election_id.low = election
    built = pipeline_request.request_bytes(header, index, config)
    assert built == whole_request(header, index, config)
    parsed = SetRequest.FromString(built)
    assert parsed.device_id == device_id and parsed.config.p4info == index.p4info
    assert parsed.config.p4_device_config == config


def test_a_field_numbered_after_config_keeps_the_serializers_order():
    index, config = sample_index(), b"{}"
    header = SetRequest(device_id=1, role="sdn", action=SetRequest.VERIFY_AND_COMMIT)
    assert pipeline_request.request_bytes(header, index, config) == \
        whole_request(header, index, config)


def test_the_config_field_is_made_once_per_program_objects():
    pipeline_request.clear()
    index, config = sample_index(), b"a" * 10
    first = pipeline_request.config_field(index, config)
    assert pipeline_request.config_field(index, config) is first
    other = pipeline_request.config_field(index, b"b" * 10)
    assert other is not first and other.endswith(b"b" * 10)
    assert pipeline_request.config_field(sample_index(), config) is not first  # another index
    with pytest.raises(ValueError):
        pipeline_request.request_bytes(
            SetRequest(config=p4runtime_pb2.ForwardingPipelineConfig()), index, config)


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32, 2**64 - 1])
def test_varint_decodes_as_protobuf_reads_it(value):
    encoded = pipeline_request.varint(1 << 3) + pipeline_request.varint(value)  # field 1
    assert SetRequest.FromString(encoded).device_id == value


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.skipif(not (REFERENCE / "simple_switch_grpc").exists(),
                    reason="reference toolchain (/opt/p4ref) not installed")
def test_real_simple_switch_grpc_takes_the_pushed_pipeline(tmp_path):
    built = subprocess.run(
        [str(REFERENCE / "p4c-bm2-ss"), str(ROOT / "p4src" / "l3_forward.p4"), "-o",
         str(tmp_path / "l3.json"), "--p4runtime-files", str(tmp_path / "l3.p4info.txtpb")],
        capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    index = P4InfoIndex.from_file(tmp_path / "l3.p4info.txtpb")
    config = (tmp_path / "l3.json").read_bytes()
    address = f"127.0.0.1:{_free_port()}"
    switch = subprocess.Popen(
        [str(REFERENCE / "simple_switch_grpc"), "--no-p4", "--device-id", "5", "--log-level",
         "warn", "--", "--grpc-server-addr", address],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with SwitchClient("bmv2", address, 5, timeout=20) as client:
            client.set_pipeline(index, config)
            client.set_pipeline(index, config)        # the cached field, sent again
            assert client.fetch_p4info().p4info == index.p4info
            client.add_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.0.1", 32)},
                             "ipv4_forward", {"dstAddr": "00:00:00:00:00:01", "port": 1})
            entries = client.read_table("ipv4_lpm")
            assert [(e.action, e.params) for e in entries] == \
                [("MyIngress.ipv4_forward", {"dstAddr": 1, "port": 1})]
            client.set_multicast_group(4, [(1, 0), (2, 0)])      # a PRE entity, as bytes
            client.set_multicast_group(4, [(3, 1)])              # exists: replaced
            assert client.read_multicast_group(4) == [(3, 1)]
    finally:
        switch.terminate()
        switch.wait(timeout=10)
