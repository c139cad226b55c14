"""`python -m hosts.fallback_udp` as a hashed tree's child tier (docs/protocol.md §3.3,
"Tiers"): its members' contributions in, its partial sum out to the parent's aggregator
address as the tier's member there; bad combinations of options refused with the reason."""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest

from hosts.fallback_tier import TierAggregator
from hosts.fallback_udp import UdpFallbackServer, main
from hosts.ina_header import FLAG_NEXT, HEADER, INA_UDP_PORT, Kind

K = 4


def contribution(worker: int, values: list[int]) -> bytes:
    return HEADER.pack(Kind.CONTRIB, FLAG_NEXT, 7, worker, 0, 3, 19, 0, 0) + \
        np.asarray(values, ">u4").tobytes()


def test_a_tier_sends_its_partial_sum_to_the_parent() -> None:
    parent_ip = f"127.31.{os.getpid() % 250}.9"      # a loopback address of this test's own
    parent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    parent.bind((parent_ip, INA_UDP_PORT))
    parent.settimeout(5)
    tier = TierAggregator(job=7, n=2, k=K, pool_size=16, parent_member=1)
    server = UdpFallbackServer(tier, ["127.0.0.1", "127.0.0.1"], bind_address="127.0.0.1",
                               port=0, switch="127.0.0.1", parent=parent_ip)
    member = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for worker, values in ((0, [1, 2, 3, 4]), (1, [10, 20, 30, 40])):
            member.sendto(contribution(worker, values), server.address)
            while not server.drain():
                pass
        payload = parent.recv(2048)
    finally:
        for s in (parent, member):
            s.close()
        server.close()
    kind, flags, job, worker, _pad, slot, chunk, count, _bmax = HEADER.unpack_from(payload)
    assert (kind, job, worker, slot, chunk, count) == (Kind.CONTRIB, 7, 1, 3, 19, 0)
    assert flags & FLAG_NEXT                          # the parent claims on the members' next
    assert np.frombuffer(payload, ">u4", offset=HEADER.size).tolist() == [11, 22, 33, 44]


@pytest.mark.parametrize("extra, why", [
    (["--parent", "10.0.0.1"], "--parent and --member go together"),
    (["--parent", "10.0.0.1", "--member", "0", "--via-switch", "10.0.0.254"],
     "needs --hashed"),
    (["--parent", "10.0.0.1", "--member", "0", "--hashed", "--via-switch", "10.0.0.254",
      "--result-count", "4"], "no --result-count"),
])
def test_tier_options_refused(extra, why, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--job", "1", "--k", "4", "--first-slot", "0", "--pool", "8", "--workers",
              "10.0.0.2,10.0.0.3", *extra])
    assert exit_.value.code == 2 and why in capsys.readouterr().err
