"""BMv2's handles for table entries, members, groups and multicast nodes, over the runtime's ids.

The runtime numbers what it stores by ids that only grow (its tables keep equal-priority entries
in insertion order by them). BMv2 hands out the lowest free index instead, and an entry's handle
also carries a version in its top byte, bumped each time the index is freed, so that a handle
kept past its entry's deletion is told apart from the entry now at its index (simple_switch:
add, add, delete the second, add gives 16777217, that is version 1 of index 1). The CLI prints
these numbers and controllers keep them, so the Thrift front end hands out BMv2's and keeps the
mapping here.
"""

from __future__ import annotations

import heapq

VERSION_SHIFT = 24
INDEX_MASK = (1 << VERSION_SHIFT) - 1


class HandleBook:
    """One kind of object's BMv2 handles and the runtime ids they stand for."""

    def __init__(self, versioned: bool):
        self.versioned = versioned
        self._runtime_of: dict[int, int] = {}      # index -> runtime id
        self._index_of: dict[int, int] = {}        # runtime id -> index
        self._versions: dict[int, int] = {}        # index -> version (versioned books)
        self._free: list[int] = []                 # freed indices below _next, a heap
        self._next = 0

    def __len__(self) -> int:
        return len(self._runtime_of)

    def reset(self) -> None:
        self.__init__(self.versioned)

    def _handle(self, index: int) -> int:
        return (self._versions.get(index, 0) << VERSION_SHIFT) | index if self.versioned \
            else index

    def add(self, runtime_id: int) -> int:
        """Give `runtime_id` the lowest free index; its handle."""
        index = heapq.heappop(self._free) if self._free else self._next
        if index == self._next:
            self._next += 1
        self._runtime_of[index] = runtime_id
        self._index_of[runtime_id] = index
        return self._handle(index)

    def status(self, handle: int) -> str:
        """"live"; "invalid" (no entry at its index); "expired" (a later entry at its index)."""
        if not isinstance(handle, int) or handle < 0:
            return "invalid"
        index = handle & INDEX_MASK if self.versioned else handle
        if index not in self._runtime_of:
            return "invalid"
        if self.versioned and handle >> VERSION_SHIFT != self._versions.get(index, 0):
            return "expired"
        return "live"

    def runtime(self, handle: int) -> int | None:
        """The runtime id of a live handle, else None."""
        if self.status(handle) != "live":
            return None
        return self._runtime_of[handle & INDEX_MASK if self.versioned else handle]

    def handle_of(self, runtime_id: int) -> int | None:
        index = self._index_of.get(runtime_id)
        return None if index is None else self._handle(index)

    def remove(self, handle: int) -> None:
        """Free a live handle's index (bumping its version)."""
        index = handle & INDEX_MASK if self.versioned else handle
        runtime_id = self._runtime_of.pop(index)
        del self._index_of[runtime_id]
        if self.versioned:
            self._versions[index] = (self._versions.get(index, 0) + 1) & 0xFF
        heapq.heappush(self._free, index)

    def live(self) -> list[tuple[int, int]]:
        """(handle, runtime id) of every live handle, by index (BMv2's listing order)."""
        return [(self._handle(i), self._runtime_of[i]) for i in sorted(self._runtime_of)]

    def reconcile(self, runtime_ids) -> None:
        """Forget ids the runtime no longer has and give handles to ones it gained by another
        path (the program's own entries, a P4Runtime client), in the runtime's order."""
        runtime_ids = list(runtime_ids)
        present = set(runtime_ids)
        for runtime_id in [r for r in self._index_of if r not in present]:
            self.remove(self._handle(self._index_of[runtime_id]))
        for runtime_id in runtime_ids:
            if runtime_id not in self._index_of:
                self.add(runtime_id)
