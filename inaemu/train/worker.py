"""One training worker: `python -m inaemu.train.worker --config FILE.json` (on a Mininet host).

A PyTorch process: gloo process group for set-up only (DDP's initial broadcast of the weights),
then `DistributedDataParallel` with the inaemu comm hook, whose reducer is a `hosts.api.
Allreducer` (INA through the switch, or a host algorithm over TCP): every gradient travels
through inaemu. Writes a JSON record: per iteration the local loss, the iteration's seconds, the
seconds spent in the hook, traffic; rank 0 also evaluates its model at the evaluation points.

Config keys: rank, world, algo, master ("ip:port" of rank 0's gloo store), ifname (the host's
interface, for gloo), iterations, eval_points, task (TaskConfig fields), allreduce
(AllreduceConfig fields), output. On failure: one line on stderr, {"ok": false, "error": ...}
in the output, exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

GLOO_TIMEOUT_S = 120


def train(config: dict) -> dict:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from hosts.api import AllreduceConfig, Allreducer
    from inaemu.train.hook import register_inaemu_hook
    from inaemu.train.task import (TaskConfig, build_model, evaluate, load_digits_split,
                                   local_loss, make_optimizer, minibatch, parameter_count,
                                   shard)

    torch.set_num_threads(1)
    rank, world = config["rank"], config["world"]
    if config.get("ifname"):
        os.environ["GLOO_SOCKET_IFNAME"] = config["ifname"]
    task = TaskConfig(**config["task"])
    data = load_digits_split(task.seed)
    model = build_model(task)
    dist.init_process_group("gloo", init_method=f"tcp://{config['master']}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=GLOO_TIMEOUT_S))
    try:
        ddp = DistributedDataParallel(model)   # no buffers to sync
        reducer = Allreducer(AllreduceConfig.from_dict(config["allreduce"]), algo=config["algo"])
        try:
            state = register_inaemu_hook(ddp, reducer, world)
            optimizer = make_optimizer(model, task)
            shard_x, shard_y = shard(data, rank, world)
            points = set(config["eval_points"])
            rows, evals = [], []
            if rank == 0 and 0 in points:
                evals.append({"iteration": 0, **evaluate(model, data)})
            for iteration in range(config["iterations"]):
                tick = time.perf_counter()
                optimizer.zero_grad(set_to_none=False)
                x, y = minibatch(shard_x, shard_y, task, rank, iteration)
                loss = local_loss(ddp, x, y)
                loss.backward()
                optimizer.step()
                seconds = time.perf_counter() - tick
                calls = state.take_calls()
                rows.append({"iteration": iteration, "loss": loss.item(),
                             "iteration_s": seconds,
                             "comm_s": sum(c.seconds for c in calls),
                             "buckets": len(calls),
                             "bytes_sent": sum(c.bytes_sent for c in calls),
                             "retransmissions": sum(c.retransmissions for c in calls)})
                if rank == 0 and iteration + 1 in points:
                    evals.append({"iteration": iteration + 1, **evaluate(model, data)})
        finally:
            reducer.close()
    finally:
        dist.destroy_process_group()
    return {"ok": True, "rank": rank, "world": world, "algo": config["algo"],
            "parameters": parameter_count(model), "rows": rows, "evals": evals}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inaemu.train.worker",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="the worker's JSON config")
    args = parser.parse_args(argv)
    output = None
    try:
        config = json.loads(Path(args.config).read_text())
        output = config.get("output")
        record = train(config)
    except Exception as error:          # one line for the orchestrator, the trace in the log
        traceback.print_exc()
        message = f"{type(error).__name__}: {error}".splitlines()[0]
        print(f"train worker: error: {message}", file=sys.stderr)
        if output:
            Path(output).write_text(json.dumps({"ok": False, "error": message}) + "\n")
        return 1
    if output:
        Path(output).write_text(json.dumps(record) + "\n")
    else:
        print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
