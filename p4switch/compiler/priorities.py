"""Priorities of a table's initial entries (P4_16 spec §14.2.1.4, "Entry priorities").

The spec's rule, which p4c also follows:

* `largest_priority_wins` (default `true`) says which way priorities compare, `priority_delta`
  (default 1) the gap between entries that get a priority from the compiler;
* no entry has a priority: numbered by position so the first entry wins (with largest-wins the
  last entry gets 1, each earlier one `delta` more; otherwise the first gets 1);
* some have one: the first entry must have one, and an entry without one gets the previous
  entry's priority minus `delta` (largest-wins) or plus `delta`;
* a negative priority is an error.

Where the spec is silent we follow p4c: giving priorities in a table whose keys are all `exact`
or `lpm` is an error (they need none). p4c also refuses explicit priorities in `const entries`;
the spec allows them and BMv2 can represent them, so inaemu accepts them.

The `@priority(n)` entry annotation is not P4_16: p4c's BMv2 back end writes `n` as the entry's
BMv2 priority (the smaller number wins) and gives an entry without it its 1-based position,
and p4c's own STF tests rely on that, so inaemu does the same. Mixing it with `priority =` in
one table is an error.

The result is `table.entry_ranks`: BMv2 JSON entry priorities (the smaller number wins).
"""

from __future__ import annotations

from typing import Callable

from . import ast as A

NO_PRIORITY_KINDS = ("exact", "lpm")


def priority_annotation(entry: A.Entry):
    """The expression of the entry's `@priority(e)` annotation, or None."""
    ann = A.find_annotation(entry.annotations, "priority")
    if ann is not None and ann.args and isinstance(ann.args[0], A.Expr):
        return ann.args[0]
    return None


def _bmv2_annotated_ranks(table, entries, annotated, const_int, fail) -> list[int]:
    ranks = []
    for index, (e, expr) in enumerate(zip(entries, annotated)):
        if e.priority is not None:
            raise fail(e.priority, f"table '{table.name}' mixes '@priority' annotations with "
                                   f"'priority =': use 'priority =' (P4_16) only")
        rank = index + 1 if expr is None else const_int(expr, "an entry priority")
        if rank < 0:
            raise fail(expr, f"entry priority must not be negative (got {rank})")
        ranks.append(rank)
    return ranks


def assign_priorities(table: A.TableDecl, props: dict, const_int: Callable, const_bool: Callable,
                      fail: Callable, warn: Callable = lambda node, message: None) -> None:
    """Set `table.entry_ranks` (BMv2) and, for P4_16 priorities, `entry.priority_value` on every
    initial entry. `const_int(expr, what)`/`const_bool(expr, what)` check and fold a value;
    `fail(node, message)` makes the error to raise, `warn(node, message)` records a warning."""
    largest_wins, delta = True, 1
    if "largest_priority_wins" in props:
        largest_wins = const_bool(props["largest_priority_wins"].value,
                                  "'largest_priority_wins'")
    if "priority_delta" in props:
        prop = props["priority_delta"]
        delta = const_int(prop.value, "'priority_delta'")
        if delta <= 0:
            raise fail(prop.value, f"'priority_delta' must be a positive integer, not {delta}")
    table.entry_ranks = []
    entries_prop = props.get("entries")
    if entries_prop is None:
        return
    entries = entries_prop.value
    annotated = [priority_annotation(e) for e in entries]
    if any(a is not None for a in annotated):
        table.entry_ranks = _bmv2_annotated_ranks(table, entries, annotated, const_int, fail)
        return
    if _p4_priorities(table, props, entries, largest_wins, delta, const_int, fail):
        table.entry_ranks = _ranks(entries, largest_wins)
        _warn_about(table, entries_prop, largest_wins, warn)
    else:  # position order whatever the convention, numbered 1, 2, ... as p4c does
        table.entry_ranks = list(range(1, len(entries) + 1))


def _p4_priorities(table, props, entries, largest_wins, delta, const_int, fail) -> bool:
    """Set `priority_value` on every entry; False when none was written."""
    written = [e.priority for e in entries]
    for e, expr in zip(entries, written):
        if expr is None:
            continue
        value = const_int(expr, "an entry priority")
        if value < 0:
            raise fail(expr, f"entry priority must not be negative (got {value})")
        e.priority_value = value
    if not any(w is not None for w in written):
        order = reversed(entries) if largest_wins else entries
        for k, e in enumerate(order):
            e.priority_value = 1 + k * delta
        return False
    keys = props.get("key")
    kinds = [k.match_kind for k in keys.value] if keys else []
    if all(kind in NO_PRIORITY_KINDS for kind in kinds):
        first = next(w for w in written if w is not None)
        raise fail(first, f"table '{table.name}' has only exact/lpm keys, so its entries take "
                          f"no priority (the longest prefix or the unique key decides)")
    if written[0] is None:
        raise fail(entries[0], f"the first entry of table '{table.name}' needs an explicit "
                               f"priority, because other entries have one (P4_16 §14.2.1.4)")
    previous = entries[0].priority_value
    for e, w in zip(entries[1:], written[1:]):
        if w is None:
            e.priority_value = previous - delta if largest_wins else previous + delta
            if e.priority_value < 0:
                raise fail(e, f"this entry's priority would be {e.priority_value} (previous "
                              f"{previous} - priority_delta {delta} is below 0); give it one")
        previous = e.priority_value
    return True


def _warn_about(table, entries_prop, largest_wins: bool, warn: Callable) -> None:
    """The spec's warnings (both can be silenced by `@noWarn("...")` on the entries)."""
    silenced = {a.args[0].value for a in entries_prop.annotations
                if a.name == "noWarn" and a.args and isinstance(a.args[0], A.StrLit)}
    entries = entries_prop.value
    if "duplicate_priorities" not in silenced:
        first_with: dict[int, A.Entry] = {}
        for e in entries:
            earlier = first_with.setdefault(e.priority_value, e)
            if earlier is not e:
                warn(e, f"this entry of table '{table.name}' has the same priority "
                        f"{e.priority_value} as the one at line {earlier.loc.line}; which wins "
                        f"is unspecified (@noWarn(\"duplicate_priorities\") silences this)")
    if "entries_out_of_priority_order" not in silenced:
        for before, after in zip(entries, entries[1:]):
            a, b = before.priority_value, after.priority_value
            if (a < b) if largest_wins else (a > b):
                warn(after, f"this entry of table '{table.name}' (priority {b}) wins over the "
                            f"one before it (priority {a}) (@noWarn(\"entries_out_of_priority_"
                            f"order\") silences this)")


def _ranks(entries: list, largest_wins: bool) -> list[int]:
    """BMv2 JSON entry priorities (the smaller number wins, 1 is the best)."""
    values = [e.priority_value for e in entries]
    if not values:
        return []
    if largest_wins:
        top = max(values)
        return [top - v + 1 for v in values]
    low = min(values)
    return [v - low + 1 for v in values]
