"""The public host API: `allreduce(array, algo=..., config=...)` and the reusable `Allreducer`.

One `Allreducer` per worker per job keeps the protocol state that must survive between calls (the
INA chunk positions and MAX-round versions, the ring's connections); `allreduce()` is a one-call
convenience around it. Both algorithms take and return 1-D float32 arrays.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .collectives import PLAN_ALGOS
from . import quantize as qz
from .errors import HostError, UsageError
from .ina_session import InaSession
from .ina_wire import INA_UDP_PORT, MAX_K, MIN_K
from .ring_session import ACCUMULATORS, RingSession
from .tcp_driver import TcpRing, listen
from .udp_driver import UdpInaDriver

ALGORITHMS = ("ina", "ring", *PLAN_ALGOS)   # plan algorithms: hosts/tcp_collective.py


class ConfigError(HostError, ValueError):
    """A bad all-reduce configuration; the message names the field."""


@dataclass(frozen=True, kw_only=True)
class AllreduceConfig:
    """Everything a worker needs to join a job (INA fields, ring fields, timeouts)."""

    job: int
    worker: int                          # worker id (INA) = rank (ring), 0 <= worker < n
    n: int
    # in-network aggregation
    aggregator: str = ""                 # the switch's aggregator IPv4 address
    k: int = 32                          # values per packet: the P4 program's INA_K
    pool_size: int = 64                  # slots of the job's pool (the controller's pool_size)
    window: int | None = None            # chunks in flight; None: pool_size
    switch_slots: int | None = None      # slots the switch holds, the rest on a host
                                         # aggregator (docs/fallback.md); None: pool_size
    sharing: str = "static"              # static slices or the hashed shared pool (§3.3)
    rto: float = 0.1                     # seconds before the first retransmission
    rto_max: float = 1.0
    max_retx: int = 12
    rto_min: float | None = None         # adaptive RTO floor; None: rto
    adaptive: bool = True                # RFC 6298 RTO and AIMD window (False: fixed ones)
    ina_port: int = INA_UDP_PORT         # UDP port at the aggregator
    fmt: str = "int32"                   # lane format: int32 | int16 | int8 (docs/formats.md)
    scaling: str = "job"                 # one scale per call (job) or per chunk (block)
    divisor: int | None = None           # quantization headroom; None: n (never overflows)
    bind_port: int | None = None         # local UDP port; None: ina_port (the protocol's)
    bind_address: str = "0.0.0.0"        # local address for the UDP socket and ring listener
    # ring baseline
    peers: tuple[str, ...] = ()          # "host:port" of every rank, in ring order
    accumulate: str = "float32"          # the ring's accumulator: float32 (as NCCL) or float64
    connect_timeout: float = 20.0        # ring set-up: neighbours may start later
    idle_timeout: float = 10.0           # ring: no byte moved for this long ends the call
    switch_blocks: tuple[tuple[int, ...], ...] = ()   # ranks under each switch (hier. ring)
    # both
    timeout: float = 60.0                # hard deadline of one call

    def __post_init__(self) -> None:
        def need(ok: bool, name: str, text: str) -> None:
            if not ok:
                raise ConfigError(f"config.{name}: {text}, got {getattr(self, name)!r}")

        def integer(name: str, low: int, high: int) -> None:
            value = getattr(self, name)
            need(isinstance(value, int) and not isinstance(value, bool)
                 and low <= value <= high, name, f"must be an integer in [{low}, {high}]")

        def seconds(name: str) -> None:
            value = getattr(self, name)
            need(isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0,
                 name, "must be a positive number of seconds")

        integer("job", 0, 0xFFFF)
        integer("n", 1, qz.MAX_WORKERS)
        integer("worker", 0, self.n - 1)
        integer("k", MIN_K, MAX_K)
        need(self.k % 4 == 0, "k", "must be a multiple of 4")
        integer("pool_size", 1, 0xFFFF)
        if self.window is not None:
            integer("window", 1, self.pool_size)
        if self.switch_slots is not None:
            integer("switch_slots", 1, self.pool_size)
        need(self.sharing in ("static", "hashed"), "sharing", "must be static or hashed")
        integer("max_retx", 0, 1000)
        integer("ina_port", 1, 0xFFFF)
        if self.bind_port is not None:
            integer("bind_port", 0, 0xFFFF)
        for name in ("rto", "rto_max", "connect_timeout", "idle_timeout", "timeout"):
            seconds(name)
        need(self.rto_max >= self.rto, "rto_max", f"must be >= rto ({self.rto})")
        if self.rto_min is not None:
            seconds("rto_min")
            need(self.rto_min <= self.rto_max, "rto_min", f"must be <= rto_max ({self.rto_max})")
        need(isinstance(self.adaptive, bool), "adaptive", "must be true or false")
        need(self.accumulate in ACCUMULATORS, "accumulate", f"must be one of {list(ACCUMULATORS)}")
        need(self.fmt in qz.FORMAT_BITS, "fmt", f"must be one of {list(qz.FORMAT_BITS)}")
        need(self.scaling in qz.SCALINGS, "scaling", f"must be one of {list(qz.SCALINGS)}")
        if self.divisor is not None:
            integer("divisor", 1, self.n)
        peers = tuple(self.peers)
        object.__setattr__(self, "peers", peers)
        try:
            blocks = tuple(tuple(block) for block in self.switch_blocks)
        except TypeError:
            raise ConfigError(f"config.switch_blocks: expected lists of ranks, got "
                              f"{self.switch_blocks!r}") from None
        object.__setattr__(self, "switch_blocks", blocks)
        ranks = sorted(r for block in blocks for r in block)
        need(not blocks or ranks == list(range(self.n)), "switch_blocks",
             f"must split the ranks 0..{self.n - 1} among the switches, each once")
        for i, peer in enumerate(peers):
            host, sep, port = str(peer).rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) <= 0xFFFF:
                raise ConfigError(f"config.peers[{i}]: expected 'host:port', got {peer!r}")

    @classmethod
    def from_dict(cls, data: dict) -> "AllreduceConfig":
        """From JSON-like data; unknown keys are an error (a misspelled option must not vanish)."""
        if not isinstance(data, dict):
            raise ConfigError(f"config: expected an object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"config: unknown option(s) {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(known))})")
        missing = sorted(name for name in ("job", "worker", "n") if name not in data)
        if missing:
            raise ConfigError(f"config: missing {', '.join(missing)}")
        values = dict(data)
        if "peers" in values:
            if not isinstance(values["peers"], list):
                raise ConfigError("config.peers: expected a list of 'host:port'")
            values["peers"] = tuple(values["peers"])
        return cls(**values)

    def peer(self, rank: int) -> tuple[str, int]:
        host, _, port = self.peers[rank].rpartition(":")
        return host, int(port)


@dataclass
class AllreduceStats:
    """One call: wall time and traffic (application bytes: UDP payloads or ring messages)."""

    algo: str
    seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    packets_sent: int = 0                # INA datagrams or ring messages
    packets_received: int = 0
    retransmissions: int = 0             # INA only: early and by timer
    fast_retransmissions: int = 0        # INA: early (a later result showed the loss)
    timer_retransmissions: int = 0       # INA: a timer expired
    nack_retransmissions: int = 0        # INA: the switch's NACK asked for the values
    ignored: int = 0                     # INA: duplicates, malformed and foreign packets
    send_refused: int = 0                # INA: datagrams this host's kernel refused (lost)
    # INA: the per-element error bound, built on first use (a diagnostic, not the call's work:
    # between calls it delayed a worker's next start, and the others waited for it)
    bound_of: Callable[[], np.ndarray] | None = field(default=None, repr=False, compare=False)
    _bound: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def error_bound(self) -> np.ndarray | None:
        """INA: per element (None for host algorithms)."""
        if self._bound is None and self.bound_of is not None:
            self._bound, self.bound_of = self.bound_of(), None
        return self._bound


class Allreducer:
    """One worker of one job; `allreduce` as many times as needed, then `close`."""

    def __init__(self, config: AllreduceConfig, *, algo: str = "ina"):
        if algo not in ALGORITHMS:
            raise UsageError(f"algo must be one of {ALGORITHMS}, got {algo!r}")
        self.config, self.algo = config, algo
        self.stats: AllreduceStats | None = None
        self._udp: UdpInaDriver | None = None
        self._ring: TcpRing | None = None
        if algo == "ina":
            self._open_ina()
        else:
            self._open_ring()

    def _open_ina(self) -> None:
        c = self.config
        if not c.aggregator:
            raise ConfigError("config.aggregator: the INA algorithm needs the aggregator address")
        session = InaSession(job=c.job, worker=c.worker, n=c.n, k=c.k, pool_size=c.pool_size,
                             window=c.window or c.pool_size, rto=c.rto, rto_max=c.rto_max,
                             max_retx=c.max_retx, rto_min=c.rto_min, adaptive=c.adaptive,
                             fmt=c.fmt, scaling=c.scaling, divisor=c.divisor,
                             switch_slots=c.switch_slots, sharing=c.sharing)
        self._udp = UdpInaDriver(session, aggregator=c.aggregator, aggregator_port=c.ina_port,
                                 bind_address=c.bind_address,
                                 bind_port=c.ina_port if c.bind_port is None else c.bind_port)

    def _open_ring(self) -> None:
        c = self.config
        if self.algo != "ring":       # PS, hierarchical ring, trees, halving-doubling, torus
            from .tcp_collective import open_collective
            self._ring = open_collective(c, self.algo)
            return
        if len(c.peers) != c.n:
            raise ConfigError(f"config.peers: the ring needs one 'host:port' per worker "
                              f"({c.n}), got {len(c.peers)}")
        session = RingSession(rank=c.worker, n=c.n, accumulate=c.accumulate)
        listener = listen(c.bind_address, c.peer(c.worker)[1]) if c.n > 1 else None
        self._ring = TcpRing(session, job=c.job, listener=listener,
                             right=c.peer((c.worker + 1) % c.n),
                             connect_timeout=c.connect_timeout, idle_timeout=c.idle_timeout)

    def allreduce(self, array) -> np.ndarray:
        vector = np.asarray(array)
        if vector.ndim != 1 or vector.dtype != np.float32:
            raise UsageError(f"allreduce takes a 1-D float32 array, got {vector.dtype} "
                             f"with shape {vector.shape}")
        started = time.perf_counter()
        if self.algo == "ina":
            result = self._allreduce_ina(vector)
        else:
            result = self._allreduce_ring(vector)
        self.stats.seconds = time.perf_counter() - started
        if self.algo == "ina":    # a diagnostic, not the all-reduce: untimed, as the ring's
            self.stats.bound_of = self._udp.session.error_bound_later()
        return result

    def _allreduce_ina(self, vector: np.ndarray) -> np.ndarray:
        session = self._udp.session
        before, refused = session.counters.copy(), self._udp.send_errors
        result = self._udp.allreduce(vector, timeout=self.config.timeout)
        delta = session.counters - before
        self.stats = AllreduceStats(
            algo="ina", bytes_sent=delta.bytes_sent, bytes_received=delta.bytes_received,
            packets_sent=delta.packets_sent, packets_received=delta.packets_received,
            retransmissions=delta.retransmissions,
            fast_retransmissions=delta.fast_retransmissions,
            timer_retransmissions=delta.timer_retransmissions,
            nack_retransmissions=delta.nack_retransmissions,
            ignored=delta.duplicates_ignored + delta.malformed_ignored + delta.foreign_ignored,
            send_refused=self._udp.send_errors - refused)
        return result

    def _allreduce_ring(self, vector: np.ndarray) -> np.ndarray:
        counters = self._ring.session.counters
        before = dataclasses.replace(counters)
        result = self._ring.allreduce(vector, timeout=self.config.timeout)
        self.stats = AllreduceStats(
            algo=self.algo, bytes_sent=counters.bytes_sent - before.bytes_sent,
            bytes_received=counters.bytes_received - before.bytes_received,
            packets_sent=counters.messages_sent - before.messages_sent,
            packets_received=counters.messages_received - before.messages_received)
        return result

    def bytes_received_so_far(self) -> int:
        """Payload bytes this worker has received since it opened (results, or the ring's
        stream), readable from another thread while a call runs: a progress gauge."""
        if self._udp is not None:
            return self._udp.session.counters.bytes_received
        counters = getattr(getattr(self._ring, "session", None), "counters", None)
        return int(getattr(counters, "bytes_received", 0))

    def close(self) -> None:
        if self._udp is not None:
            self._udp.close()
        if self._ring is not None:
            self._ring.close()

    def __enter__(self) -> "Allreducer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def allreduce(array, *, algo: str = "ina", config: AllreduceConfig) -> np.ndarray:
    """All-reduce one float32 vector with the job's other workers (one call; see Allreducer)."""
    with Allreducer(config, algo=algo) as worker:
        return worker.allreduce(array)
