"""Run a parsed STF test against a switch (`p4switch.runtime.Switch` or anything with its API).

Commands run in file order: control-plane commands call the switch at once, `packet` runs the
packet to completion through `Switch.receive` and records what came out, `check_counter` compares
the counter as it is at that point. After the last command the outputs are matched with the
`expect` lines per port (`expectations.py`). A command the program cannot take (unknown table,
bad key, refused write) is an error in the test, raised as `StfCommandError` with its line; a
failed expectation, counter check or data-plane `assert` makes the result fail.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Callable

from . import commands as c
from .errors import StfCommandError
from .expectations import Mismatch, OutputPacket, compare_outputs
from .keys import KeyValueError, build_keys
from .program import ProgramIndex, UnknownName, resolve_name

_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_NEEDS_PRIORITY = ("ternary", "range", "optional")


@dataclass(frozen=True, kw_only=True)
class CounterFailure:
    check: c.CheckCounter
    actual: dict[str, int]          # {"packets": n, "bytes": m}


@dataclass(kw_only=True)
class StfResult:
    test: c.StfTest
    outputs: list[OutputPacket] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    counter_failures: list[CounterFailure] = field(default_factory=list)
    aborted: str | None = None      # a data-plane assert/assume failed: where and why

    @property
    def passed(self) -> bool:
        return not (self.mismatches or self.counter_failures or self.aborted)


def _runtime_errors() -> tuple[type, type]:
    """(P4SwitchError, AssertionFailure) from the runtime, or stand-ins if it is not there."""
    try:
        from p4switch.runtime.errors import AssertionFailure, P4SwitchError
    except ImportError:
        class _Never(Exception):
            pass
        return _Never, _Never
    return P4SwitchError, AssertionFailure


def _key_object(spec: tuple):
    from p4switch.runtime import ExactKey, LpmKey, OptionalKey, RangeKey, TernaryKey
    kind, *args = spec
    return {"exact": ExactKey, "lpm": LpmKey, "ternary": TernaryKey, "range": RangeKey,
            "optional": OptionalKey}[kind](*args)


def _show_key(spec: tuple) -> str:
    kind, *v = spec
    if kind == "lpm":
        return f"{v[0]:#x}/{v[1]}"
    if kind == "ternary":
        return f"{v[0]:#x}&&&{v[1]:#x}"
    if kind == "range":
        return f"{v[0]:#x}->{v[1]:#x}"
    return "*" if v[0] is None else f"{v[0]:#x}"


class StfRunner:
    """Drives one switch through one test. `log` receives the `-v` lines (None: silent).

    `make_key` turns a neutral key tuple from `keys.py` into what `switch.table_add` takes; the
    default builds the runtime's key dataclasses. With `frozen_clock` (the default) the switch's
    clock stands still at 0 for the whole test, so meters and timestamps are reproducible: every
    packet arrives at the same instant, as if sent back to back.
    """

    def __init__(self, switch, program: dict, *, log: Callable[[str], None] | None = None,
                 make_key: Callable[[tuple], object] = _key_object, frozen_clock: bool = True):
        self.switch = switch
        if frozen_clock and hasattr(switch, "clock"):
            switch.clock = lambda: 0.0
        self.index = ProgramIndex(program)
        self.log = log
        self.make_key = make_key
        self._entry_ids: dict[str, tuple[str, int]] = {}
        self._mc_nodes: list[int] = []       # STF node handle (creation order) -> switch handle
        self._members: dict[tuple, int] = {}   # (profile, action, params) -> member handle

    def run(self, test: c.StfTest) -> StfResult:
        result = StfResult(test=test)
        switch_error, assertion_failure = _runtime_errors()
        expects: list[c.ExpectPacket] = []
        for cmd in test.commands:
            try:
                if isinstance(cmd, c.SendPacket):
                    self._send(cmd, result)
                elif isinstance(cmd, c.ExpectPacket):
                    expects.append(cmd)
                elif isinstance(cmd, c.CheckCounter):
                    self._check_counter(cmd, result)
                else:
                    self._control(cmd)
            except assertion_failure as exc:
                result.aborted = f"{test.path}:{cmd.line}: the program aborted: {exc}"
                break
            except switch_error as exc:
                raise StfCommandError(test.path, cmd.line, str(exc)) from None
            except (UnknownName, KeyValueError) as exc:
                raise StfCommandError(test.path, cmd.line, str(exc)) from None
            except Exception as exc:     # a bug, not bad input: keep the traceback, add the line
                exc.add_note(f"while running {test.path}:{cmd.line}")
                raise
        result.mismatches = compare_outputs(expects, result.outputs)
        return result

    # --- packets and checks ---
    def _send(self, cmd: c.SendPacket, result: StfResult) -> None:
        if self.log:
            self.log(f"packet {cmd.port} {cmd.data.hex().upper()}   (line {cmd.line})")
        outputs = self.switch.receive(cmd.port, cmd.data)
        for port, data in outputs:
            result.outputs.append(OutputPacket(port=port, data=bytes(data), packet_line=cmd.line))
            if self.log:
                self.log(f"  -> out on port {port}: {bytes(data).hex().upper()}")
        if self.log and not outputs:
            self.log("  -> no packet out (dropped)")

    def _check_counter(self, cmd: c.CheckCounter, result: StfResult) -> None:
        info = self.index.counter(cmd.counter)
        if info.direct_table is not None:
            if cmd.entry_id is not None:
                table, handle = self._entry(cmd.entry_id, cmd)
            elif cmd.index is not None:
                table, handle = info.direct_table, cmd.index
            packets, nbytes = self.switch.direct_counter_read(table, handle)
        else:
            if cmd.entry_id is not None:
                raise UnknownName(f"counter '{info.name}' is not a direct counter: give an index,"
                                  f" not ${cmd.entry_id}")
            packets, nbytes = self.switch.counter_read(info.name, cmd.index)
        actual = {"packets": packets, "bytes": nbytes}
        kinds = (cmd.kind,) if cmd.kind else ("packets", "bytes")
        ok = all(_COMPARE[cmd.op](actual[k], cmd.value) for k in kinds)
        if self.log:
            self.log(f"check_counter {info.name}: packets={packets} bytes={nbytes} "
                     f"-> {'ok' if ok else 'FAILED'}")
        if not ok:
            result.counter_failures.append(CounterFailure(check=cmd, actual=actual))

    def _entry(self, entry_id: str, cmd: c.Command) -> tuple[str, int]:
        try:
            return self._entry_ids[entry_id]
        except KeyError:
            raise UnknownName(f"no entry was added with '= {entry_id}' before line {cmd.line}") \
                from None

    # --- control plane ---
    def _control(self, cmd: c.Command) -> None:
        sw = self.switch
        if self.log and not isinstance(cmd, (c.Wait, c.AddEntry)):
            details = ", ".join(f"{k}={v!r}" for k, v in vars(cmd).items() if k != "line")
            self.log(f"line {cmd.line}: {type(cmd).__name__}({details})")
        if isinstance(cmd, c.AddEntry):
            self._add(cmd)
        elif isinstance(cmd, c.SetDefault):
            table = self._table(cmd.table)
            action, params = self._action(table, cmd.action)
            sw.table_set_default(table, action, params)
        elif isinstance(cmd, c.RemoveAll):
            for table in sw.tables():
                if not sw.table_info(table).const:
                    sw.table_clear(table)
            self._entry_ids.clear()
        elif isinstance(cmd, (c.Wait, c.NoPacket)):
            pass
        elif isinstance(cmd, c.MirroringAdd):
            sw.mirroring_add(cmd.session, port=cmd.port)
        elif isinstance(cmd, c.MirroringAddMc):
            sw.mirroring_add(cmd.session, mgid=cmd.mgid)
        elif isinstance(cmd, c.MirroringDelete):
            sw.mirroring_delete(cmd.session)
        elif isinstance(cmd, c.MirroringGet):
            self._show(f"mirroring session {cmd.session}: {sw.mirroring_get(cmd.session)}")
        elif isinstance(cmd, c.McGroupCreate):
            sw.mc_group_create(cmd.mgid)
        elif isinstance(cmd, c.McNodeCreate):
            self._mc_nodes.append(sw.mc_node_create(cmd.rid, list(cmd.ports)))
        elif isinstance(cmd, c.McNodeUpdate):
            sw.mc_node_update(self._mc_node(cmd.handle), list(cmd.ports))
        elif isinstance(cmd, c.McNodeAssociate):
            sw.mc_node_associate(cmd.mgid, self._mc_node(cmd.handle))
        else:
            self._externs(cmd)

    def _externs(self, cmd: c.Command) -> None:
        sw = self.switch
        if isinstance(cmd, c.CounterRead):
            self._show(f"{cmd.counter}[{cmd.index}] = {sw.counter_read(cmd.counter, cmd.index)}")
        elif isinstance(cmd, c.CounterWrite):
            sw.counter_write(cmd.counter, cmd.index, cmd.packets, cmd.bytes)
        elif isinstance(cmd, c.RegisterRead):
            value = sw.register_read(cmd.register, cmd.index)
            self._show(f"{cmd.register}[{cmd.index}] = {value} ({value:#x})")
        elif isinstance(cmd, c.RegisterWrite):
            sw.register_write(cmd.register, cmd.index, cmd.value)
        elif isinstance(cmd, c.RegisterReset):
            sw.register_reset(cmd.register)
        elif isinstance(cmd, c.ValueSetChange):
            change = sw.parse_vset_add if cmd.add else sw.parse_vset_remove
            name = resolve_name(cmd.value_set, list(sw.parse_vsets()), "parser value set")
            change(name, cmd.value, cmd.mask)
        elif isinstance(cmd, c.MeterGetRates):
            self._show(f"meter {cmd.meter}[{cmd.index}]: rates are write-only here")
        elif isinstance(cmd, c.MeterSetRates):
            self._set_meter_rates(cmd)
        else:
            raise UnknownName(f"the runner cannot execute {type(cmd).__name__}")

    def _set_meter_rates(self, cmd: c.MeterSetRates) -> None:
        name, size, direct_table = self.index.meter(cmd.meter)
        rates = [tuple(r) for r in cmd.rates]
        if direct_table is not None:
            if cmd.entry_id is not None:
                table, handle = self._entry(cmd.entry_id, cmd)
            elif cmd.index is not None:
                table, handle = direct_table, cmd.index
            else:
                raise UnknownName(f"'{name}' is a direct meter: set the rates of one entry "
                                  f"(meter_set_rates {cmd.meter} $ID ...)")
            self.switch.direct_meter_set_rates(table, handle, rates)
            return
        if cmd.entry_id is not None:
            raise UnknownName(f"meter '{name}' is not a direct meter: give an index, "
                              f"not ${cmd.entry_id}")
        for i in range(size) if cmd.index is None else (cmd.index,):
            self.switch.meter_set_rates(name, i, rates)

    def _show(self, text: str) -> None:
        if self.log:
            self.log("  " + text)

    def _mc_node(self, handle: int) -> int:
        if not 0 <= handle < len(self._mc_nodes):
            raise UnknownName(f"no multicast node with handle {handle} "
                              f"({len(self._mc_nodes)} created so far)")
        return self._mc_nodes[handle]

    def _table(self, name: str) -> str:
        return resolve_name(name, list(self.switch.tables()), "table")

    def _action(self, table: str, call: c.ActionCall) -> tuple[str, tuple[int, ...]]:
        allowed = list(self.switch.table_info(table).actions)
        action = resolve_name(call.name, allowed, f"action of table '{table}'")
        params = self.index.action(action).params
        given = dict(call.args)
        unknown = [n for n in given if n not in {p for p, _ in params}]
        if unknown:
            names = ", ".join(p for p, _ in params) or "none"
            raise UnknownName(f"action '{action}' has no parameter '{unknown[0]}' "
                              f"(its parameters: {names})")
        missing = [p for p, _ in params if p not in given]
        if missing:
            raise UnknownName(f"action '{action}' needs parameter '{missing[0]}'")
        values = []
        for name, width in params:
            v = given[name].value
            if width and v >= 1 << width:
                raise KeyValueError(f"value {v:#x} of parameter '{name}' does not fit in "
                                    f"{width} bits")
            values.append(v)
        return action, tuple(values)

    def _add(self, cmd: c.AddEntry) -> None:
        table = self._table(cmd.table)
        info = self.switch.table_info(table)
        table_keys = [tuple(k) for k in info.keys]
        specs = build_keys(table_keys, self.index.table_key_aliases.get(table, []), cmd.keys)
        priority = None
        if any(mt in _NEEDS_PRIORITY for _, mt, _ in table_keys):
            if cmd.priority is None:
                raise UnknownName(f"table '{table}' has ternary, range or optional keys: "
                                  f"give a priority after the table name")
            # STF priorities may be 0 (p4c's tests use it); the switch API wants >= 1, as
            # P4Runtime does. Shifting every priority by one keeps their order.
            priority = cmd.priority + 1
        keys = [self.make_key(s) for s in specs]
        profile = getattr(info, "action_profile", None)
        if profile is not None:
            handle = self._add_indirect(table, profile, keys, cmd, priority)
        else:
            if len(cmd.actions) > 1:
                raise UnknownName(f"table '{table}' has no action selector: give one action")
            action, params = self._action(table, cmd.action)
            handle = self.switch.table_add(table, keys, action, params, priority=priority)
        if cmd.entry_id is not None:
            self._entry_ids[cmd.entry_id] = (table, handle)
        if self.log:
            shown = " ".join(_show_key(spec) for spec in specs)
            calls = " ".join(a.name for a in cmd.actions)
            self.log(f"line {cmd.line}: add {table} {shown} -> {calls} (handle {handle})")

    def _member(self, table: str, profile: str, call: c.ActionCall) -> int:
        """The profile's member for this action and data, created on first use."""
        action, params = self._action(table, call)
        key = (profile, action, params)
        if key not in self._members:
            self._members[key] = self.switch.act_prof_add_member(profile, action, params)
        return self._members[key]

    def _add_indirect(self, table: str, profile: str, keys: list, cmd: c.AddEntry,
                      priority: int | None) -> int:
        """One action: an entry pointing at a member; several: at a new group of members."""
        members = [self._member(table, profile, call) for call in cmd.actions]
        if len(members) == 1:
            return self.switch.table_add_member(table, keys, members[0], priority=priority)
        group = self.switch.act_prof_create_group(profile)
        for member in members:
            self.switch.act_prof_add_member_to_group(profile, member, group)
        return self.switch.table_add_group(table, keys, group, priority=priority)
