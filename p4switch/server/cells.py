"""Which cells of an indexed extern array (counter, meter, register) a P4Runtime entity names.

One rule for all of them, as BMv2 applies it: an entity without an index names every cell (a
wildcard read, or a write to every cell); an index outside the array is INVALID_ARGUMENT.
"""

from __future__ import annotations

from .errors import INVALID_ARGUMENT, RequestError


def indexed_cells(resource, entry, where: str) -> list[int]:
    """The cells `entry` (a CounterEntry, MeterEntry or RegisterEntry) names in `resource` (its
    P4Info object, which has a `size`)."""
    if not entry.HasField("index"):
        return list(range(resource.size))
    cell = entry.index.index
    if not 0 <= cell < resource.size:
        raise RequestError(INVALID_ARGUMENT, f"{where}: index {cell} not in 0..{resource.size - 1}")
    return [cell]
