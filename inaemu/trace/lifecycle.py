"""Per-slot lifecycles of aggregation traffic, reconstructed from trace events (sans-I/O).

Feed events in time order (`Lifecycles.feed`), then read `lifecycles()`: one `SlotLifecycle` per
round of a (job, MAX round or data, slot, version, chunk) key, each a list of `Step`s across all
switches. What a pipeline run means is read from the actions of `p4src/ina.p4` it ran (the table
below; docs/p4-walkthrough.md names them), so this module knows that program, not the runtime:

| actions run (short names) | step |
|---|---|
| `ina_reject_<reason>` | `rejected` (bad length, unknown job, bad worker, bad slot, bad kind) |
| `ina_mark_seen` (+ `ina_overwrite`: the first) | `contribution`; then `completed` when `ina_multicast_result` (multicast) or `ina_send_up` (partial sum to the parent) ran |
| `ina_load_cell` without `ina_mark_seen`, a CONTRIB | `duplicate`: answered by `ina_unicast_result`, sent up again by `ina_send_up`, or dropped |
| a RESULT with `ina_multicast_result` / `ina_drop_duplicate` | `parent result` (stored, multicast) / `duplicate` |
| a QUERY with `ina_nack` / `ina_unicast_result` / `ina_query_up` / `ina_to_host_aggregator` / `ina_load_cell` alone | `query`: answered by a NACK / by the result / asked of the parent / passed to the host aggregator / dropped (another member's piece is missing) |
| a NACK (from the parent) with `ina_send_up` / `ina_drop_duplicate` | `nack`: partial sum sent up again / dropped |
| none of these, packets out | `forwarded` (routed past the switch); none out: `dropped` |

`LinkLoss` events become `loss` steps (where the frame was, where it would have gone). A switch
with captures but no log contributes `arrived`/`left` steps from its pcaps (what happened inside
is unknown); for a switch with a log its pcaps add nothing here (they feed the byte counts).

Rounds: a key recurs when chunk positions come round again in a later call (docs/protocol.md §4).
A first contribution (`ina_overwrite`) at a switch that already had one in the key's current round
starts a new round; every other step joins the key's latest round.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from inaemu.trace.events import Event, InaHeader, LinkLoss, PipelineRun, WireFrame

# step kinds
ARRIVED, LEFT = "arrived", "left"
CONTRIBUTION, DUPLICATE, REJECTED, COMPLETED = "contribution", "duplicate", "rejected", "completed"
PARENT_RESULT, FORWARDED, DROPPED, LOSS = "parent result", "forwarded", "dropped", "loss"
QUERY, NACK = "query", "nack"

# what a QUERY's pipeline run did, by the action that shows it (first match wins):
# (action, what the count calls it, the step's detail)
QUERY_ANSWERS = (
    ("ina_nack", "NACK sent", "contribution missing: NACK sent back"),
    ("ina_unicast_result", "result unicast", "cell complete: result unicast back"),
    ("ina_query_up", "asked the parent", "cell waits for the parent: query sent up"),
    ("ina_to_host_aggregator", "to the host aggregator",
     "a slot of the host aggregator: passed on to it"),
    ("ina_load_cell", "dropped", "another member's piece is missing: dropped"),
)
_QUERY_OUTCOME = {detail: label for _, label, detail in QUERY_ANSWERS}

REJECT_REASONS = {"ina_reject_bad_length": "bad length", "ina_reject_unknown_job": "unknown job",
                  "ina_reject_bad_worker": "bad worker", "ina_reject_bad_slot": "bad slot",
                  "ina_reject_bad_kind": "bad kind"}


@dataclass(frozen=True, order=True)
class SlotKey:
    """What identifies one use of an aggregator cell: job, round kind, slot, version, chunk."""

    job: int
    max_round: bool
    slot: int
    ver: int
    chunk: int

    @classmethod
    def of(cls, ina: InaHeader) -> "SlotKey":
        return cls(ina.job, ina.is_max_round, ina.slot, ina.ver, ina.chunk)

    def __str__(self) -> str:
        phase = "MAX round" if self.max_round else f"slot {self.slot}"
        return f"job {self.job} {phase} v{self.ver} chunk {self.chunk}"


@dataclass(frozen=True)
class Step:
    """One thing that happened to the key's packets at one switch."""

    time: float
    switch: str
    what: str
    port: int | None                 # where the packet arrived (or, for a loss, the lossy port)
    kind: str                        # CONTRIB, RESULT, ...
    worker: int                      # the packet's worker field
    retx: bool
    detail: str = ""
    outputs: tuple[tuple[int, int | None], ...] = ()   # (port, receiving worker) of copies sent
    direction: str = ""              # loss / capture steps: in | out


