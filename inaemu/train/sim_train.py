"""`inaemu train --net sim`: simulated workers whose gradients cross the simulated network.

There are no worker processes: the N replicas of the model live in this process. Each
iteration every replica computes its minibatch's gradients for real (timed, one thread), its
gradients are cut into buckets as DDP cuts them from its second iteration on (parameters in
reverse order, a first bucket of at most 1 MiB, then 25 MiB), and each bucket of all N replicas
is all-reduced by one `inaemu.sim.simulate(..., inputs=...)` call: the same ina.p4, switch
runtime, controller set-up and host protocol cores as a Mininet run, on the virtual clock. The
sum comes back per worker, is averaged by the DDP hook's own `average`, and each replica steps
its optimizer.

An iteration lasts the slowest replica's compute plus the virtual seconds of its buckets'
all-reduces (the buckets go one after another, as the synchronous hook sends them).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch

from inaemu.train.config import JOB, TrainConfig
from inaemu.train.hook import average
from inaemu.train.results import TrainResult
from inaemu.train.task import (build_model, evaluate, load_digits_split, local_loss,
                               make_optimizer, minibatch, parameter_count, shard)
from inaemu.workload.models import BUCKET_BYTES, FIRST_BUCKET_BYTES, ddp_buckets

Progress = Callable[[str], None]


def bucket_layout(parameters: list[torch.nn.Parameter], first_cap: int = FIRST_BUCKET_BYTES,
                  cap: int = BUCKET_BYTES) -> list[list[int]]:
    """Indexes of the parameters in each bucket, as DDP (torch 2.13) re-buckets them after
    its first iteration (which sends one bucket): reverse order (the order gradients become
    ready in a feed-forward model); a bucket closes once it holds `cap` bytes or more (the
    first bucket `first_cap`): inaemu.workload.models.ddp_buckets."""
    order = list(reversed(range(len(parameters))))
    sizes = [parameters[i].numel() * parameters[i].element_size() for i in order]
    return [[order[j] for j in bucket] for bucket in ddp_buckets(sizes, first_cap, cap)]


class SimAllreduce:
    """All N workers' vectors of one bucket through one simulated all-reduce."""

    def __init__(self, cfg: TrainConfig, algo: str, progress: Progress):
        from controller.trees import choose_roots
        from inaemu.sim import SimJob, prepare_setup
        run = cfg.run_config()
        self.cfg, self.algo = cfg, algo
        self.topology = run.topology()
        hosts = run.job_hosts(self.topology)[JOB]
        root = choose_roots(self.topology, [(JOB, hosts)])[0]
        self.jobs = [SimJob(job=JOB, workers=hosts, switch=root, hierarchical=run.tree)]
        self.setup = prepare_setup(self.topology, self.jobs, elems_k=cfg.elems_k,
                                   pool_size=cfg.pool_size, ina=algo == "ina",
                                   progress=progress)
        self.calls = 0

    def allreduce(self, vectors: list[np.ndarray]) -> tuple[list[np.ndarray], float, dict]:
        """Each worker's sum, the virtual seconds until the last worker had it, traffic."""
        from inaemu.experiment.agents import max_retx, rto_max
        from inaemu.sim import InaOptions, simulate
        cfg = self.cfg
        self.calls += 1
        result = simulate(
            self.topology, self.jobs, algo=self.algo, size_bytes=4 * vectors[0].size,
            elems_k=cfg.elems_k, seed=cfg.seed * 1_000_003 + self.calls,
            time_limit=cfg.timeout, setup=self.setup, inputs={JOB: vectors},
            ina=InaOptions(pool_size=cfg.pool_size, window=cfg.window, rto=cfg.rto,
                           rto_max=rto_max(cfg.rto), max_retx=max_retx(cfg.rto, cfg.timeout),
                           fmt=cfg.lane_format, scaling=cfg.scaling, divisor=cfg.divisor))
        failed = [r for r in result.records if r.result is None or r.error]
        if failed:
            raise RuntimeError(f"all-reduce {self.calls}: {failed[0].host}: "
                               f"{failed[0].error or 'no result'}")
        traffic = {"bytes_sent": sum(r.bytes_sent for r in result.records) / len(result.records),
                   "retransmissions": sum(r.retransmissions for r in result.records)}
        seconds = max(r.time_s for r in result.records)
        return [r.result for r in result.records], seconds, traffic


def train_sim(cfg: TrainConfig, algo: str, progress: Progress) -> TrainResult:
    """One training run over the simulated network with `algo`."""
    started = time.perf_counter()
    torch.set_num_threads(1)
    n, task = cfg.workers, cfg.task
    data = load_digits_split(task.seed)
    models = [build_model(task) for _ in range(n)]
    optimizers = [make_optimizer(model, task) for model in models]
    shards = [shard(data, rank, n) for rank in range(n)]
    parameters = [list(model.parameters()) for model in models]
    layout = bucket_layout(parameters[0])
    result = TrainResult(algo=algo, net="sim", workers=n, parameters=parameter_count(models[0]))
    network = SimAllreduce(cfg, algo, progress)
    progress(f"train: sim: {algo}: {n} simulated workers, {result.parameters} parameters in "
             f"{len(layout)} bucket(s), {cfg.iterations} iterations")
    points = set(cfg.eval_points())
    if 0 in points:
        result.evals.append({"algo": algo, "net": "sim", "iteration": 0,
                             **evaluate(models[0], data)})
    for iteration in range(cfg.iterations):
        compute, losses = [0.0] * n, []
        for rank in range(n):
            tick = time.perf_counter()
            optimizers[rank].zero_grad(set_to_none=False)
            x, y = minibatch(*shards[rank], task, rank, iteration)
            loss = local_loss(models[rank], x, y)
            loss.backward()
            compute[rank] += time.perf_counter() - tick
            losses.append(loss.item())
        comm, sent, retx = 0.0, 0.0, 0
        for bucket in layout:
            vectors = [torch.cat([parameters[rank][i].grad.reshape(-1) for i in bucket])
                       .numpy() for rank in range(n)]
            sums, seconds, traffic = network.allreduce(vectors)
            comm += seconds
            sent += traffic["bytes_sent"]
            retx += traffic["retransmissions"]
            for rank in range(n):
                mean, offset = average(sums[rank], n), 0
                for i in bucket:
                    grad = parameters[rank][i].grad
                    grad.copy_(mean[offset:offset + grad.numel()].view_as(grad))
                    offset += grad.numel()
        for rank in range(n):
            tick = time.perf_counter()
            optimizers[rank].step()
            compute[rank] += time.perf_counter() - tick
        slowest = max(compute)
        result.rows.append({"algo": algo, "net": "sim", "iteration": iteration,
                            "loss": float(np.mean(losses)), "iteration_s": slowest + comm,
                            "compute_s": slowest, "comm_s": comm, "bytes_sent": sent,
                            "retransmissions": retx})
        if iteration + 1 in points:
            result.evals.append({"algo": algo, "net": "sim", "iteration": iteration + 1,
                                 **evaluate(models[0], data)})
            last = result.evals[-1]
            progress(f"train: sim: {algo}: iteration {iteration + 1}/{cfg.iterations}: batch "
                     f"loss {result.rows[-1]['loss']:.4f}, train loss "
                     f"{last['train_loss']:.4f}, test accuracy {last['test_accuracy']:.3f}")
    result.add_times()
    result.wall_s = time.perf_counter() - started
    return result
