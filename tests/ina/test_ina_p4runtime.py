"""ina.p4 configured only over P4Runtime, as the controller will do it.

The program (k = 4) is pushed with `controller.client.SwitchClient` to the project's P4Runtime
server around the runtime (in-process, port 0); the job, worker, result-address and route
entries and the multicast group (rid = worker id) are written by name through the controller
library; then a three-worker round runs through the switch and the counters are read back over
P4Runtime. This pins down that every name docs/protocol.md promises is writable by the
controller and means what it says.
"""

from __future__ import annotations

import json

import pytest

from controller.client import SwitchClient
from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.server import P4RuntimeServer

from .packets import CONTRIB, RESULT, Endpoint, ina_packet, ip, wrapping_sum
from .stfgen import P4SRC

K, JOB, DEVICE = 4, 7, 1
AGG = Endpoint(0x000000000100, ip("10.0.0.254"))
HOSTS = [Endpoint(0x080000000111 * (w + 1), ip(f"10.0.{w + 1}.{w + 1}")) for w in range(3)]


@pytest.fixture
def configured(tmp_path):
    build = compile_file(str(P4SRC / "ina.p4"), defines={"INA_K": str(K)})
    (tmp_path / "ina.p4info.txtpb").write_text(build.p4info_text())
    (tmp_path / "ina.json").write_text(json.dumps(build.bmv2))
    switch = Switch(None)
    server = P4RuntimeServer(switch, device_id=DEVICE, cpu_port=None, address="127.0.0.1:0",
                             packet_out=lambda data: None)
    server.start()
    try:
        with SwitchClient("s1", f"127.0.0.1:{server.bound_port}", DEVICE, timeout=10) as client:
            client.set_pipeline_files(tmp_path / "ina.p4info.txtpb", tmp_path / "ina.json")
            client.add_entry("ina_aggregator_addresses", {"hdr.ipv4.dstAddr": AGG.addr},
                             "ina_aggregate_here")
            client.add_entry("ina_jobs", {"hdr.ipv4.dstAddr": AGG.addr, "hdr.ina.job": JOB},
                             "ina_root_job", {"base": 0, "pool_size": 8, "n": 3, "mgid": JOB,
                                              "result_count": 3})
            for w, host in enumerate(HOSTS):
                client.add_entry("ina_workers", {"hdr.ina.job": JOB, "hdr.ina.worker": w},
                                 "ina_worker_port", {"port": w + 1})
                client.add_entry("ina_result_addresses",
                                 {"hdr.ina.job": JOB, "meta.ina.receiver": w},
                                 "ina_address_result", {"dstMac": host.mac, "dstAddr": host.addr})
            client.set_multicast_group(JOB, [(w + 1, w) for w in range(3)])
            yield switch, client
    finally:
        server.stop(grace=0)


def test_a_round_configured_over_p4runtime(configured) -> None:
    switch, client = configured
    vectors = [[-1, 2 ** 31 - 1, 10 * w, w] for w in range(3)]
    outputs = []
    with switch.lock:
        for w, host in enumerate(HOSTS):
            outputs += switch.receive(w + 1, ina_packet(host, AGG, ident=w, kind=CONTRIB, job=JOB,
                                                        worker=w, slot=5, ver=1, values=vectors[w]))
        duplicate = ina_packet(HOSTS[0], AGG, ident=9, kind=CONTRIB, job=JOB, worker=0, slot=5,
                               ver=1, retx=True, values=vectors[0])
        unicast = switch.receive(1, duplicate)
        stray = switch.receive(1, ina_packet(HOSTS[0], AGG, kind=CONTRIB, job=JOB, worker=0,
                                             slot=8, values=vectors[0]))
    sums = wrapping_sum(*vectors)
    assert sorted(outputs) == [
        (w + 1, ina_packet(AGG, host, ident=2, kind=RESULT, job=JOB, worker=w, slot=5, ver=1,
                           count=3, values=sums)) for w, host in enumerate(HOSTS)]
    assert unicast == [(1, ina_packet(AGG, HOSTS[0], ident=9, kind=RESULT, job=JOB, worker=0,
                                      slot=5, ver=1, retx=True, count=3, values=sums))]
    assert stray == []                               # slot 8 of a pool of 8: bad slot
    packets = {name: client.read_counter(name, JOB)[JOB][0]
               for name in ("ina_contributions", "ina_results_multicast", "ina_duplicates",
                            "ina_results_unicast", "ina_drop_bad_slot")}
    assert packets == {"ina_contributions": 3, "ina_results_multicast": 1, "ina_duplicates": 1,
                       "ina_results_unicast": 1, "ina_drop_bad_slot": 1}
    assert client.read_register("ina_seen", 11) == {11: 0b111}    # slot 5, version 1
