"""A worker's all-reduce call runs as SCHED_BATCH, whatever the algorithm (docs/hosts.md).

A waking SCHED_BATCH task does not preempt the one running on its core. On a machine with
fewer cores than agents plus switches (Mininet on a laptop) the running one is usually a
switch, which every agent waits for, so an agent woken by a packet waits for a tick or an idle
core instead of taking the switch's. INA's UDP agents ran so since session 22; the ring's and
the baselines' TCP agents did not until 2026-11-28, so on Mininet the two sides of the
comparison were scheduled differently. The policy the process had is restored after the call;
a policy other than SCHED_OTHER (chosen by the caller) is left alone.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def yielding_to_the_switch(enabled: bool = True) -> Iterator[None]:
    """Run the block as SCHED_BATCH (when enabled and the process is SCHED_OTHER)."""
    restore = _batch_scheduling() if enabled else None
    try:
        yield
    finally:
        if restore is not None:
            try:
                os.sched_setscheduler(0, restore, os.sched_param(0))
            except OSError:
                pass


def _batch_scheduling() -> int | None:
    """This process as SCHED_BATCH; the policy to restore, or None when nothing changed."""
    try:
        policy = os.sched_getscheduler(0)
        if policy != os.SCHED_OTHER:
            return None
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        return None
    return policy
