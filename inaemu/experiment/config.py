"""What one `inaemu run` does, validated: the settings every network kind shares.

`RunConfig` is built from the command line (`inaemu/run.py`) or by a script; it refuses values
no run could use, with a message naming the setting, so a bad argument never reaches Mininet.
It also decides the shape of the run: the topology (a star, a leaf-spine or a fat-tree), which
hosts work for which job, and how each job aggregates (a tree over every tier, or one switch).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from controller.ina_jobs import pool_cells
from hosts.ina_wire import MAX_K, MIN_K
from topologies.builders import fat_tree, leaf_spine, star
from topologies.model import Endpoint, Topology, TopologyError

if TYPE_CHECKING:
    from inaemu.experiment.tls import RunTLS

ALGOS = ("ina", "ring")
# every algorithm `inaemu run --algo` takes (host plans: hosts/collectives.py, docs/algorithms.md)
ALL_ALGOS = ("ina", "ring", "ps", "hring", "dbtree", "rhd", "torus")
NETS = ("mininet", "sim")
TOPOS = ("star", "leaf-spine", "fat-tree")
AGGREGATIONS = ("tree", "single")
LANE_FORMATS = ("int32", "int16", "int8")   # INA values per 32-bit lane: 1, 2, 4
SCALINGS = ("job", "block")                 # one quantization scale per call, or per chunk
TARGETS = ("inaemu", "bmv2")     # the switch: inaemu switch, or the real simple_switch_grpc
COMPILERS = ("inaemu", "p4c")    # who compiles ina.p4: inaemu compile, or p4c-bm2-ss
MAX_FAT_TREE_K = 40     # the simulator: 16,000 hosts, 2,000 switches (docs/scale.md)
MAX_MININET_FAT_TREE_K = 8   # 128 hosts, 80 switch processes: what 2 cores emulate usefully
MAX_WORKERS = 65535     # per job on a tree: RESULT's count is 16 bits
MAX_SWITCH_MEMBERS = 64  # one aggregating switch's member bitmap (`ina_seen`, ina.p4's default
                         # INA_MEMBERS; the run compiles with it): a flat job
MAX_MININET_WORKERS = 128    # all jobs together, Mininet: the whole fat-tree(8), measured to fit
                             # (~11 GB, docs/experiments.md "Mininet at scale")
MAX_JOBS = 64
MAX_PORT = 510          # switch ports 1..510 (511 drops)
PROJECT_ROOT = Path(__file__).resolve().parents[2]
INA_P4 = PROJECT_ROOT / "p4src" / "ina.p4"


class ConfigError(ValueError):
    """A setting no run can use; the message names it."""


SWITCH_IN_FLIGHT = 1024     # contributions all jobs keep in flight at a switch by default
MIN_DEFAULT_WINDOW = 16     # ... but never fewer chunks per worker than this
INA_CELLS = 2048            # ina.p4's aggregator cells as `inaemu run` compiles it (INA_CELLS)
MAX_DEFAULT_POOL = 128      # the largest pool a job gets by default


def default_pool(jobs: int = 1) -> int:
    """Aggregator slots per job when --pool is not given: the largest power of two up to
    MAX_DEFAULT_POOL whose cells (`pool_cells`: 2 per slot + 2) every job can have on one
    switch: 128 for up to 7 jobs, 64 for up to 15, 32 for up to 31.

    Why 128 and not 64: on unshaped Mininet links a star of 4 (8) workers finished INA's call
    in 0.79 s (1.63 s) with a pool and window of 128 against 0.86-1.04 s (1.88-2.04 s) with
    64 and 64 (32), runs alternating in one session (docs/experiments.md)."""
    pool = MAX_DEFAULT_POOL
    while pool > 1 and jobs * pool_cells(pool) > INA_CELLS:
        pool //= 2
    return pool


def default_window(workers: int, pool_size: int, jobs: int = 1) -> int:
    """Chunks in flight per worker when --window is not given: SWITCH_IN_FLIGHT shared by all
    workers of all jobs, at least MIN_DEFAULT_WINDOW, at most the pool.

    Why: the Python switch does more per wake-up with more in flight (the whole pool in
    flight, as SwitchML keeps it, makes a Mininet star of 4 or 8 workers ~15 % faster than 64
    or 32), but the contributions of every job on a switch queue at that switch, and the
    simulated switch's input queue holds 1,024 frames (like a Linux txqueuelen of 1,000):
    with 64 workers x 64 in flight it overflowed (1.42x the model, thousands of resends). So
    a star of 4 or 8 gets 128, 16 workers 64, 32 workers 32, and 64 workers 16.
    """
    share = SWITCH_IN_FLIGHT // max(1, workers * jobs)
    return max(1, min(pool_size, max(MIN_DEFAULT_WINDOW, share)))


@dataclass(frozen=True)
class RunConfig:
    algos: tuple[str, ...] = ALGOS
    workers: int = 4                      # per job
    jobs: int = 1                         # jobs side by side on the switch, ids 1..jobs
    size_bytes: int = 256 * 1024          # per worker
    loss: float = 0.0                     # percent, every link, both directions
    bw_mbps: float | None = None
    elems_k: int = 64                     # values per aggregation packet (INA_K)
    pool_size: int | None = None          # aggregator slots of the job; None: default_pool(jobs)
    window: int | None = None             # chunks in flight per worker (<= pool_size); None:
                                          # default_window(workers, pool_size, jobs)
    rto: float = 0.1                      # INA: seconds before the first retransmission
    lane_format: str = "int32"            # INA: int32 | int16 | int8 lanes (docs/formats.md)
    scaling: str = "job"                  # INA: job | block quantization scale
    divisor: int | None = None            # INA: quantize for sums of this many (None: workers)
    fallback_slots: int | None = None     # INA: slots each job holds in the switch, the rest of
                                          # its pool on a host aggregator (docs/fallback.md)
    sharing: str = "static"               # INA: static slices or the hashed shared pool (§3.3)
    shared_pairs: int | None = None       # hashed: the shared pool's pairs (None: pool_size)
    seed: int = 1
    net: str = "mininet"
    sim_core: str = "auto"                # --net sim: "python", "native" or "auto" (native where
                                          # it builds, else python: inaemu/sim/cores.py)
    timeout: float = 60.0                 # seconds per algorithm (wall clock on Mininet)
    tag: str = ""                         # prefix for host and switch names (beside other nets)
    grpc_base: int = 20000                # switch i listens on grpc_base + i
    # (worker, seconds after the start): fault injection; workers counted over all jobs in order
    kill: tuple[tuple[int, float], ...] = ()
    pcap: bool = False                    # Mininet: every switch port captured into the run dir
    trace: bool = False                   # per-packet switch logs + pcaps for `inaemu trace`
    topo: str = "star"                    # star (workers x jobs hosts), leaf-spine, fat-tree
    fat_k: int = 4
    spines: int = 2
    leaves: int = 2
    hosts_per_leaf: int = 2
    oversubscription: float = 1.0
    aggregation: str | None = None        # tree | single; None: tree on multi-tier, single on star
    target: str = "inaemu"                # Mininet switches: inaemu | bmv2 (simple_switch_grpc)
    compiler: str = "inaemu"              # ina.p4 -> BMv2 JSON + P4Info: inaemu | p4c
    servers: tuple[str, ...] = ()         # Mininet over several servers (docs/cluster.md)
    ssh_config: str | None = None         # `ssh -F` file for reaching them
    tls: "RunTLS | None" = None           # P4Runtime over (mutual) TLS, Mininet (inaemu/experiment/tls.py)

    def __post_init__(self) -> None:
        if self.pool_size is None:
            object.__setattr__(self, "pool_size", default_pool(self.jobs))
        if self.window is None:
            object.__setattr__(self, "window",
                               default_window(self.workers, self.pool_size, self.jobs))
        if not self.algos or any(a not in ALL_ALGOS for a in self.algos):
            raise ConfigError(f"algo: expected {', '.join(ALL_ALGOS)}, both or all, got "
                              f"{self.algos!r}")
        if not 2 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"workers: expected 2..{MAX_WORKERS}, got {self.workers}")
        if not 1 <= self.jobs <= MAX_JOBS:
            raise ConfigError(f"jobs: expected 1..{MAX_JOBS}, got {self.jobs}")
        if self.net == "mininet" and self.jobs * self.workers > MAX_MININET_WORKERS:
            raise ConfigError(f"workers: Mininet runs up to {MAX_MININET_WORKERS} workers in all "
                              f"(one process per host), got {self.jobs} job(s) of "
                              f"{self.workers}; --net sim goes further (fat-tree k up to "
                              f"{MAX_FAT_TREE_K}: {MAX_FAT_TREE_K ** 3 // 4} hosts)")
        if self.size_bytes < 4 or self.size_bytes % 4:
            raise ConfigError(f"size: need a positive whole number of float32 values, got "
                              f"{self.size_bytes} bytes")
        if not 0 <= self.loss < 100:
            raise ConfigError(f"loss: expected a percentage in [0, 100), got {self.loss:g}")
        if self.bw_mbps is not None and not 0 < self.bw_mbps <= 100_000:
            raise ConfigError(f"bw: expected Mbit/s in (0, 100000], got {self.bw_mbps:g}")
        if not MIN_K <= self.elems_k <= MAX_K or self.elems_k % 4:
            raise ConfigError(f"elems: k must be a multiple of 4 from {MIN_K} to {MAX_K}, "
                              f"got {self.elems_k}")
        if not 1 <= self.pool_size <= 1000:
            raise ConfigError(f"pool: expected 1..1000 slots, got {self.pool_size}")
        if not 1 <= self.window <= self.pool_size:
            raise ConfigError(f"window: expected 1..pool size ({self.pool_size}), "
                              f"got {self.window}")
        if self.lane_format not in LANE_FORMATS:
            raise ConfigError(f"format: expected one of {', '.join(LANE_FORMATS)}, got "
                              f"{self.lane_format!r}")
        if self.scaling not in SCALINGS:
            raise ConfigError(f"scaling: expected job or block, got {self.scaling!r}")
        if self.divisor is not None and not (self.lane_format != "int32"
                                             and 1 <= self.divisor <= self.workers):
            raise ConfigError(f"divisor: expected 1..workers ({self.workers}) with int16 or "
                              f"int8 lanes, got {self.divisor} with {self.lane_format}")
        lane_max = {"int32": 2**31 - 1, "int16": 2**15 - 1, "int8": 2**7 - 1}[self.lane_format]
        if "ina" in self.algos and self.workers > lane_max:
            raise ConfigError(f"format: {self.lane_format} lanes hold sums of at most "
                              f"{lane_max} workers, got {self.workers}")
        if not 0.001 <= self.rto <= 10:
            raise ConfigError(f"rto: expected 0.001..10 seconds, got {self.rto:g}")
        if not 0 <= self.seed < 2**63:
            raise ConfigError(f"seed: expected a non-negative integer, got {self.seed}")
        if self.sim_core not in ("auto", "python", "native"):
            raise ConfigError(f"sim-core: expected auto, python or native, got "
                              f"{self.sim_core!r}")
        if self.net not in NETS:
            raise ConfigError(f"net: expected mininet or sim, got {self.net!r}")
        if not self.timeout > 0:
            raise ConfigError(f"timeout: expected seconds > 0, got {self.timeout:g}")
        if len(self.tag) > 3 or not (self.tag == "" or self.tag.isalnum()):
            raise ConfigError(f"tag: at most 3 letters or digits, got {self.tag!r}")
        if not 1024 <= self.grpc_base <= 65000:
            raise ConfigError(f"grpc base: expected a port in 1024..65000, got {self.grpc_base}")
        self._check_toolchain()
        if self.tls is not None and self.net != "mininet":
            raise ConfigError("TLS: P4Runtime over TLS is for Mininet's switch processes; the "
                              "simulator's switches are served in its own process")
        if self.servers and (self.net != "mininet" or self.target != "inaemu"):
            raise ConfigError("servers: only Mininet with inaemu switches runs over servers")
        for worker, at in self.kill:
            if not 0 <= worker < self.workers * self.jobs or not 0 <= at < 1e6:
                raise ConfigError(f"kill: worker {worker} at {at:g} s is not a worker of this run "
                                  f"(0..{self.workers * self.jobs - 1}) at a time >= 0")
        self._check_shape()
        self._check_fallback()

    def _check_fallback(self) -> None:
        """A host aggregator serves flat jobs only, and must be left some slots."""
        if self.sharing not in ("static", "hashed"):
            raise ConfigError(f"sharing: expected static or hashed, got {self.sharing!r}")
        if self.shared_pairs is not None and (self.sharing != "hashed" or
                                              not 1 <= self.shared_pairs <= 0xFFFF):
            raise ConfigError(f"shared-pairs: 1..65535 pairs, with --sharing hashed only, got "
                              f"{self.shared_pairs}")
        if self.sharing == "hashed":
            if self.fallback_slots is not None:
                raise ConfigError("sharing: --sharing hashed and --fallback exclude each other "
                                  "(a hashed job holds no slots of its own)")
        if self.fallback_slots is None:
            return
        if not 1 <= self.fallback_slots < self.pool_size:
            raise ConfigError(f"fallback: expected 1..pool size - 1 ({self.pool_size - 1}) "
                              f"switch slots, got {self.fallback_slots}")
        if self.tree:
            raise ConfigError("fallback: a host aggregator serves jobs aggregated at one switch "
                              "(--aggregation single), not trees (docs/fallback.md)")

    def _check_toolchain(self) -> None:
        """Which switch and compiler; real BMv2 only where it can run the whole experiment."""
        if self.target not in TARGETS:
            raise ConfigError(f"target: expected inaemu or bmv2, got {self.target!r}")
        if self.compiler not in COMPILERS:
            raise ConfigError(f"compiler: expected inaemu or p4c, got {self.compiler!r}")
        if self.net == "sim" and (self.target, self.compiler) != ("inaemu", "inaemu"):
            raise ConfigError(f"--net sim runs inaemu's own runtime and compiler; --target "
                              f"{self.target} --compiler {self.compiler} needs --net mininet")
        if self.target == "bmv2" and self.loss:
            raise ConfigError("loss: simple_switch_grpc has no loss model (inaemu emulates loss "
                              "in its switch); use --target inaemu or --loss 0")
        if self.target == "bmv2" and self.trace:
            raise ConfigError("trace: `inaemu trace` reads inaemu switch logs; use --target "
                              "inaemu (--pcap captures BMv2's ports)")

    def _check_shape(self) -> None:
        """The topology's own settings, and whether its hosts hold every job's workers."""
        if self.topo not in TOPOS:
            raise ConfigError(f"topo: expected one of {', '.join(TOPOS)}, got {self.topo!r}")
        if self.aggregation not in (None, *AGGREGATIONS):
            raise ConfigError(f"aggregation: expected tree or single, got {self.aggregation!r}")
        top_k = MAX_FAT_TREE_K if self.net == "sim" else MAX_MININET_FAT_TREE_K
        if self.topo == "fat-tree" and not 2 <= self.fat_k <= top_k:
            raise ConfigError(f"k: expected an even fat-tree arity 2..{top_k}"
                              f"{f' on Mininet (--net sim: {MAX_FAT_TREE_K})' if top_k < MAX_FAT_TREE_K else ''}"
                              f", got {self.fat_k}")
        if self.topo == "leaf-spine":
            for name in ("spines", "leaves", "hosts_per_leaf"):
                if not 1 <= getattr(self, name) <= MAX_PORT:
                    raise ConfigError(f"{name.replace('_', '-')}: expected 1..{MAX_PORT}, got "
                                      f"{getattr(self, name)}")
            if self.hosts_per_leaf + self.spines > MAX_PORT:
                raise ConfigError(f"leaf ports: {self.hosts_per_leaf} hosts + {self.spines} "
                                  f"spines exceed a switch's {MAX_PORT} ports")
        if self.topo == "star" and self.workers * self.jobs > MAX_PORT:
            raise ConfigError(f"workers: a star's switch has {MAX_PORT} ports, "
                              f"{self.jobs} job(s) of {self.workers} need more")
        if "ina" in self.algos and not self.tree and self.workers > MAX_SWITCH_MEMBERS:
            raise ConfigError(f"workers: single-switch aggregation holds {MAX_SWITCH_MEMBERS} "
                              f"workers per job (the switch's worker bitmap), got "
                              f"{self.workers}; a tree (leaf-spine, fat-tree) takes more")
        if self.topo != "star":
            try:
                self._base_topology()
            except TopologyError as error:
                raise ConfigError(f"topo {self.topo}: {error}") from None
            if self.jobs * self.workers > self.host_count:
                raise ConfigError(f"workers: {self.jobs} job(s) of {self.workers} workers need "
                                  f"{self.jobs * self.workers} hosts; the {self.topo} has "
                                  f"{self.host_count}")

    @property
    def length(self) -> int:
        """float32 elements per worker."""
        return self.size_bytes // 4

    @property
    def multi_tier(self) -> bool:
        return self.topo != "star"

    @property
    def tree(self) -> bool:
        """Whether INA jobs aggregate along a tree (default on multi-tier topologies)."""
        return (self.aggregation or ("tree" if self.multi_tier else "single")) == "tree"

    @property
    def host_count(self) -> int:
        """Hosts of the topology (on a star, one per worker of every job)."""
        return len(self._base_topology().hosts)

    def _base_topology(self) -> Topology:
        """The topology before the tag and gRPC ports, built once per config (a fat-tree(40)
        is 18,000 nodes: the checks, the host count and `topology` each built it again)."""
        built = self.__dict__.get("_built_topology")
        if built is None:
            built = self._build_topology()
            object.__setattr__(self, "_built_topology", built)
        return built

    def _build_topology(self) -> Topology:
        if self.topo == "fat-tree":
            return fat_tree(self.fat_k, bw=self.bw_mbps, loss=self.loss)
        if self.topo == "leaf-spine":
            return leaf_spine(self.leaves, self.spines, self.hosts_per_leaf, bw=self.bw_mbps,
                              loss=self.loss, oversubscription=self.oversubscription)
        return star(self.workers * self.jobs, bw=self.bw_mbps, loss=self.loss)

    def topology(self) -> Topology:
        """The topology the run uses, names prefixed with the tag and gRPC ports moved to the
        run's base. A star has one host per worker of every job, h1.. on ports 1.. of s1."""
        return _relabel(self._base_topology(), self.tag, self.grpc_base)

    def job_hosts(self, topology: Topology) -> dict[int, tuple[str, ...]]:
        """Job id (1..jobs) -> its worker hosts in worker order.

        Star: job j has the j-th block of `workers` hosts. Multi-tier: the run's workers are
        spread evenly over all hosts, and the jobs take them interleaved (`chosen[j::jobs]`), so
        every job's tree reaches over the fabric and the jobs' trees spread over the roots."""
        names = [h.name for h in topology.hosts]
        if not self.multi_tier:
            return {j + 1: tuple(names[j * self.workers:(j + 1) * self.workers])
                    for j in range(self.jobs)}
        total = self.workers * self.jobs
        chosen = [names[i * len(names) // total] for i in range(total)]
        return {j + 1: tuple(chosen[j::self.jobs]) for j in range(self.jobs)}

    def with_(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)


def _relabel(topology: Topology, tag: str, grpc_base: int) -> Topology:
    """Prefix every node name with `tag` and move the gRPC ports to `grpc_base + device id`."""
    rename = {n.name: f"{tag}{n.name}" for n in (*topology.hosts, *topology.switches)}
    switches = [dataclasses.replace(s, name=rename[s.name], grpc_port=grpc_base + s.device_id)
                for s in topology.switches]
    if not tag:     # names stay: hosts and links as they are (48,000 links at fat-tree(40))
        return Topology(name=topology.name, hosts=topology.hosts, switches=switches,
                        links=topology.links)
    hosts = [dataclasses.replace(h, name=rename[h.name]) for h in topology.hosts]
    links = [dataclasses.replace(link, a=Endpoint(node=rename[link.a.node], port=link.a.port),
                                 b=Endpoint(node=rename[link.b.node], port=link.b.port))
             for link in topology.links]
    return Topology(name=topology.name, hosts=hosts, switches=switches, links=links)
