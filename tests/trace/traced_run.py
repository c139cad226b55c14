"""A small traced run in-process (no root): ina.p4 (k = 4) on `InProcessPorts` with seeded loss,
three protocol-following test workers, the log and pcaps in `inaemu trace`'s layout.

Time is a counter advanced 1 ms per delivered packet, so the run is exactly reproducible.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from p4switch.ports import ImpairmentPlan, InProcessPorts
from p4switch.runtime import TextTrace

from tests.ina.netsim import ProtocolWorker, add_job, maxima_for, new_switch
from tests.ina.packets import Endpoint, ip

K, JOB, POOL, WORKERS = 4, 7, 4, 3
AGG = Endpoint(0x0000000001FE, ip("10.0.0.254"))
HOSTS = [Endpoint(0x020000000001 + w, ip(f"10.0.0.{w + 1}")) for w in range(WORKERS)]
ORIGIN = 1000.0


class Clock:
    def __init__(self) -> None:
        self.now = ORIGIN

    def __call__(self) -> float:
        return self.now


@dataclass
class TracedRun:
    run_dir: Path
    workers: list[ProtocolWorker]
    lost_in: int
    lost_out: int
    vectors: list[list[int]]


def traced_run(run_dir: Path, *, loss: float = 0.15, seed: int = 3, chunks: int = 10,
               switch_name: str = "s1") -> TracedRun:
    """Run one all-reduce of `chunks` chunks per worker through a traced, lossy switch."""
    run_dir.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    switch = new_switch(K, AGG)
    add_job(switch, AGG, JOB, base=0, pool=POOL, members=[(w + 1, h) for w, h in enumerate(HOSTS)],
            result_count=WORKERS)
    vectors = [[(w + 1) * 100 + i for i in range(chunks * K)] for w in range(WORKERS)]
    workers = [ProtocolWorker(wid=w, me=HOSTS[w], aggregator=AGG, job=JOB, pool=POOL, k=K,
                              calls=[vectors[w]], maxima=maxima_for([vectors[w]]))
               for w in range(WORKERS)]
    names = {w + 1: f"{switch_name}-eth{w + 1}" for w in range(WORKERS)}
    plan = ImpairmentPlan.from_options([str(loss)], None)
    with open(run_dir / f"{switch_name}.log", "w") as log:
        switch.trace = TextTrace(log, clock=clock)
        with InProcessPorts(switch, names, plan=plan, seed=seed, clock=clock,
                            pcap_dir=run_dir / f"{switch_name}-pcap", names=names) as ports:
            queue: deque[tuple[int, bytes]] = deque()
            for w, worker in enumerate(workers):
                queue += [(w + 1, p) for p in worker.start()]
            for _ in range(100_000):
                if not queue:
                    pending = [w for w, worker in enumerate(workers) if not worker.done]
                    if not pending:
                        break
                    clock.now += 0.05                       # a retransmission timeout
                    for w in pending:
                        queue += [(w + 1, p) for p in workers[w].on_timeout()]
                    continue
                port, packet = queue.popleft()
                clock.now += 0.001
                ports.send(port, packet)
                for out_port, frames in sorted(ports.take_all().items()):
                    for frame in frames:
                        queue += [(out_port, p) for p in workers[out_port - 1].on_packet(frame)]
            else:
                raise AssertionError("the traced run made no progress")
            counters = ports.counters
    return TracedRun(run_dir, workers, sum(c.rx_lost for c in counters.values()),
                     sum(c.tx_lost for c in counters.values()), vectors)