@dataclass
class SlotLifecycle:
    key: SlotKey
    round: int
    steps: list[Step] = field(default_factory=list)
    _overwritten_at: set[str] = field(default_factory=set, repr=False)


def classify(run: PipelineRun, ina: InaHeader) -> tuple[str, str, bool]:
    """(step kind, detail, is a first contribution) for one pipeline run of an ina packet."""
    actions = {name.rpartition(".")[2] for name in run.actions}
    for action, reason in REJECT_REASONS.items():
        if action in actions:
            return REJECTED, reason, False
    if ina.is_query:
        for action, _label, detail in QUERY_ANSWERS:
            if action in actions:
                return QUERY, detail, False
    if ina.is_nack and "ina_send_up" in actions:
        return NACK, "the parent lacks this switch's partial sum: sent up again", False
    if ina.is_nack and "ina_drop_duplicate" in actions:
        return NACK, "cell not waiting for the parent: dropped", False
    if ina.is_contribution and "ina_to_host_aggregator" in actions:
        return FORWARDED, "a slot of the host aggregator: passed on to it", False
    if ina.is_contribution and "ina_mark_seen" in actions:
        first = "ina_overwrite" in actions
        how = "first, cell overwritten" if first else "combined"
        if "ina_multicast_result" in actions:
            return COMPLETED, f"{how}; last one: result multicast", first
        if "ina_send_up" in actions:
            return COMPLETED, f"{how}; last one here: partial sum sent to the parent", first
        return CONTRIBUTION, f"{how}; waiting for more", first
    if ina.is_contribution and "ina_load_cell" in actions:
        if "ina_unicast_result" in actions:
            return DUPLICATE, "after completion: result unicast back", False
        if "ina_send_up" in actions:
            return DUPLICATE, "cell waits for the parent: partial sum sent up again", False
        return DUPLICATE, "still aggregating: dropped", False
    if ina.is_result and "ina_multicast_result" in actions:
        return PARENT_RESULT, "parent's result stored and multicast", False
    if ina.is_result and "ina_drop_duplicate" in actions:
        return DUPLICATE, "parent's result for a cell not waiting: dropped", False
    if run.outputs:
        return FORWARDED, "not aggregated here: routed", False
    return DROPPED, "; ".join(run.drops) or "dropped", False


class Lifecycles:
    """Builds lifecycles from events fed in time order; `logged` = switches that have a log."""

    def __init__(self, logged: set[str]) -> None:
        self.logged = set(logged)
        self._rounds: dict[SlotKey, list[SlotLifecycle]] = defaultdict(list)

    def feed(self, event: Event) -> None:
        ina = event.ina
        if ina is None:
            return
        if isinstance(event, PipelineRun):
            self._pipeline(event, ina)
        elif isinstance(event, LinkLoss):
            self._loss(event, ina)
        elif isinstance(event, WireFrame) and event.switch not in self.logged:
            what = ARRIVED if event.direction == "in" else LEFT
            self._current(SlotKey.of(ina)).steps.append(Step(
                event.time, event.switch, what, event.port, ina.kind_name, ina.worker, ina.retx,
                direction=event.direction))

    def feed_all(self, events) -> "Lifecycles":
        for event in events:
            self.feed(event)
        return self

    def lifecycles(self) -> list[SlotLifecycle]:
        """Every round of every key, by key then round."""
        return [life for key in sorted(self._rounds) for life in self._rounds[key]]

    def _current(self, key: SlotKey) -> SlotLifecycle:
        rounds = self._rounds[key]
        if not rounds:
            rounds.append(SlotLifecycle(key, 0))
        return rounds[-1]

    def _pipeline(self, run: PipelineRun, ina: InaHeader) -> None:
        key = SlotKey.of(ina)
        what, detail, first = classify(run, ina)
        life = self._current(key)
        if first:
            if run.switch in life._overwritten_at:
                life = SlotLifecycle(key, life.round + 1)
                self._rounds[key].append(life)
            life._overwritten_at.add(run.switch)
        outputs = tuple((out.port, out.ina.worker if out.ina else None) for out in run.outputs)
        life.steps.append(Step(run.time, run.switch, what, run.port, ina.kind_name, ina.worker,
                               ina.retx, detail, outputs))

    def _loss(self, loss: LinkLoss, ina: InaHeader) -> None:
        if loss.direction == "in":
            detail = f"lost on the link into port {loss.port}: the pipeline never saw it"
        else:
            receiver = f" for w{ina.worker}" if not ina.is_upward else ""
            detail = (f"lost on the link out of port {loss.port}: the {ina.kind_name}{receiver} "
                      "never arrived")
        self._current(SlotKey.of(ina)).steps.append(Step(
            loss.time, loss.switch, LOSS, loss.port, ina.kind_name, ina.worker, ina.retx, detail,
            direction=loss.direction))


