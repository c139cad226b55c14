"""What one `inaemu train` does, validated: the task, the workers, the network, the algorithms.

The network part maps onto `inaemu run`'s `RunConfig` (a star of N workers around one switch
running ina.p4, or a leaf-spine or fat-tree with the workers spread over it and INA aggregating
along a tree), so the topology, the job's hosts and the INA job set-up are `inaemu run`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inaemu.experiment.arguments import DEFAULT_ELEMS
from inaemu.experiment.config import (ALL_ALGOS, ConfigError, RunConfig, default_pool,
                                      default_window)
from inaemu.train.task import TaskConfig

if TYPE_CHECKING:
    from inaemu.experiment.tls import RunTLS

JOB = 1


@dataclass(frozen=True)
class TrainConfig:
    algos: tuple[str, ...] = ("ina", "ring")
    workers: int = 4
    iterations: int = 100
    eval_every: int = 10
    task: TaskConfig = field(default_factory=TaskConfig)
    net: str = "mininet"
    elems_k: int = DEFAULT_ELEMS     # values per packet: `inaemu run`'s, a full 1500-byte MTU
    pool_size: int | None = None     # aggregator slots; None: default_pool (one job)
    window: int | None = None        # INA chunks in flight per worker; None: default_window
    rto: float = 0.1
    lane_format: str = "int32"       # INA lanes and quantization scale (docs/formats.md)
    scaling: str = "job"
    divisor: int | None = None
    bw_mbps: float | None = 20.0
    loss: float = 0.0
    timeout: float = 30.0            # one all-reduce call (wall s on Mininet, virtual in sim)
    tag: str = ""
    grpc_base: int = 20000
    topo: str = "star"               # as inaemu run: star, leaf-spine, fat-tree
    fat_k: int = 4
    spines: int = 2
    leaves: int = 2
    hosts_per_leaf: int = 2
    aggregation: str | None = None   # INA: tree | single; None: tree on multi-tier
    tls: "RunTLS | None" = None      # P4Runtime over (mutual) TLS, Mininet only (as inaemu run)

    def __post_init__(self) -> None:
        if self.pool_size is None:
            object.__setattr__(self, "pool_size", default_pool(JOB))
        if self.window is None:
            object.__setattr__(self, "window", default_window(self.workers, self.pool_size))
        if not self.algos or any(a not in ALL_ALGOS for a in self.algos):
            raise ConfigError(f"algo: expected {', '.join(ALL_ALGOS)}, both or all, got "
                              f"{self.algos!r}")
        if not 1 <= self.iterations <= 100_000:
            raise ConfigError(f"iterations: expected 1..100000, got {self.iterations}")
        if not 1 <= self.eval_every:
            raise ConfigError(f"eval-every: expected >= 1, got {self.eval_every}")
        self.run_config()          # the network settings, checked by inaemu run's rules

    @property
    def seed(self) -> int:
        return self.task.seed

    def run_config(self) -> RunConfig:
        """The network as `inaemu run` would build it for this many workers."""
        return RunConfig(algos=self.algos, workers=self.workers, elems_k=self.elems_k,
                         pool_size=self.pool_size, window=self.window, rto=self.rto,
                         lane_format=self.lane_format, scaling=self.scaling,
                         divisor=self.divisor, seed=self.seed,
                         net=self.net, timeout=self.timeout, tag=self.tag,
                         grpc_base=self.grpc_base, bw_mbps=self.bw_mbps, loss=self.loss,
                         topo=self.topo, fat_k=self.fat_k, spines=self.spines,
                         leaves=self.leaves, hosts_per_leaf=self.hosts_per_leaf,
                         aggregation=self.aggregation, tls=self.tls)

    def eval_points(self) -> list[int]:
        """Iterations done when rank 0 evaluates: 0 (the start), every eval_every, the end."""
        points = list(range(0, self.iterations, self.eval_every))
        return points + [self.iterations]
