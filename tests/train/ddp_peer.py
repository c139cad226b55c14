"""One rank of tests/train/test_ddp_hook.py: `python tests/train/ddp_peer.py CONFIG.json`.

Gloo on 127.0.0.1. For two minibatches it computes each parameter's gradient, its mean by
`torch.distributed.all_reduce` (the reference), and the mean DDP gets from the inaemu hook with
each algorithm of the config (host algorithms over TCP on localhost; INA through the test's UDP
bridge to an in-process ina.p4 switch). Writes everything to an .npz for the test to compare.
"""

from __future__ import annotations

import copy
import json
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from hosts.api import AllreduceConfig, Allreducer
from inaemu.train.hook import register_inaemu_hook
from inaemu.train.task import (TaskConfig, build_model, load_digits_split, local_loss,
                               minibatch, shard)

ITERATIONS = 2


def flat_grads(model: torch.nn.Module) -> np.ndarray:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy().copy()


def main(path: str) -> None:
    config = json.loads(Path(path).read_text())
    rank, world = config["rank"], config["world"]
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{config['store_port']}",
                            rank=rank, world_size=world, timeout=timedelta(seconds=60))
    task = TaskConfig(seed=3, batch=16)
    data = load_digits_split(task.seed)
    model = build_model(task)
    shard_x, shard_y = shard(data, rank, world)
    saved = {}
    for iteration in range(ITERATIONS):
        reference = copy.deepcopy(model)
        loss = local_loss(reference, *minibatch(shard_x, shard_y, task, rank, iteration))
        loss.backward()
        saved[f"local{iteration}"] = flat_grads(reference)
        for p in reference.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        saved[f"reference{iteration}"] = flat_grads(reference)
    for algo, allreduce in config["algos"].items():
        replica = copy.deepcopy(model)
        # small buckets: several hook calls per backward
        ddp = DistributedDataParallel(replica, bucket_cap_mb=0.01)
        reducer = Allreducer(AllreduceConfig.from_dict(allreduce), algo=algo)
        state = register_inaemu_hook(ddp, reducer, world)
        for iteration in range(ITERATIONS):
            ddp.zero_grad(set_to_none=False)
            loss = local_loss(ddp, *minibatch(shard_x, shard_y, task, rank, iteration))
            loss.backward()
            saved[f"{algo}{iteration}"] = flat_grads(replica)
            calls = state.take_calls()
            saved[f"{algo}_elements{iteration}"] = np.array([c.elements for c in calls])
        reducer.close()
    dist.destroy_process_group()
    np.savez(config["output"], **saved)


if __name__ == "__main__":
    main(sys.argv[1])
