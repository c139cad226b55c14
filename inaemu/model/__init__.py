"""The α-β-γ cost model: predicted all-reduce times for every algorithm on a topology
(docs/model.md). `predict(algo, topology, hosts, size_bytes, ...)` is the entry point."""

from __future__ import annotations

from inaemu.model.cost import (Phase, Prediction, evaluate, ina_prediction, phases_for,
                               reduced_bytes)
from inaemu.model.network import ModelNetwork, SwitchCosts
from topologies.model import Topology

__all__ = ["ModelNetwork", "Phase", "Prediction", "SwitchCosts", "predict", "phases_for",
           "evaluate"]


def predict(algo: str, topology: Topology, hosts: list[str] | tuple[str, ...], size_bytes: int,
            *, bw_mbps: float | None = None, switch: SwitchCosts = SwitchCosts(),
            elems_k: int = 256, window: int = 16, root: str | None = None,
            gamma_s_per_byte: float = 0.0) -> Prediction:
    """Predicted time of one all-reduce of `size_bytes` per rank, rank r on hosts[r]."""
    net = ModelNetwork(topology, bw_mbps=bw_mbps, switch=switch)
    hosts = list(hosts)
    if algo == "ina":
        return ina_prediction(net, hosts, size_bytes, elems_k=elems_k, window=window, root=root)
    n = len(hosts)
    if n < 2:
        return Prediction(algo, 0.0, 0.0, 0.0, 0.0)
    blocks: dict[str, list[int]] = {}
    for r, host in enumerate(hosts):
        blocks.setdefault(topology.host_link(host).node, []).append(r)
    phases = phases_for(algo, n, float(size_bytes), switch_blocks=list(blocks.values()))
    return evaluate(net, hosts, phases, algo, gamma_s_per_byte=gamma_s_per_byte,
                    reduce_bytes=reduced_bytes(algo, n, size_bytes))
