"""The public API's config and the agent process: ring and INA runs, records, one-line failures."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hosts import AllreduceConfig, Allreducer, ConfigError, allreduce
from hosts.agent import gradient, parse_config

from tests.hosts.inproc import ina_switch
from tests.hosts.udp_bridge import UdpSwitchBridge

ROOT = Path(__file__).resolve().parents[2]


def free_ports(count: int, kind=socket.SOCK_STREAM) -> list[int]:
    socks = [socket.socket(socket.AF_INET, kind) for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def start_agent(tmp_path: Path, name: str, config: dict) -> subprocess.Popen:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**config, "output": str(tmp_path / f"{name}.out.json")}))
    return subprocess.Popen([sys.executable, "-m", "hosts.agent", "--config", str(path)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> tuple[int, str]:
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def test_ring_agents_write_correct_records(tmp_path: Path) -> None:
    n = 3
    ports = free_ports(n)
    base = dict(algo="ring", job=1, n=n, seed=42, length=1001, calls=2, bind_address="127.0.0.1",
                peers=[f"127.0.0.1:{p}" for p in ports], connect_timeout=20, timeout=30)
    agents = [start_agent(tmp_path, f"w{w}", {**base, "worker": w}) for w in range(n)]
    for agent in agents:
        assert finish(agent) == (0, "")
    records = [json.loads((tmp_path / f"w{w}.out.json").read_text()) for w in range(n)]
    for w, record in enumerate(records):
        assert record["ok"] and record["correct"] and record["worker"] == w
        assert record["algo"] == "ring" and len(record["seconds"]) == 2
        assert 0 < record["max_abs_error"] <= record["error_bound"]
        # 2(n-1) messages per call, each a header and a third of the vector
        assert record["packets_sent"] == 2 * 2 * (n - 1)
        assert record["bytes_sent"] >= 2 * 2 * (n - 1) * 4 * (1001 // n)


def test_ina_agents_through_the_switch(tmp_path: Path) -> None:
    n = 2
    ports = free_ports(n, socket.SOCK_DGRAM)
    with UdpSwitchBridge(ina_switch(8, job=4, n=n, pool_size=8), loss=0.02, seed=2) as bridge:
        for w, port in enumerate(ports):
            bridge.register(w, ("127.0.0.1", port))
        base = dict(algo="ina", job=4, n=n, k=8, pool_size=8, seed=7, length=300, calls=2,
                    aggregator="127.0.0.1", ina_port=bridge.address[1],
                    bind_address="127.0.0.1", rto=0.02, timeout=30)
        agents = [start_agent(tmp_path, f"w{w}", {**base, "worker": w, "bind_port": port})
                  for w, port in enumerate(ports)]
        for agent in agents:
            assert finish(agent) == (0, "")
    for w in range(n):
        record = json.loads((tmp_path / f"w{w}.out.json").read_text())
        assert record["ok"] and record["correct"], record
        assert record["max_abs_error"] <= record["error_bound"]
        # per call: one MAX_CONTRIB and 38 chunks of 8 values, 48-byte payloads; early
        # detection sends 16-byte QUERYs, a NACK or a timer the 48 bytes again
        assert record["packets_sent"] - record["retransmissions"] == 2 * (1 + 38)
        queries = record["fast_retransmissions"]
        assert record["retransmissions"] == (queries + record["timer_retransmissions"]
                                             + record["nack_retransmissions"])
        assert record["bytes_sent"] == 48 * (record["packets_sent"] - queries) + 16 * queries


@pytest.mark.parametrize("config, message", [
    ("{not json", "not JSON"),
    ('{"algo": "ina", "job": 1, "worker": 0, "n": 2, "aggregator": "10.0.0.1", "windw": 4}',
     "unknown option(s) windw"),
    ('{"algo": "tree", "job": 1, "worker": 0, "n": 2}', "config.algo"),
    ('{"algo": "ring", "job": 1, "worker": 0, "n": 2, "peers": ["127.0.0.1:1"]}',
     "config.peers: the ring needs one"),
    ('{"algo": "ring", "job": 1, "worker": 0, "n": 2, "connect_timeout": 0.2,'
     ' "peers": ["127.0.0.1:PORT0", "127.0.0.1:PORT1"]}', "cannot connect to the right"),
    ('{"job": 1, "worker": 3, "n": 2}', "config.worker"),
])
def test_agent_failures_are_one_line(tmp_path: Path, config: str, message: str) -> None:
    ports = free_ports(2)
    path = tmp_path / "bad.json"
    path.write_text(config.replace("PORT0", str(ports[0])).replace("PORT1", str(ports[1])))
    output = tmp_path / "record.json"
    result = subprocess.run([sys.executable, "-m", "hosts.agent", "--config", str(path),
                             "--output", str(output)], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith("agent: error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr
    assert json.loads(output.read_text())["ok"] is False


def test_gradients_are_reproducible_per_seed_and_worker() -> None:
    assert np.array_equal(gradient(3, 1, 10), gradient(3, 1, 10))
    assert not np.array_equal(gradient(3, 1, 10), gradient(3, 2, 10))
    assert gradient(3, 1, 10).dtype == np.float32


def test_config_validation_names_the_field() -> None:
    with pytest.raises(ConfigError, match="config.window"):
        AllreduceConfig(job=1, worker=0, n=2, pool_size=4, window=5)
    with pytest.raises(ConfigError, match=r"config.peers\[1\]"):
        AllreduceConfig(job=1, worker=0, n=2, peers=("a:1", "b"))
    with pytest.raises(ConfigError, match="missing job"):
        AllreduceConfig.from_dict({"worker": 0, "n": 1})
    with pytest.raises(ConfigError, match="config.magnitude"):
        parse_config({"job": 1, "worker": 0, "n": 1, "magnitude": -1})
    with pytest.raises(ConfigError, match="config.aggregator"):
        Allreducer(AllreduceConfig(job=1, worker=0, n=1))
    with pytest.raises(ConfigError, match="config.rto_min"):
        AllreduceConfig(job=1, worker=0, n=1, rto_min=2.0)
    with pytest.raises(ConfigError, match="config.adaptive"):
        AllreduceConfig.from_dict({"job": 1, "worker": 0, "n": 1, "adaptive": "yes"})
    fixed = AllreduceConfig.from_dict({"job": 1, "worker": 0, "n": 1, "adaptive": False,
                                       "rto_min": 0.05, "rto": 0.1})
    assert (fixed.adaptive, fixed.rto_min) == (False, 0.05)


def test_single_rank_ring_through_the_public_function() -> None:
    config = AllreduceConfig(job=1, worker=0, n=1, peers=("127.0.0.1:1",))
    x = np.arange(5, dtype=np.float32)
    assert np.array_equal(allreduce(x, algo="ring", config=config), x)
