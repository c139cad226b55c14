"""What the controller does once it has learnt a failure or a repair, the same on both engines
(docs/protocol.md §8): update its view, re-route every live switch, re-plan the jobs whose
placement used the failed part, or place again the jobs that waited for a repair; each
action goes into the event's record. The engine gives `now()`, `control`, `runs`, `events`
and `event_jobs` (per event: job -> when the controller acted on it, for `recovery_s`).
"""

from __future__ import annotations

from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import route_changes


def failure_learnt(engine, index: int, event) -> None:
    record = engine.events[index]
    record.detected_s = engine.now()
    control = engine.control
    if isinstance(event, m.LinkDown):
        control.down_links.add(frozenset((event.a, event.b)))
    else:
        control.down_switches.add(event.switch)
    record.actions.append(f"re-routed ({route_changes(control.reroute())})")
    topology = control.topology_now()
    for run in engine.runs:
        if run.state != "running":
            continue
        placement = run.placement
        hit = placement is not None and (
            placement.uses_switch(event.switch) if isinstance(event, m.SwitchCrash)
            else placement.uses_link(event.a, event.b, topology))
        if hit:
            record.actions.append(run.replan(record.description))
        _acted(engine, index, run)


def repair_learnt(engine, index: int, event) -> None:
    record = engine.events[index]
    record.detected_s = engine.now()
    control = engine.control
    if isinstance(event, m.LinkUp):
        control.down_links.discard(frozenset((event.a, event.b)))
    else:
        control.switch_restarted(event.switch)
        record.actions.append(f"{event.switch}: pipeline pushed again")
    record.actions.append(f"re-routed ({route_changes(control.reroute())})")
    for run in engine.runs:
        action = run.repaired(record.description)
        if action is not None:
            record.actions.append(action)
            _acted(engine, index, run)


def _acted(engine, index: int, run) -> None:
    """The controller acted on event `index` for `run` now: its recovery is timed from here.
    One reading of the clock for both (on Mininet two readings differ, and the watch's time
    is the key its recovery is found by)."""
    now = engine.now()
    engine.event_jobs[index][run.job.name] = now
    run.watch_recovery(now)
