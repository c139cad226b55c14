"""Match tables as lookup structures, and their entries.

A table's key is packed into one int (key fields concatenated, first field most significant), so
the generated code builds one int and does one lookup:
- exact tables: a dict from packed key to the entry's result;
- LPM tables: one dict per prefix length, tried longest first on `key & level_mask`;
- ternary / range / optional tables: entries in priority order (kept sorted by binary insertion,
  not re-sorted per insert), scanned, with a bounded cache of recent keys (cleared on any change).
A result is the tuple `(action_index, params, entry)` the generated code unpacks; the default
entry's result has `entry = None`. Priorities follow P4Runtime: a higher number wins.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field

from ..errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied, ResourceExhausted
from ..keys import (KEY_CLASS_FOR_MATCH_TYPE, ExactKey, LpmKey, OptionalKey, RangeKey, TernaryKey,
                    MatchKey)
from .externs import Meter

CACHE_LIMIT = 65536
_MISSING = object()

# BMv2 ranks entries by a number where the smaller wins; P4Runtime (and this API) by one where the
# larger wins. BMv2's own P4Runtime server converts around a fixed pivot, the largest int32:
# P4Runtime priority = pivot - BMv2 priority, and back. Using the same fixed mapping for the JSON's
# initial entries keeps their order, reports the numbers simple_switch_grpc reports, and ranks a
# control-plane entry against them exactly as BMv2 would (a mapping that depended on the other
# entries, like "max + 1 - p", would not).
BMV2_PRIORITY_PIVOT = 2**31 - 1


def priority_from_bmv2(bmv2_priority: int) -> int:
    """The API (P4Runtime, higher wins) priority of a BMv2 (lower wins) priority in [0, pivot)."""
    return BMV2_PRIORITY_PIVOT - bmv2_priority


def priority_to_bmv2(priority: int) -> int:
    """The inverse: what BMv2 would store for an API priority in (0, pivot]."""
    return BMV2_PRIORITY_PIVOT - priority


@dataclass
class KeyField:
    name: str
    match_type: str
    width: int
    shift: int = 0  # position of the field in the packed key

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.shift


@dataclass
class ActionSpec:
    name: str
    action_id: int
    param_widths: list[int]


@dataclass(eq=False)
class Entry:
    handle: int
    keys: tuple[MatchKey, ...]
    priority: int | None
    action_index: int | None
    params: tuple[int, ...]
    value: int = 0                 # packed key bits that must match (already masked)
    mask: int = 0                  # packed mask of the ternary/exact/lpm parts
    ranges: tuple = ()             # ((shift, field_mask, low, high), ...)
    prefix_len: int = 0            # total LPM prefix (for lpm tables)
    member: int | None = None
    group: int | None = None
    counter: list[int] = field(default_factory=lambda: [0, 0])
    meter: Meter | None = None
    result: tuple | None = None
    # ageing (tables with support_timeout): the idle time that makes the entry expire
    # (0: never), and when it was last hit (or added, or given its TTL), on the switch's clock
    ttl_ns: int = 0
    last_hit: float = 0.0

    @property
    def identity(self) -> tuple:
        return (self.value, self.mask, self.ranges, self.priority)


def _scan_order(entry: Entry) -> tuple[int, int]:
    """Where a ternary/range/optional entry sits in the scan: higher priority first, then the
    order of insertion (entries of equal priority: the earlier one wins)."""
    return (-(entry.priority or 0), entry.handle)


class Table:
    def __init__(self, name: str, key_fields: list[KeyField], actions: list[ActionSpec],
                 max_size: int, kind: str):
        self.name = name
        self.key_fields = key_fields
        shift = 0
        for kf in reversed(key_fields):
            kf.shift = shift
            shift += kf.width
        self.key_width = shift
        self.actions = actions
        self.action_index_by_id = {a.action_id: i for i, a in enumerate(actions)}
        self.max_size = max_size
        self.kind = kind  # "keyless" | "exact" | "lpm" | "generic"
        self.needs_priority = any(k.match_type in ("ternary", "range", "optional")
                                  for k in key_fields)
        self.const = False                  # entries come from the program
        self.default_const = False          # default action may not change
        self.default_entry_const = False    # default params may not change either
        self.initial_default: tuple[int, tuple[int, ...]] | None = None
        self.default = [(None, (), None)]   # one-item holder the generated code reads
        self.base_default_next: str | None = None
        self.with_counters = False
        self.support_timeout = False        # entries age (their hits are stamped)
        self.direct_meters = None           # MeterArray or None
        self.profile = None                 # ActionProfile for indirect tables
        self.entries: dict[int, Entry] = {}
        self.exact: dict[int, tuple] = {}
        self.levels: list[tuple[int, int, dict]] = []  # (prefix_len, mask, dict), longest first
        self.ordered: list[Entry] = []
        self.cache: dict[int, tuple | None] = {}
        self._by_identity: dict[tuple, int] = {}
        self._next_handle = 0

    # ------------------------------------------------------------------------ data-plane lookup
    def lookup_lpm(self, key: int):
        for _, mask, level in self.levels:
            result = level.get(key & mask)
            if result is not None:
                return result
        return None

    def lookup_generic(self, key: int):
        cache = self.cache
        result = cache.get(key, _MISSING)
        if result is not _MISSING:
            return result
        result = None
        for entry in self.ordered:
            if key & entry.mask == entry.value:
                for shift, fmask, low, high in entry.ranges:
                    if not low <= (key >> shift) & fmask <= high:
                        break
                else:
                    result = entry.result
                    break
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = result
        return result

    def describe_key(self, key: int) -> str:
        """The packed lookup key as `field=value` pairs (for traces)."""
        return ", ".join(f"{kf.name}={(key >> kf.shift) & ((1 << kf.width) - 1):#x}"
                         for kf in self.key_fields)

    def action_name(self, action_index: int | None) -> str | None:
        return None if action_index is None else self.actions[action_index].name

    # --------------------------------------------------------------------------- control plane
    def check_action(self, action_index: int, params) -> tuple[int, ...]:
        spec = self.actions[action_index]
        try:
            params = tuple(params)
        except TypeError:
            raise InvalidArgument(f"action parameters must be a sequence of ints, got "
                                  f"{params!r}") from None
        if len(params) != len(spec.param_widths):
            raise InvalidArgument(f"action '{spec.name}' takes {len(spec.param_widths)} "
                                  f"parameters, got {len(params)}")
        for value, width in zip(params, spec.param_widths):
            if not isinstance(value, int) or isinstance(value, bool) or not \
                    0 <= value < (1 << width):
                raise InvalidArgument(f"action '{spec.name}': parameter {value!r} does not fit "
                                      f"in {width} bits")
        return params

    def make_entry(self, keys, priority: int | None) -> Entry:
        """Validate a key and build an (unstored) entry for it; raises InvalidArgument."""
        try:
            keys = tuple(keys)
        except TypeError:
            raise InvalidArgument(f"keys must be a sequence of key objects, got {keys!r}") \
                from None
        if len(keys) != len(self.key_fields):
            raise InvalidArgument(f"table '{self.name}' has {len(self.key_fields)} key fields, "
                                  f"got {len(keys)}")
        if self.needs_priority:
            if not isinstance(priority, int) or isinstance(priority, bool) or priority < 1:
                raise InvalidArgument(f"table '{self.name}' needs a priority >= 1, got "
                                      f"{priority!r}")
        else:
            priority = None
        entry = Entry(-1, keys, priority, None, ())
        value = mask = prefix_total = 0
        ranges = []
        for kf, key in zip(self.key_fields, keys):
            want = KEY_CLASS_FOR_MATCH_TYPE[kf.match_type]
            if kf.match_type == "optional" and isinstance(key, ExactKey):
                key = OptionalKey(key.value)
            elif kf.match_type == "ternary" and isinstance(key, OptionalKey):
                # BMv2 JSON has no optional match type: p4c (and inaemu) write a P4 optional key
                # as ternary, so the control plane's optional value is a full-mask ternary one.
                key = TernaryKey(0, 0) if key.value is None else \
                    TernaryKey(key.value, (1 << kf.width) - 1)
            if not isinstance(key, want):
                raise InvalidArgument(f"key field '{kf.name}' is {kf.match_type}: expected "
                                      f"{want.__name__}, got {type(key).__name__}")
            full = (1 << kf.width) - 1
            if isinstance(key, RangeKey):
                self._fits(kf, key.low)
                self._fits(kf, key.high)
                if key.low > key.high:
                    raise InvalidArgument(f"key field '{kf.name}': range low > high")
                if (key.low, key.high) != (0, full):
                    ranges.append((kf.shift, full, key.low, key.high))
                continue
            if isinstance(key, ExactKey):
                fmask, fvalue = full, key.value
            elif isinstance(key, LpmKey):
                if key.prefix_len > kf.width:
                    raise InvalidArgument(f"key field '{kf.name}': prefix length "
                                          f"{key.prefix_len} > width {kf.width}")
                fmask = full ^ ((1 << (kf.width - key.prefix_len)) - 1)
                fvalue = key.value
                prefix_total += key.prefix_len
            elif isinstance(key, TernaryKey):
                self._fits(kf, key.mask)
                fmask, fvalue = key.mask, key.value
            else:  # OptionalKey
                fmask, fvalue = (0, 0) if key.value is None else (full, key.value)
            self._fits(kf, fvalue)
            value |= (fvalue & fmask) << kf.shift
            mask |= fmask << kf.shift
        if self.kind == "lpm":
            exact_bits = sum(k.width for k in self.key_fields if k.match_type != "lpm")
            prefix_total += exact_bits
        entry.value, entry.mask, entry.ranges = value, mask, tuple(ranges)
        entry.prefix_len = prefix_total
        return entry

    def _fits(self, kf: KeyField, value: int) -> None:
        if value >> kf.width:
            raise InvalidArgument(f"key field '{kf.name}': {value:#x} does not fit in "
                                  f"{kf.width} bits")

    def find(self, keys, priority: int | None) -> int | None:
        entry = self.make_entry(keys, priority)
        return self._by_identity.get(entry.identity)

    def insert(self, entry: Entry, from_program: bool = False) -> int:
        if self.const and not from_program:
            raise PermissionDenied(f"table '{self.name}' has const entries")
        if entry.identity in self._by_identity:
            raise AlreadyExists(f"table '{self.name}': an entry with this key already exists "
                                f"(handle {self._by_identity[entry.identity]})")
        if len(self.entries) >= self.max_size and not from_program:
            raise ResourceExhausted(f"table '{self.name}' is full ({self.max_size} entries)")
        if self.direct_meters is not None:
            entry.meter = Meter()
        entry.handle = self._next_handle
        self._next_handle += 1
        self.entries[entry.handle] = entry
        self._by_identity[entry.identity] = entry.handle
        self._store(entry)
        return entry.handle

    def set_result(self, entry: Entry) -> None:
        if self.profile is not None:
            entry.result = entry  # indirect: resolved per packet through the profile
        else:
            entry.result = (entry.action_index, entry.params, entry)

    def _store(self, entry: Entry) -> None:
        self.set_result(entry)
        self.cache.clear()
        if self.kind == "exact":
            self.exact[entry.value] = entry.result
        elif self.kind == "lpm":
            for plen, mask, level in self.levels:
                if plen == entry.prefix_len:
                    level[entry.value] = entry.result
                    return
            self.levels.append((entry.prefix_len, entry.mask, {entry.value: entry.result}))
            self.levels.sort(key=lambda lv: -lv[0])
        else:
            # handles only grow, so the new entry goes after every entry of its priority
            insort(self.ordered, entry, key=_scan_order)

    def get(self, handle: int) -> Entry:
        entry = self.entries.get(handle) if isinstance(handle, int) else None
        if entry is None:
            raise NotFound(f"table '{self.name}' has no entry with handle {handle!r}")
        return entry

    def modify(self, handle: int, action_index: int, params) -> None:
        if self.const:
            raise PermissionDenied(f"table '{self.name}' has const entries")
        entry = self.get(handle)
        entry.params = self.check_action(action_index, params)
        entry.action_index = action_index
        self._store_result(entry)

    def retarget(self, handle: int, member: int | None = None, group: int | None = None) -> None:
        """An indirect entry's member or group replaced (exactly one of them given)."""
        if self.const:
            raise PermissionDenied(f"table '{self.name}' has const entries")
        entry = self.get(handle)
        entry.member, entry.group = member, group
        self._store_result(entry)

    def _store_result(self, entry: Entry) -> None:
        self.set_result(entry)
        self.cache.clear()
        if self.kind == "exact":
            self.exact[entry.value] = entry.result
        elif self.kind == "lpm":
            for plen, _, level in self.levels:
                if plen == entry.prefix_len:
                    level[entry.value] = entry.result

    def delete(self, handle: int) -> None:
        if self.const:
            raise PermissionDenied(f"table '{self.name}' has const entries")
        entry = self.get(handle)
        del self.entries[handle]
        del self._by_identity[entry.identity]
        self.cache.clear()
        if self.kind == "exact":
            del self.exact[entry.value]
        elif self.kind == "lpm":
            for i, (plen, _, level) in enumerate(self.levels):
                if plen == entry.prefix_len:
                    del level[entry.value]
                    if not level:
                        del self.levels[i]
                    break
        else:
            ordered = self.ordered
            del ordered[bisect_left(ordered, _scan_order(entry), key=_scan_order)]

    def clear(self) -> None:
        if self.const:
            raise PermissionDenied(f"table '{self.name}' has const entries")
        self.entries.clear()
        self._by_identity.clear()
        self.exact.clear()
        self.levels.clear()
        self.ordered.clear()
        self.cache.clear()

    def set_default(self, action_index: int, params) -> None:
        params = self.check_action(action_index, params)
        if self.default_const and self.initial_default is not None:
            initial_index, initial_params = self.initial_default
            if action_index != initial_index or (self.default_entry_const and
                                                  params != initial_params):
                raise PermissionDenied(f"table '{self.name}': the default action is const")
        self.default[0] = (action_index, params, None)
        self.cache.clear()

    def reset_default(self) -> None:
        if self.initial_default is None:
            self.default[0] = (None, (), None)
        else:
            self.default[0] = (self.initial_default[0], self.initial_default[1], None)
