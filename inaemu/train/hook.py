"""A PyTorch DDP communication hook that all-reduces gradient buckets through inaemu.

    from hosts import AllreduceConfig, Allreducer
    from inaemu.train.hook import register_inaemu_hook

    ddp = DistributedDataParallel(model)
    state = register_inaemu_hook(ddp, Allreducer(config, algo="ina"))   # or "ring", "rhd", ...

DDP calls the hook once per gradient bucket during `backward()`. The hook hands the bucket's
flat float32 buffer to the reducer (`hosts.api.Allreducer`: INA through the switch, or a host
algorithm over TCP), divides the sum by the world size, writes it back into the buffer and
returns an already completed `torch.futures.Future` (the reducer is synchronous). The process
group DDP was built on (gloo) serves only DDP's set-up and bookkeeping (the initial broadcast of
the weights, agreeing on buckets); the gradients the model trains on are the hook's. `state.calls` keeps, per bucket, its size, the seconds the call
took (including waiting for the slowest worker) and the reducer's traffic.
"""

import time
from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass(frozen=True)
class BucketCall:
    """One all-reduce of one bucket."""

    index: int
    elements: int
    seconds: float
    bytes_sent: int
    retransmissions: int


@dataclass
class HookState:
    """The reducer (anything with `allreduce(float32 1-D array) -> float32 array`; an
    `Allreducer` also has `stats`), the number of workers to average over, and the calls."""

    reducer: object
    world_size: int
    calls: list[BucketCall] = field(default_factory=list)

    def take_calls(self) -> list[BucketCall]:
        """The calls since the last take (one iteration's buckets)."""
        calls, self.calls = self.calls, []
        return calls


def average(summed: np.ndarray, world_size: int) -> torch.Tensor:
    """The all-reduced sum divided by the number of workers, in float32 (DDP's mean)."""
    return torch.from_numpy(np.array(summed, dtype=np.float32)).div_(world_size)


def inaemu_allreduce_hook(state: HookState, bucket) -> torch.futures.Future[torch.Tensor]:
    """The comm hook: the bucket's mean over all workers, via inaemu, as a completed future
    (the return annotation is the one DDP checks for; so no postponed annotations here)."""
    buffer = bucket.buffer()
    if buffer.dtype != torch.float32:
        raise TypeError(f"inaemu all-reduces float32 gradients; bucket {bucket.index()} holds "
                        f"{buffer.dtype}")
    vector = np.ascontiguousarray(buffer.detach().cpu().numpy().reshape(-1))
    started = time.perf_counter()
    summed = state.reducer.allreduce(vector)
    seconds = time.perf_counter() - started
    stats = getattr(state.reducer, "stats", None)
    state.calls.append(BucketCall(
        index=bucket.index(), elements=vector.size, seconds=seconds,
        bytes_sent=getattr(stats, "bytes_sent", 0),
        retransmissions=getattr(stats, "retransmissions", 0)))
    buffer.copy_(average(summed, state.world_size).view_as(buffer))
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    future.set_result(buffer)
    return future


def register_inaemu_hook(ddp_model, reducer, world_size: int | None = None) -> HookState:
    """Register the hook on a `DistributedDataParallel` model; returns its state."""
    if world_size is None:
        import torch.distributed as dist
        world_size = dist.get_world_size()
    state = HookState(reducer=reducer, world_size=world_size)
    ddp_model.register_comm_hook(state, inaemu_allreduce_hook)
    return state