def build(events, logged: set[str]) -> list[SlotLifecycle]:
    return Lifecycles(logged).feed_all(events).lifecycles()


@dataclass(frozen=True)
class Selection:
    """The CLI filters; None = any."""

    job: int | None = None
    worker: int | None = None
    slot: int | None = None
    switch: str | None = None
    chunk: int | None = None

    def keeps_key(self, key: SlotKey) -> bool:
        return ((self.job is None or key.job == self.job)
                and (self.slot is None or (key.slot == self.slot and not key.max_round))
                and (self.chunk is None or key.chunk == self.chunk))

    def keeps_step(self, step: Step) -> bool:
        if self.switch is not None and step.switch != self.switch:
            return False
        if self.worker is None:
            return True
        return step.worker == self.worker or any(w == self.worker for _, w in step.outputs)


def select(lifecycles: list[SlotLifecycle], selection: Selection) -> list[SlotLifecycle]:
    """Lifecycles of the selected keys with only the selected steps; empty ones dropped."""
    chosen = []
    for life in lifecycles:
        if not selection.keeps_key(life.key):
            continue
        steps = [s for s in life.steps if selection.keeps_step(s)]
        if steps:
            chosen.append(SlotLifecycle(life.key, life.round, steps))
    return chosen


def counts(lifecycles: list[SlotLifecycle]) -> Counter:
    """Totals over every step: the `--summary` numbers.

    Besides the aggregation outcomes: `packets in: KIND` (pipeline runs, or arrivals at a switch
    known only from its captures) and `losses injected: KIND` per packet kind, and the loss
    recovery: `queries` (with `queries: OUTCOME` per answer), `NACKs sent` (to workers, or by a
    parent to a child switch: `NACKs from the parent`) and retransmissions.
    """
    total: Counter = Counter()
    total["slot rounds"] = len(lifecycles)
    for life in lifecycles:
        for step in life.steps:
            if step.what == LOSS:
                total[f"losses injected: {step.kind}"] += 1
            elif step.what != LEFT:
                total[f"packets in: {step.kind}"] += 1
            if step.what in (CONTRIBUTION, COMPLETED) or (
                    step.what == ARRIVED and step.kind in ("CONTRIB", "MAX_CONTRIB")):
                total["contributions accepted" if step.what != ARRIVED
                      else "contributions seen (capture only)"] += 1
                if step.retx:
                    total["retransmissions"] += 1
            if step.what == ARRIVED and step.kind == "QUERY":
                total["queries seen (capture only)"] += 1
            if step.what == DUPLICATE:
                total["duplicates"] += 1
                if step.retx:
                    total["retransmissions"] += 1
                if step.outputs and "unicast" in step.detail:
                    total["results unicast"] += 1
            if step.what == QUERY:
                total["queries"] += 1
                outcome = _QUERY_OUTCOME.get(step.detail, step.detail)
                total[f"queries: {outcome}"] += 1
                if step.outputs and outcome == "NACK sent":
                    total["NACKs sent"] += 1
                if step.outputs and outcome == "result unicast":
                    total["results unicast"] += 1
            if step.what == NACK:
                total["NACKs from the parent"] += 1
                if step.outputs:
                    total["partial sums sent up again"] += 1
            if step.what == COMPLETED:
                total["completions"] += 1
                if "multicast" in step.detail:
                    total["results multicast"] += 1
                    total["result copies multicast"] += len(step.outputs)
            if step.what == PARENT_RESULT:
                total["parent results"] += 1
            if step.what == REJECTED:
                total[f"rejected: {step.detail}"] += 1
            if step.what == LOSS:
                total[f"losses injected ({step.direction})"] += 1
            if step.what == FORWARDED:
                total["forwarded"] += 1
    return total
