"""The STF test format as typed commands: what `parser.py` produces and `runner.py` consumes.

One frozen dataclass per statement of p4c's STF format (plus the simple_switch_CLI pass-through
commands that p4c's BMv2 driver accepts). Each carries the line it came from so that a failure at
run time can still point at the test file. Values stay as written (`Number`) until the runner
knows the table's key types and widths, because `0x0A**` means different things for an LPM key
(a prefix) and a ternary key (a mask).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class Number:
    """A number as written in an STF file: decimal, `0x..` or `0b..`, possibly with `*` digits.

    `value` has the `*` digits as zeros; `care_mask` has ones under every written digit that is not
    `*` (p4c derives a ternary mask from exactly the digits written, and an LPM prefix length from
    the count of non-`*` digits). Decimal numbers have no digit structure: `digits` is 0 and
    `care_mask` is None, meaning "all bits of the field".
    """

    text: str
    value: int
    digits: int = 0
    bits_per_digit: int = 0
    care_mask: int | None = None

    @property
    def has_wildcards(self) -> bool:
        return "*" in self.text

    @property
    def written_bits(self) -> int:
        return self.digits * self.bits_per_digit


# --- key values, as written after `field:` in `add` ------------------------------------------

@dataclass(frozen=True, kw_only=True)
class PlainValue:
    """`field:NUMBER` — exact value, or a `*`-digit pattern for ternary/LPM/optional keys."""

    number: Number


@dataclass(frozen=True, kw_only=True)
class PrefixValue:
    """`field:NUMBER/LENGTH` — an explicit LPM prefix."""

    number: Number
    prefix_len: int


@dataclass(frozen=True, kw_only=True)
class MaskedValue:
    """`field:VALUE&&&MASK` — BMv2 CLI ternary syntax (an inaemu extension to p4c's STF)."""

    number: Number
    mask: Number


@dataclass(frozen=True, kw_only=True)
class RangeValue:
    """`field:LOW->HIGH` — BMv2 CLI range syntax (an inaemu extension to p4c's STF)."""

    low: Number
    high: Number


KeyValue = PlainValue | PrefixValue | MaskedValue | RangeValue


@dataclass(frozen=True, kw_only=True)
class KeyMatch:
    field: str
    value: KeyValue


@dataclass(frozen=True, kw_only=True)
class ActionCall:
    name: str
    args: tuple[tuple[str, Number], ...] = ()


# --- statements --------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Command:
    line: int


@dataclass(frozen=True, kw_only=True)
class AddEntry(Command):
    """`add TABLE [PRIORITY] FIELD:VALUE... ACTION(ARG:VALUE, ...)... [= ID]`.

    One action is p4c's form. For a table with an action profile the runner makes (or reuses) a
    member for it; several actions (an inaemu extension) make a selector group of one member
    each, in the order written.
    """

    table: str
    priority: int | None
    keys: tuple[KeyMatch, ...]
    actions: tuple[ActionCall, ...]
    entry_id: str | None = None

    @property
    def action(self) -> ActionCall:
        return self.actions[0]


@dataclass(frozen=True, kw_only=True)
class SetDefault(Command):
    table: str
    action: ActionCall


@dataclass(frozen=True, kw_only=True)
class RemoveAll(Command):
    """`remove all`: every non-const entry of every table."""


@dataclass(frozen=True, kw_only=True)
class SendPacket(Command):
    port: int
    data: bytes


@dataclass(frozen=True, kw_only=True)
class ExpectPacket(Command):
    """`expect PORT [HEX...] [$]`; `pattern` None means "any number of packets on PORT".

    `pattern` is upper-case hex with `*` for don't-care nibbles. Without `$` the packet may be
    longer than the pattern (p4c compares only the expected length); with `$` it must not be.
    """

    port: int
    pattern: str | None
    exact_length: bool = False


@dataclass(frozen=True, kw_only=True)
class NoPacket(Command):
    """`no_packet`: nothing beyond the expected packets may come out (always true here)."""


@dataclass(frozen=True, kw_only=True)
class Wait(Command):
    """`wait`: packets are processed synchronously, so there is nothing to wait for."""


COUNT_KINDS = ("packets", "bytes")
COMPARISONS = ("==", "!=", "<=", "<", ">=", ">")


@dataclass(frozen=True, kw_only=True)
class CheckCounter(Command):
    """`check_counter NAME(INDEX|$ID) [packets|bytes OP VALUE]`.

    Without a condition p4c checks `== 0`; with `kind` None both packets and bytes are compared.
    `entry_id` names an `add ... = ID` entry whose direct counter is meant.
    """

    counter: str
    index: int | None
    entry_id: str | None
    kind: str | None
    op: str
    value: int


@dataclass(frozen=True, kw_only=True)
class MirroringAdd(Command):
    session: int
    port: int


@dataclass(frozen=True, kw_only=True)
class MirroringAddMc(Command):
    session: int
    mgid: int


@dataclass(frozen=True, kw_only=True)
class MirroringDelete(Command):
    session: int


@dataclass(frozen=True, kw_only=True)
class MirroringGet(Command):
    session: int


@dataclass(frozen=True, kw_only=True)
class McGroupCreate(Command):
    mgid: int


@dataclass(frozen=True, kw_only=True)
class McNodeCreate(Command):
    """Node handles are numbered from 0 in creation order, as simple_switch numbers them."""

    rid: int
    ports: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class McNodeUpdate(Command):
    handle: int
    ports: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class McNodeAssociate(Command):
    mgid: int
    handle: int


@dataclass(frozen=True, kw_only=True)
class CounterRead(Command):
    counter: str
    index: int


@dataclass(frozen=True, kw_only=True)
class CounterWrite(Command):
    counter: str
    index: int
    packets: int
    bytes: int


@dataclass(frozen=True, kw_only=True)
class RegisterRead(Command):
    register: str
    index: int


@dataclass(frozen=True, kw_only=True)
class RegisterWrite(Command):
    register: str
    index: int
    value: int


@dataclass(frozen=True, kw_only=True)
class RegisterReset(Command):
    register: str


@dataclass(frozen=True, kw_only=True)
class ValueSetChange(Command):
    """`pvs_add NAME VALUE [MASK]` / `pvs_remove ...` (simple_switch_CLI's parser value sets)."""

    value_set: str
    value: int
    mask: int | None
    add: bool


@dataclass(frozen=True, kw_only=True)
class MeterGetRates(Command):
    meter: str
    index: int


@dataclass(frozen=True, kw_only=True)
class MeterSetRates(Command):
    """`meter_set_rates NAME INDEX|$ID RATE:BURST...`; `index` None for `meter_array_set_rates`.

    Rates are per microsecond (bytes or packets, by the meter's type), as simple_switch_CLI takes.
    A direct meter is addressed by its entry: `$ID` of an `add ... = ID` (an inaemu extension) or
    the entry handle as INDEX (simple_switch_CLI's way).
    """

    meter: str
    index: int | None
    rates: tuple[tuple[float, int], ...] = field(default=())
    entry_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class StfTest:
    path: str
    commands: tuple[Command, ...]

    @property
    def packet_count(self) -> int:
        return sum(isinstance(c, SendPacket) for c in self.commands)

    @property
    def expect_count(self) -> int:
        return sum(isinstance(c, ExpectPacket) for c in self.commands)
