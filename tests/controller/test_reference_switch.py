"""The controller against a real simple_switch_grpc (when /opt/p4ref is installed): it takes
the pipeline push, table writes and multicast groups `SwitchClient` sends."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from controller.client import SwitchClient
from controller.p4info import P4InfoIndex

REFERENCE = Path("/opt/p4ref/bin")
ROOT = Path(__file__).resolve().parents[2]


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
        # a Thrift port of its own: two simple_switch_grpc on 9090 at once (tests on the other
        # xdist worker) leave the second not serving gRPC at all
        [str(REFERENCE / "simple_switch_grpc"), "--no-p4", "--device-id", "5", "--log-level",
         "warn", "--thrift-port", str(_free_port()), "--", "--grpc-server-addr", address],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with SwitchClient("bmv2", address, 5, timeout=20) as client:
            client.set_pipeline(index, config)
            client.set_pipeline(index, config)        # pushed again: the same program
            assert client.fetch_p4info().p4info == index.p4info
            client.add_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.0.1", 32)},
                             "ipv4_forward", {"dstAddr": "00:00:00:00:00:01", "port": 1})
            entries = client.read_table("ipv4_lpm")
            assert [(e.action, e.params) for e in entries] == \
                [("MyIngress.ipv4_forward", {"dstAddr": 1, "port": 1})]
            client.set_multicast_group(4, [(1, 0), (2, 0)])      # a PRE entity
            client.set_multicast_group(4, [(3, 1)])              # exists: replaced
            assert client.read_multicast_group(4) == [(3, 1)]
    finally:
        switch.terminate()
        switch.wait(timeout=10)
