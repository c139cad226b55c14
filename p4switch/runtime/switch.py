"""`Switch`: the runtime's public API (see docs/runtime-api.md), a facade over the parts.

Names are the BMv2 JSON names or any unique dot-separated suffix of them. Every control-plane
call validates fully before changing anything, so a failed call changes nothing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from .engine import Engine
from .errors import ConfigError, FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from .keys import TableEntry, TableInfo
from .phv.vheaders import convert_runs
from .program import Program
from .state.pre import MAX_PORT, Replication
from .state.queues import EgressQueues
from .state.tables import Table


def resolve_name(kind: str, name: str, names) -> str:
    """The one full name equal to `name` or ending in `.name`; NotFound otherwise."""
    if not isinstance(name, str):
        raise InvalidArgument(f"a {kind} name must be a string, got {name!r}")
    names = list(names)
    if name in names:
        return name
    matches = [n for n in names if n.endswith("." + name)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        shown = ", ".join(sorted(names)[:20]) or "none"
        raise NotFound(f"unknown {kind} '{name}' (known: {shown})")
    raise NotFound(f"ambiguous {kind} '{name}': {', '.join(sorted(matches))}")


class Switch:
    # (slots: the native core reads them at their offsets, inaemu/sim/native/attrs.c; a dict
    # too, for what callers attach or patch on a switch)
    __slots__ = ('lock', '_trace', '_clock', '_program', '_engine', 'pre', 'queues', '__dict__')

    def __init__(self, config: str | bytes | dict | None = None, trace=None,
                 priority_queues: int = 1, lock=None):
        # `lock`: a reentrant lock with RLock's methods to use instead of a new RLock (the
        # simulator's native core gives one its ports take in C)
        self.lock = threading.RLock() if lock is None else lock
        self._trace = trace
        self._clock: Callable[[], float] = time.monotonic
        self._program: Program | None = None
        self._engine: Engine | None = None
        self.pre = Replication()
        self.queues = EgressQueues(priority_queues)   # kept across program changes, as BMv2
        self._learn_handler = None
        if config is not None:
            self.load_config(config)

    @classmethod
    def from_json_file(cls, path, trace=None, priority_queues: int = 1) -> Switch:
        try:
            text = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
        return cls(text, trace=trace, priority_queues=priority_queues)

    # ------------------------------------------------------------------------ program, trace
    def load_config(self, config: str | bytes | dict) -> None:
        """Replace the program; all state (tables, externs, PRE) is reset."""
        program = Program(config)
        with self.lock:
            program.clock = self._clock
            program.clock_origin = self._clock()
            self._program = program
            self.pre = Replication()
            self.queues.discard()          # queued packets belong to the old program
            self._rebuild_engine()

    @property
    def has_program(self) -> bool:
        return self._program is not None

    @property
    def program(self) -> Program:
        if self._program is None:
            raise FailedPrecondition("no P4 program loaded")
        return self._program

    @property
    def trace(self):
        return self._trace

    @trace.setter
    def trace(self, trace) -> None:
        with self.lock:
            self._trace = trace
            self._rebuild_engine()

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.queues.discard()       # departure times were on the old clock
        if self._program is not None:
            self._program.clock = clock
            self._program.clock_origin = clock()

    def _rebuild_engine(self) -> None:
        program = self._program
        if program is None:
            self._engine = None
            return
        before = self._engine.code if self._engine is not None else None
        if self._trace is None:
            code = program.untraced
        else:
            code = program.traced()
            code.namespace["T"] = self._trace
        if before is not None and before is not code and program.vector_runs and \
                self.queues.waiting:
            # packets waiting in egress queues carry the other variant's PHV: vector runs
            # are arrays in the untraced one, k ints in the traced one (vheaders.py)
            seen: set[int] = set()
            for item in self.queues.waiting_items():
                if id(item[0]) not in seen:
                    seen.add(id(item[0]))
                    convert_runs(item[0], program.vector_runs,
                                 to_arrays=code is program.untraced)
        self._engine = Engine(program, self.pre, code, self._trace, self.queues)
        self._engine.learn_handler = self._learn_handler

    @property
    def learn_handler(self):
        """Where the samples of `digest` calls go (learning.LearnHandler), or None (dropped):
        called after a packet's ingress with the switch lock held, so it must not block."""
        return self._learn_handler

    @learn_handler.setter
    def learn_handler(self, handler) -> None:
        with self.lock:
            self._learn_handler = handler
            if self._engine is not None:
                self._engine.learn_handler = handler

    # ------------------------------------------------------------------------------ packets
    def receive(self, port: int, packet: bytes) -> list[tuple[int, bytes]]:
        if type(packet) is not bytes or type(port) is not int or not 0 <= port <= MAX_PORT:
            packet = _checked_packet(port, packet)  # the common case skips the call
        with self.lock:
            engine = self._engine
            if engine is None:
                return []
            if engine.trace is None and not engine.queues.active:
                engine.packet_count += 1        # `process` on its common path, one call less
                return engine.entry(port, packet)
            return engine.process(port, packet)

    def direct_entry(self):
        """`(engine, fast, queues)` for a caller that runs the common path itself (the native
        simulator's switch ports, inaemu/sim/native/switchports.c), or None when every packet
        must go through `receive` (no program, a trace, `receive` overridden).

        The contract, what `receive_batch` does for each packet: hold `self.lock`; the triple
        holds while `self._engine is engine`; only while `queues.active` is false, call
        `fast(port, packet)` (port an int in 0..MAX_PORT, packet bytes) and add 1 to
        `engine.packet_count`; `queue_next_due()` is None as long as `queues.active` stays
        false (an empty heap), so it need not be asked then."""
        engine = self._engine
        if engine is None or engine.trace is not None or type(self).receive is not Switch.receive:
            return None
        return engine, engine.entry, engine.queues

    def receive_batch(self, items) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        with self.lock:
            engine = self._engine
            if engine is not None and engine.trace is None and not engine.queues.active:
                # the common case: every packet straight into the generated fast path
                fast, done = engine.entry, 0
                try:
                    for port, packet in items:
                        if type(packet) is not bytes or type(port) is not int or \
                                not 0 <= port <= MAX_PORT:
                            packet = _checked_packet(port, packet)
                        done += 1
                        out += fast(port, packet)
                finally:
                    engine.packet_count += done
                return out
            for port, packet in items:
                if type(packet) is not bytes or type(port) is not int or \
                        not 0 <= port <= MAX_PORT:
                    packet = _checked_packet(port, packet)
                if engine is not None:
                    out += engine.process(port, packet)
        return out

    # ------------------------------------------------------------------------ egress queues
    @property
    def priority_queues(self) -> int:
        return self.queues.priorities

    @priority_queues.setter
    def priority_queues(self, count: int | None) -> None:
        """simple_switch's --priority-queues N (None: the default, 1). Set it before traffic:
        the queues start over (empty, default depth and rate)."""
        with self.lock:
            room = self.queues.room              # the ports' state, not the queues'
            self.queues = EgressQueues(1 if count is None else count)
            self.queues.set_room(room)
            self._rebuild_engine()

    def set_queue_depth(self, nb_pkts: int, port: int | None = None,
                        priority: int | None = None) -> None:
        """BMv2's set_queue_depth: every queue, one port's queues, or one priority of one."""
        with self.lock:
            self.queues.set_depth(nb_pkts, port, priority)

    def set_queue_rate(self, rate_pps: int, port: int | None = None,
                       priority: int | None = None) -> None:
        """BMv2's set_queue_rate, packets per second; 0 is unlimited."""
        with self.lock:
            self.queues.set_rate(rate_pps, port, priority)

    def get_queue_depth(self, port: int, priority: int = 0) -> int:
        return self.queues.depth(port, priority)

    def get_queue_rate(self, port: int, priority: int = 0) -> int:
        return self.queues.rate(port, priority)

    def queue_occupancy(self, port: int, priority: int | None = None) -> int:
        """Packets waiting now in one port's queues (all priorities) or in one of them."""
        with self.lock:
            return self.queues.occupancy(port, priority)

    def queue_drops(self) -> dict[int, int]:
        """Packets dropped at a full egress queue, per port."""
        with self.lock:
            return dict(self.queues.dropped)

    def set_output_room(self, room: int | None) -> None:
        """How many more packets egress may hand to the ports now (back-pressure: the port
        driver's output stage is that much short of full); None: no bound (nothing blocked)."""
        with self.lock:
            self.queues.set_room(room)

    def queue_next_due(self) -> float | None:
        """Clock time (see `clock`) of the next departure from an egress queue, or None."""
        return self.queues.next_due()

    def release_queued(self) -> list[tuple[int, bytes]]:
        """Run egress for the queued packets due by the clock; what leaves the switch."""
        with self.lock:
            if self._engine is None or self.queues.next_due() is None:
                return []
            return self._engine.release(self._clock())

    def discard_queued(self) -> int:
        """Drop every packet waiting in an egress queue (shutdown); returns how many."""
        with self.lock:
            return self.queues.discard()

    # ------------------------------------------------------------------------------- tables
    def tables(self) -> list[str]:
        return list(self.program.tables)

    def _table(self, name: str) -> Table:
        tables = self.program.tables
        return tables[resolve_name("table", name, tables)]

    def _action_index(self, table: Table, action: str) -> int:
        names = [a.name for a in table.actions]
        try:
            full = resolve_name("action", action, names)
        except NotFound:
            all_names = [a.name for a in self.program.actions.values()]
            if any(n == action or n.endswith("." + action) for n in all_names):
                raise InvalidArgument(f"action '{action}' is not allowed in table "
                                      f"'{table.name}' (allowed: {', '.join(names)})") from None
            raise
        return names.index(full)

    def table_info(self, name: str) -> TableInfo:
        table = self._table(name)
        with self.lock:
            default = self.table_get_default(table.name)
            return TableInfo(
                name=table.name,
                keys=tuple((k.name, k.match_type, k.width) for k in table.key_fields),
                actions=tuple(a.name for a in table.actions),
                max_size=table.max_size, const=table.const,
                action_profile=table.profile.name if table.profile else None,
                with_counters=table.with_counters,
                direct_meters=table.direct_meters.name if table.direct_meters else None,
                default=default)

    def _new_entry(self, table: Table, keys, priority):
        if table.const:
            raise PermissionDenied(f"table '{table.name}' has const entries")
        entry = table.make_entry(keys, priority)
        if table.support_timeout:
            entry.last_hit = self._clock()
        return entry

    # -- entry ageing (tables with support_timeout) --------------------------------------------
    def table_supports_timeout(self, table: str) -> bool:
        return self._table(table).support_timeout

    def now(self) -> float:
        """The switch's clock, in seconds: what ageing entries' hits are stamped with."""
        return self._clock()

    def table_set_ttl(self, table: str, handle: int, ttl_ns: int) -> None:
        """Give an entry its idle time to expiry (0: never) and restart its idle clock, as
        simple_switch does when a TTL is set."""
        if isinstance(ttl_ns, bool) or not isinstance(ttl_ns, int) or ttl_ns < 0:
            raise InvalidArgument(f"a TTL must be an int >= 0 (ns), got {ttl_ns!r}")
        with self.lock:
            t = self._table(table)
            if not t.support_timeout:
                raise InvalidArgument(f"table '{t.name}' does not support idle timeouts")
            entry = t.get(handle)
            entry.ttl_ns = ttl_ns
            entry.last_hit = self._clock()

    def table_entry_age(self, table: str, handle: int) -> tuple[int, int]:
        """(TTL ns, ns since the last hit) of one entry of an ageing table."""
        with self.lock:
            t = self._table(table)
            if not t.support_timeout:
                raise InvalidArgument(f"table '{t.name}' does not support idle timeouts")
            entry = t.get(handle)
            return entry.ttl_ns, max(0, int((self._clock() - entry.last_hit) * 1e9))

    def table_idle(self, table: str) -> list[tuple[int, int, int]]:
        """(handle, TTL ns, ns since the last hit) of every entry of an ageing table."""
        with self.lock:
            t = self._table(table)
            if not t.support_timeout:
                return []
            now = self._clock()
            return [(e.handle, e.ttl_ns, max(0, int((now - e.last_hit) * 1e9)))
                    for e in t.entries.values()]

    def table_add(self, table: str, keys, action: str, params=(), priority=None) -> int:
        with self.lock:
            t = self._table(table)
            if t.profile is not None:
                raise InvalidArgument(f"table '{t.name}' is indirect: use table_add_member or "
                                      "table_add_group")
            entry = self._new_entry(t, keys, priority)
            entry.action_index = self._action_index(t, action)
            entry.params = t.check_action(entry.action_index, params)
            return t.insert(entry)

    def table_modify(self, table: str, handle: int, action: str, params=()) -> None:
        with self.lock:
            t = self._table(table)
            if t.profile is not None:
                raise InvalidArgument(f"table '{t.name}' is indirect")
            t.get(handle)
            t.modify(handle, self._action_index(t, action), params)

    def table_delete(self, table: str, handle: int) -> None:
        with self.lock:
            self._table(table).delete(handle)

    def table_find(self, table: str, keys, priority=None) -> int | None:
        with self.lock:
            return self._table(table).find(keys, priority)

    def table_entries(self, table: str) -> list[TableEntry]:
        with self.lock:
            t = self._table(table)
            return [TableEntry(e.handle, e.keys, t.action_name(e.action_index), e.params,
                               e.priority, e.member, e.group) for e in t.entries.values()]

    def table_clear(self, table: str) -> None:
        with self.lock:
            self._table(table).clear()

    def table_set_default(self, table: str, action: str, params=()) -> None:
        with self.lock:
            t = self._table(table)
            t.set_default(self._action_index(t, action), params)

    def table_reset_default(self, table: str) -> None:
        with self.lock:
            self._table(table).reset_default()

    def table_get_default(self, table: str) -> tuple[str | None, tuple[int, ...]]:
        with self.lock:
            t = self._table(table)
            index, params, _ = t.default[0]
            return t.action_name(index), tuple(params)

    # ------------------------------------------------------------------- indirect tables
    def _indirect(self, table: str) -> Table:
        t = self._table(table)
        if t.profile is None:
            raise InvalidArgument(f"table '{t.name}' is not indirect")
        return t

    def table_add_member(self, table: str, keys, member: int, priority=None) -> int:
        with self.lock:
            t = self._indirect(table)
            t.profile.member(member)
            entry = self._new_entry(t, keys, priority)
            entry.member = member
            return t.insert(entry)

    def table_add_group(self, table: str, keys, group: int, priority=None) -> int:
        with self.lock:
            t = self._indirect(table)
            t.profile.group(group)
            entry = self._new_entry(t, keys, priority)
            entry.group = group
            return t.insert(entry)

    def table_modify_member(self, table: str, handle: int, member: int) -> None:
        """Point an indirect entry at another member; it keeps its handle and its place."""
        with self.lock:
            t = self._indirect(table)
            t.profile.member(member)
            t.retarget(handle, member=member)

    def table_modify_group(self, table: str, handle: int, group: int) -> None:
        """Point an entry of a table with a selector at another group, in place."""
        with self.lock:
            t = self._indirect(table)
            t.profile.group(group)
            t.retarget(handle, group=group)

    def table_set_default_member(self, table: str, member: int) -> None:
        with self.lock:
            t = self._indirect(table)
            action_id, params = t.profile.member(member)
            t.set_default(t.action_index_by_id[action_id], params)

    def table_set_default_group(self, table: str, group: int) -> None:
        with self.lock:
            t = self._indirect(table)
            members = t.profile.group(group)
            if not members:
                raise InvalidArgument(f"group {group} is empty")
            action_id, params = t.profile.member(members[0])
            t.set_default(t.action_index_by_id[action_id], params)

    def action_profiles(self) -> list[str]:
        return list(self.program.profiles)

    def _profile(self, name: str):
        profiles = self.program.profiles
        return profiles[resolve_name("action profile", name, profiles)]

    def _profile_action_id(self, profile, action: str) -> int:
        if not profile.tables:
            raise InvalidArgument(f"action profile '{profile.name}' is used by no table")
        table = profile.tables[0]
        return table.actions[self._action_index(table, action)].action_id

    def act_prof_add_member(self, profile: str, action: str, params=()) -> int:
        with self.lock:
            p = self._profile(profile)
            return p.add_member(self._profile_action_id(p, action), params)

    def act_prof_modify_member(self, profile: str, member: int, action: str, params=()) -> None:
        with self.lock:
            p = self._profile(profile)
            p.modify_member(member, self._profile_action_id(p, action), params)

    def act_prof_delete_member(self, profile: str, member: int) -> None:
        with self.lock:
            p = self._profile(profile)
            p.member(member)
            for table in p.tables:
                if any(e.member == member for e in table.entries.values()):
                    raise FailedPrecondition(f"member {member} is used by table "
                                             f"'{table.name}'")
            p.delete_member(member)

    def act_prof_create_group(self, profile: str) -> int:
        with self.lock:
            return self._profile(profile).create_group()

    def act_prof_delete_group(self, profile: str, group: int) -> None:
        with self.lock:
            p = self._profile(profile)
            p.group(group)
            for table in p.tables:
                if any(e.group == group for e in table.entries.values()):
                    raise FailedPrecondition(f"group {group} is used by table '{table.name}'")
            p.delete_group(group)

    def act_prof_add_member_to_group(self, profile: str, member: int, group: int) -> None:
        with self.lock:
            self._profile(profile).add_to_group(member, group)

    def act_prof_remove_member_from_group(self, profile: str, member: int, group: int) -> None:
        with self.lock:
            self._profile(profile).remove_from_group(member, group)

    def act_prof_members(self, profile: str) -> dict[int, tuple[str, tuple[int, ...]]]:
        with self.lock:
            p = self._profile(profile)
            names = {a.action_id: a.name for t in p.tables for a in t.actions}
            return {m: (names.get(aid, str(aid)), params) for m, (aid, params) in
                    p.members.items()}

    def act_prof_groups(self, profile: str) -> dict[int, list[int]]:
        with self.lock:
            return {g: list(ms) for g, ms in self._profile(profile).groups.items()}

    # ------------------------------------------------------------------- direct resources
    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        with self.lock:
            t = self._table(table)
            if not t.with_counters:
                raise InvalidArgument(f"table '{t.name}' has no direct counters")
            return tuple(t.get(handle).counter)

    def direct_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        with self.lock:
            t = self._table(table)
            if not t.with_counters:
                raise InvalidArgument(f"table '{t.name}' has no direct counters")
            entry = t.get(handle)
            _check_counts(packets, nbytes)
            entry.counter[:] = [packets, nbytes]

    def direct_meter_set_rates(self, table: str, handle: int, rates) -> None:
        with self.lock:
            t = self._table(table)
            if t.direct_meters is None:
                raise InvalidArgument(f"table '{t.name}' has no direct meters")
            entry = t.get(handle)
            entry.meter.configure(t.direct_meters.check_rates(rates), self.program.now_us())

    def direct_meter_get_rates(self, table: str, handle: int) -> list[tuple[float, int]] | None:
        """An entry's meter rates as `meter_get_rates` gives them; None: not configured."""
        with self.lock:
            t = self._table(table)
            if t.direct_meters is None:
                raise InvalidArgument(f"table '{t.name}' has no direct meters")
            rates = t.get(handle).meter.rates
            return list(rates) if rates is not None else None

    # ------------------------------------------------------------------------ registers etc
    def registers(self) -> list[str]:
        return list(self.program.registers)

    def _register(self, name: str):
        regs = self.program.registers
        return regs[resolve_name("register", name, regs)]

    def register_size(self, name: str) -> int:
        return self._register(name).size

    def register_bitwidth(self, name: str) -> int:
        return self._register(name).bitwidth

    def register_read(self, name: str, index: int) -> int:
        with self.lock:
            reg = self._register(name)
            reg.check_index(index)
            return reg.cells[index]

    def register_read_all(self, name: str) -> list[int]:
        with self.lock:
            return list(self._register(name).cells)

    def register_write(self, name: str, index: int, value: int) -> None:
        with self.lock:
            self._register(name).write(index, value)

    def register_reset(self, name: str) -> None:
        with self.lock:
            self._register(name).reset()

    def counters(self) -> list[str]:
        return [n for n, c in self.program.counters.items() if c.direct_table is None]

    def _counter(self, name: str):
        counter = self.program.counters[resolve_name("counter", name, self.counters())]
        return counter

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self.lock:
            counter = self._counter(name)
            counter.check_index(index)
            return counter.packets[index], counter.bytes[index]

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        with self.lock:
            counter = self._counter(name)
            counter.check_index(index)
            _check_counts(packets, nbytes)
            counter.packets[index] = packets
            counter.bytes[index] = nbytes

    def counter_reset(self, name: str) -> None:
        with self.lock:
            self._counter(name).reset()

    def meters(self) -> list[str]:
        return [n for n, m in self.program.meters.items() if m.direct_table is None]

    def meter_set_rates(self, name: str, index: int, rates) -> None:
        with self.lock:
            meter = self.program.meters[resolve_name("meter", name, self.meters())]
            meter.check_index(index)
            meter.meters[index].configure(meter.check_rates(rates), self.program.now_us())

    def meter_get_rates(self, name: str, index: int) -> list[tuple[float, int]] | None:
        with self.lock:
            meter = self.program.meters[resolve_name("meter", name, self.meters())]
            meter.check_index(index)
            rates = meter.meters[index].rates
            return list(rates) if rates is not None else None

    def parse_vsets(self) -> list[str]:
        return list(self.program.vsets)

    def _vset(self, name: str):
        vsets = self.program.vsets
        return vsets[resolve_name("parse value set", name, vsets)]

    def parse_vset_add(self, name: str, value: int, mask: int | None = None) -> None:
        with self.lock:
            self._vset(name).add(value, mask)

    def parse_vset_remove(self, name: str, value: int, mask: int | None = None) -> None:
        with self.lock:
            self._vset(name).remove(value, mask)

    def parse_vset_values(self, name: str) -> list[tuple[int, int]]:
        """The set's (value, mask) pairs, in the order they were added."""
        with self.lock:
            return list(self._vset(name).entries)

    def parse_vset_clear(self, name: str) -> None:
        with self.lock:
            self._vset(name).entries.clear()

    def parse_vset_bitwidth(self, name: str) -> int:
        return self._vset(name).bitwidth

    def crc_width(self, calculation: str) -> int:
        """16 or 32: the width of a custom CRC calculation's parameters."""
        crcs = self.program.custom_crcs
        return crcs[resolve_name("custom CRC calculation", calculation, crcs)].width

    def crc_calculations(self) -> list[str]:
        """Calculations using crc16_custom / crc32_custom, whose parameters can be set."""
        return list(self.program.custom_crcs)

    def set_crc_parameters(self, calculation: str, poly: int, init: int, xor_out: int,
                           reflect_in: bool, reflect_out: bool) -> None:
        """simple_switch_CLI's set_crc16_parameters / set_crc32_parameters."""
        with self.lock:
            crcs = self.program.custom_crcs
            crc = crcs[resolve_name("custom CRC calculation", calculation, crcs)]
            limit = 1 << crc.width
            for what, x in (("poly", poly), ("init", init), ("xor_out", xor_out)):
                if not isinstance(x, int) or not 0 <= x < limit:
                    raise InvalidArgument(f"{what} {x!r} does not fit in {crc.width} bits")
            crc.configure(poly, init, xor_out, bool(reflect_in), bool(reflect_out))

    # ---------------------------------------------------------- packet replication engine
    def mc_group_create(self, mgid: int) -> None:
        with self.lock:
            self.pre.group_create(mgid)

    def mc_group_delete(self, mgid: int) -> None:
        with self.lock:
            self.pre.group_delete(mgid)

    def mc_node_create(self, rid: int, ports, lags=()) -> int:
        with self.lock:
            return self.pre.node_create(rid, ports, lags)

    def mc_node_update(self, handle: int, ports, lags=None) -> None:
        """New ports (and LAGs; None: keep the node's) for a node."""
        with self.lock:
            self.pre.node_update(handle, ports, lags)

    def mc_set_lag_members(self, lag: int, ports) -> None:
        """A LAG's (port bundle's) member ports (see state/pre.py for the port a copy
        takes)."""
        with self.lock:
            self.pre.set_lag_members(lag, ports)

    def mc_reset(self) -> None:
        """No groups, nodes or LAGs (simple_switch's reset_state of its PRE)."""
        with self.lock:
            self.pre.reset()

    def mc_lag_members(self) -> dict[int, list[int]]:
        with self.lock:
            return {lag: list(ports) for lag, ports in self.pre.lag_members.items()}

    def mc_node_destroy(self, handle: int) -> None:
        with self.lock:
            self.pre.node_destroy(handle)

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        with self.lock:
            self.pre.node_associate(mgid, handle)

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        with self.lock:
            self.pre.node_dissociate(mgid, handle)

    def mc_group_set(self, mgid: int, replicas) -> None:
        with self.lock:
            self.pre.group_set(mgid, replicas)

    def mc_group_remove(self, mgid: int) -> None:
        """Delete a group made by `mc_group_set`, and its nodes (P4Runtime's DELETE)."""
        with self.lock:
            self.pre.group_remove(mgid)

    def mc_group_get(self, mgid: int) -> list[tuple[int, int]]:
        with self.lock:
            return self.pre.group_get(mgid)

    def mc_groups(self) -> list[int]:
        with self.lock:
            return sorted(self.pre.groups)

    def mc_group_nodes(self, mgid: int) -> list[int]:
        """The node handles of a group, in the order they replicate."""
        with self.lock:
            return self.pre.group_nodes(mgid)

    def mc_node_get(self, handle: int) -> tuple[int, list[int], list[int]]:
        """A node's (replication id, ports, LAGs)."""
        with self.lock:
            node = self.pre.node(handle)
            return node.rid, list(node.ports), list(node.lags)

    def mirroring_add(self, session: int, port: int | None = None,
                      mgid: int | None = None) -> None:
        with self.lock:
            self.pre.mirroring_add(session, port, mgid)

    def mirroring_delete(self, session: int) -> None:
        with self.lock:
            self.pre.mirroring_delete(session)

    def mirroring_get(self, session: int) -> dict | None:
        with self.lock:
            return self.pre.mirroring_get(session)


def _checked_packet(port, packet) -> bytes:
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= MAX_PORT:
        raise InvalidArgument(f"port {port!r} out of range [0, {MAX_PORT}]")
    if not isinstance(packet, (bytes, bytearray, memoryview)):
        raise InvalidArgument(f"a packet must be bytes, not {type(packet).__name__}")
    return bytes(packet)


def _check_counts(packets, nbytes) -> None:
    for what, x in (("packets", packets), ("bytes", nbytes)):
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < 1 << 64:
            raise InvalidArgument(f"{what} must be an int in 0..2^64-1 (BMv2's 64-bit "
                                  f"counters), got {x!r}")
