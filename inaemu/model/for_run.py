"""The model beside every measurement of `inaemu run`: each summary gains `model_time_s` (the
predicted time, docs/model.md) and `measured_over_model` (time_s / model_time_s).

The prediction uses the run's topology, its job's worker hosts in rank order, `--bw`, `--elems`
and `--window`, the simulator's switch cost and, for INA, the root the run aggregates at. On
the simulator it follows the hash-chosen ECMP path of each flow (its TCP ports are fixed); on
Mininet the kernel's ports are not known in advance, so flows are split evenly.
"""

from __future__ import annotations

from inaemu.model import predict
from inaemu.model.cost import evaluate, phases_for, reduced_bytes
from inaemu.model.network import ModelNetwork

MODEL_FIELDS = ("model_time_s", "measured_over_model")


def model_times(cfg) -> dict[tuple[str, int], float]:
    """(algo, job) -> predicted seconds for every algorithm and job of a `RunConfig`."""
    from controller.trees import choose_roots
    topology = cfg.topology()
    job_hosts = cfg.job_hosts(topology)
    roots = choose_roots(topology, list(job_hosts.items()))
    net = ModelNetwork(topology, bw_mbps=cfg.bw_mbps)
    out = {}
    for (job, hosts), root in zip(job_hosts.items(), roots):
        for algo in cfg.algos:
            if algo == "ina":
                where = root if cfg.tree else (root or topology.host_link(hosts[0]).node)
                # packed lanes (docs/formats.md): the wire carries 32-bit lanes of 1, 2 or 4
                # values, i.e. an int32 all-reduce of this many bytes
                per_lane = {"int32": 1, "int16": 2, "int8": 4}[cfg.lane_format]
                lane_bytes = 4 * -(-(cfg.size_bytes // 4) // per_lane)
                prediction = predict("ina", topology, hosts, lane_bytes,
                                     bw_mbps=cfg.bw_mbps, elems_k=cfg.elems_k,
                                     window=cfg.window, root=where)
            else:
                blocks: dict[str, list[int]] = {}
                for r, host in enumerate(hosts):
                    blocks.setdefault(topology.host_link(host).node, []).append(r)
                phases = phases_for(algo, len(hosts), float(cfg.size_bytes),
                                    switch_blocks=list(blocks.values()))
                prediction = evaluate(net, list(hosts), phases, algo,
                                      reduce_bytes=reduced_bytes(algo, len(hosts),
                                                                 cfg.size_bytes),
                                      hashed=cfg.net == "sim")
            out[(algo, job)] = prediction.time_s
    return out


def add_model(summaries: list[dict], cfg) -> list[dict]:
    """Each summary with `model_time_s` and `measured_over_model` (None where not known)."""
    try:
        times = model_times(cfg)
    except Exception as error:      # the model never stops a run from being reported
        times = {}
        print(f"run: model: not computed: {type(error).__name__}: {error}")
    for s in summaries:
        model = times.get((s["algo"], s["job"]))
        s["model_time_s"] = model
        s["measured_over_model"] = (s["time_s"] / model
                                    if model and s.get("time_s") is not None else None)
    return summaries
