"""Lifecycles and counts as text: what `inaemu trace` prints.

Times are seconds since the first event of the run (`+0.012345`), so runs on Mininet (wall
time) and in the simulator (virtual time) read alike; the header line gives the origin.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from inaemu.trace.lifecycle import SlotLifecycle, Step

IfaceName = Callable[[str, int], "str | None"]


def _where(step: Step, iface: IfaceName) -> str:
    if step.port is None:
        return "port ?"
    name = iface(step.switch, step.port)
    return f"port {step.port}" + (f" ({name})" if name else "")


def _outputs(step: Step) -> str:
    if not step.outputs:
        return ""
    copies = ", ".join(f"port {port}" + (f" (w{worker})" if worker is not None else "")
                       for port, worker in step.outputs)
    return f" -> {copies}"


def format_step(step: Step, origin: float, iface: IfaceName) -> str:
    what = step.what + (f" ({step.direction})" if step.direction else "")
    packet = f"{step.kind} w{step.worker}" + (" retx" if step.retx else "")
    offset = f"+{step.time - origin:.6f}"
    return (f"  {offset:>11}  {step.switch:<6} {_where(step, iface):<18} "
            f"{packet:<21} {what:<15} {step.detail}{_outputs(step)}").rstrip()


def format_lifecycle(life: SlotLifecycle, origin: float, iface: IfaceName) -> list[str]:
    title = str(life.key) + (f" (round {life.round + 1})" if life.round else "")
    return [title, *(format_step(step, origin, iface) for step in life.steps)]


def format_counts(total: Counter) -> list[str]:
    if not total:
        return ["no aggregation packets in the trace"]
    width = max(len(name) for name in total)
    return [f"{name:<{width}}  {total[name]}" for name in sorted(total, key=str.lower)]
