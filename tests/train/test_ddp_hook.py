"""The DDP comm hook gives the gradients `torch.distributed.all_reduce` gives (mean over the
workers), within the quantization bound for INA, for 2 gloo processes on localhost; several
buckets per backward, two iterations. INA goes through the real ina.p4 in an in-process switch
behind a UDP bridge (tests/hosts/udp_bridge.py), the ring and recursive halving-doubling (a plan
algorithm) over TCP on 127.0.0.1."""

from __future__ import annotations

import os

import pytest

if not os.environ.get("CI"):     # CI installs the torch extra, and there a missing torch fails
    pytest.importorskip("torch")

import json
import random
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

from hosts.quantize import error_bound, ulp32
from inaemu.train.sim_train import bucket_layout
from inaemu.train.task import TaskConfig, build_model
from tests.hosts.inproc import ina_switch
from tests.hosts.udp_bridge import UdpSwitchBridge

ROOT = Path(__file__).resolve().parents[2]
WORLD, JOB, K = 2, 3, 32
BUCKET_CAP = int(0.01 * 1024 * 1024)      # ddp_peer.py's bucket_cap_mb=0.01


def free_ports(count: int, kind=socket.SOCK_STREAM) -> list[int]:
    """Ports free now, below Linux's ephemeral range (32768-60999): a port from that range (what
    binding port 0 gives) can be taken by any outgoing connection (gloo's, another test's)
    before the peer listens on it, "Address already in use" (1 in ~20 runs under load).
    24000-29000: no test or tool here uses a fixed port there (Mininet's gRPC bases are 20000s)."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randrange(24000, 29000)
        with socket.socket(socket.AF_INET, kind) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


@pytest.mark.slow
def test_hook_means_match_torch_all_reduce(tmp_path: Path) -> None:
    store, *tcp_ports = free_ports(1 + 2 * WORLD)
    ring_ports, rhd_ports = tcp_ports[:WORLD], tcp_ports[WORLD:]
    udp_ports = free_ports(WORLD, socket.SOCK_DGRAM)
    with UdpSwitchBridge(ina_switch(K, job=JOB, n=WORLD, pool_size=16)) as bridge:
        peers = []
        for rank in range(WORLD):
            bridge.register(rank, ("127.0.0.1", udp_ports[rank]))
            common = dict(job=JOB, worker=rank, n=WORLD, bind_address="127.0.0.1", timeout=60)
            config = {"rank": rank, "world": WORLD, "store_port": store,
                      "output": str(tmp_path / f"rank{rank}.npz"), "algos": {
                          "ring": {**common, "peers": [f"127.0.0.1:{p}" for p in ring_ports]},
                          "rhd": {**common, "peers": [f"127.0.0.1:{p}" for p in rhd_ports]},
                          "ina": {**common, "aggregator": "127.0.0.1", "k": K, "pool_size": 16,
                                  "ina_port": bridge.address[1], "bind_port": udp_ports[rank],
                                  "rto": 0.05}}}
            path = tmp_path / f"rank{rank}.json"
            path.write_text(json.dumps(config))
            env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOO_SOCKET_IFNAME": "lo"}
            peers.append(subprocess.Popen(
                [sys.executable, str(ROOT / "tests/train/ddp_peer.py"), str(path)], cwd=ROOT,
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outputs = [peer.communicate(timeout=240)[0] for peer in peers]
    assert [peer.returncode for peer in peers] == [0] * WORLD, "\n".join(outputs)
    saved = [np.load(tmp_path / f"rank{rank}.npz") for rank in range(WORLD)]
    sizes = [p.numel() for p in build_model(TaskConfig(seed=3)).parameters()]
    for iteration in range(2):
        local = np.stack([s[f"local{iteration}"] for s in saved]).astype(np.float64)
        exact_mean = local.mean(axis=0)
        reference = saved[0][f"reference{iteration}"]
        assert np.array_equal(reference, saved[1][f"reference{iteration}"])
        # gloo's mean is the float32 sum halved: within a float32 rounding of the exact mean
        assert np.all(np.abs(reference - exact_mean) <= ulp32(reference))
        for algo in ("ring", "rhd", "ina"):
            hooked = [s[f"{algo}{iteration}"] for s in saved]
            assert np.array_equal(hooked[0], hooked[1]), f"{algo}: ranks disagree"
            elements = saved[0][f"{algo}_elements{iteration}"]
            assert elements.sum() == local.shape[1]      # every gradient went through the hook
            # DDP starts with one bucket and re-buckets (here by 0.01 MiB) after iteration 0,
            # as the simulator's workers cut their gradients
            layout = bucket_layout(list(build_model(TaskConfig(seed=3)).parameters()),
                                   BUCKET_CAP, BUCKET_CAP)
            assert len(layout) > 1
            assert elements.tolist() == ([local.shape[1]] if iteration == 0 else
                                         [sum(sizes[i] for i in bucket) for bucket in layout])
            gap = np.abs(hooked[0].astype(np.float64) - reference)
            if algo != "ina":       # two ranks: one float32 addition, as gloo's
                assert np.all(gap <= ulp32(reference)), gap.max()
            else:
                summed = hooked[0] * WORLD
                bound = error_bound(float(np.abs(local).max()), WORLD, summed) / WORLD
                assert np.all(gap <= bound + ulp32(reference)), (gap.max(), bound.max())
                assert gap.max() > 0         # it was quantized: not gloo's arithmetic
