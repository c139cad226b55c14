"""Parse p4c's STF test format into typed commands (`commands.py`); no I/O beyond the text given.

STF is line-oriented: one statement per line, `#` starts a comment, keywords are case-insensitive.
The grammar follows p4c's STF parser and its BMv2 driver (which adds the simple_switch_CLI
commands `mirroring_*`, `mc_*`, `counter_*`, `register_*`, `meter_*`):

    add TABLE [PRIORITY] FIELD:VALUE... ACTION(ARG:VALUE, ...)... [= ID]
    setdefault TABLE ACTION(ARG:VALUE, ...)
    remove all
    packet PORT HEX...                  hex may be split by spaces
    expect PORT [HEX...] [$]            `*` = don't-care nibble; `$` = exact length
    no_packet | wait
    check_counter NAME(INDEX|$ID) [packets|bytes OP NUMBER]      OP: == != < <= > >=

VALUE is decimal, `0x..` or `0b..`, with `*` digits for ternary/LPM/optional keys, or
`NUMBER/PREFIX`. The priority is a decimal number right after the table name, before the first
key (higher wins, as in P4Runtime). inaemu extensions: BMv2 CLI's `V&&&MASK` and `LOW->HIGH`
key values, several actions in one `add` (a selector group), and `pvs_add`/`pvs_remove NAME
VALUE [MASK]` for parser value sets.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import commands as c
from .errors import StfSyntaxError

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<number>0[xX][0-9a-fA-F*]+|0[bB][01*]+|[0-9]+(?:\.[0-9]+)?)
  | (?P<op>==|!=|<=|>=|->|&&&|[<>])
  | (?P<name>[A-Za-z_$][A-Za-z_$0-9]*)
  | (?P<punct>[.:,()\[\]=/])
    """,
    re.VERBOSE,
)
_HEX_PACKET = re.compile(r"[0-9a-fA-F]+")
_HEX_EXPECT = re.compile(r"[0-9a-fA-F*]+")


class _Token:
    __slots__ = ("kind", "text", "column")

    def __init__(self, kind: str, text: str, column: int):
        self.kind, self.text, self.column = kind, text, column

    def __repr__(self) -> str:
        return f"{self.kind}:{self.text!r}"


class _Line:
    """The tokens of one statement, with helpers that raise located syntax errors."""

    def __init__(self, path: str, number: int, text: str, code: str):
        self.path, self.lineno, self.text = path, number, text
        self.tokens = _tokenize(path, number, text, code)
        self.pos = 0

    # --- reading tokens ---
    def peek(self, offset: int = 0) -> _Token | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.pos >= len(self.tokens)

    def next(self, expected: str) -> _Token:
        tok = self.peek()
        if tok is None:
            raise self.error(f"expected {expected}, found end of line", len(self.text.rstrip()) + 1)
        self.pos += 1
        return tok

    def accept(self, text: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.text == text and tok.kind in ("punct", "op"):
            self.pos += 1
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> None:
        tok = self.peek()
        if tok is None or tok.text != text:
            self.fail(what or f"'{text}'")
        self.pos += 1

    def fail(self, expected: str):
        tok = self.peek()
        if tok is None:
            raise self.error(f"expected {expected}, found end of line", len(self.text.rstrip()) + 1)
        raise self.error(f"expected {expected}, found '{tok.text}'", tok.column)

    def end(self) -> None:
        if not self.at_end():
            self.fail("end of line")

    def error(self, message: str, column: int) -> StfSyntaxError:
        return StfSyntaxError(self.path, self.lineno, column, message, self.text.rstrip())

    # --- grammar pieces ---
    def qualified_name(self, what: str) -> str:
        tok = self.peek()
        if tok is None or tok.kind != "name":
            self.fail(what)
        parts = [self.next(what).text]
        while True:
            if self.accept("["):
                index = self.peek()
                if index is None or index.kind != "number" or not index.text.isdigit():
                    self.fail("an index")
                self.pos += 1
                self.expect("]")
                parts[-1] += f"[{index.text}]"
            elif self.accept("."):
                nxt = self.peek()
                if nxt is None or nxt.kind != "name":
                    self.fail("a name after '.'")
                parts.append(self.next("a name").text)
            else:
                return ".".join(parts)

    def number(self, what: str, wildcards: bool = False) -> c.Number:
        tok = self.peek()
        if tok is None or tok.kind != "number":
            self.fail(what)
        self.pos += 1
        if "." in tok.text:
            raise self.error(f"expected {what}, found the fraction '{tok.text}'", tok.column)
        if "*" in tok.text and not wildcards:
            raise self.error(f"'*' digits are not allowed here ('{tok.text}')", tok.column)
        return parse_number(tok.text)

    def integer(self, what: str) -> int:
        return self.number(what).value

    def rate(self) -> float:
        tok = self.peek()
        if tok is None or tok.kind != "number" or "*" in tok.text:
            self.fail("a rate")
        self.pos += 1
        return float(tok.text) if "." in tok.text else parse_number(tok.text).value


def _tokenize(path: str, number: int, text: str, code: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(code):
        m = _TOKEN.match(code, pos)
        if m is None:
            raise StfSyntaxError(path, number, pos + 1, f"unexpected character '{code[pos]}'",
                                 text.rstrip())
        if m.lastgroup != "ws":
            tokens.append(_Token(m.lastgroup, m.group(), pos + 1))
        pos = m.end()
    return tokens


def parse_number(text: str) -> c.Number:
    """`0x1F`, `0b10*1`, `0x0A**`, `42` -> Number (see `commands.Number`)."""
    lower = text.lower()
    if lower.startswith(("0x", "0b")):
        bits = 4 if lower[1] == "x" else 1
        digits = lower[2:]
        full = (1 << bits) - 1
        value = mask = 0
        for d in digits:
            value <<= bits
            mask <<= bits
            if d != "*":
                value |= int(d, 16)
                mask |= full
        return c.Number(text=text, value=value, digits=len(digits), bits_per_digit=bits,
                        care_mask=mask)
    return c.Number(text=text, value=int(text, 10))


# --- statements ---------------------------------------------------------------------------------

def _action_call(ln: _Line) -> c.ActionCall:
    name = ln.qualified_name("an action name")
    ln.expect("(", "'(' after the action name")
    args: list[tuple[str, c.Number]] = []
    if not ln.accept(")"):
        while True:
            arg = ln.peek()
            if arg is None or arg.kind != "name":
                ln.fail("a parameter name")
            ln.pos += 1
            ln.expect(":", f"':' after parameter '{arg.text}'")
            args.append((arg.text, ln.number(f"a value for parameter '{arg.text}'")))
            if ln.accept(")"):
                break
            ln.expect(",", "',' or ')'")
    return c.ActionCall(name=name, args=tuple(args))


def _key_value(ln: _Line, field: str) -> c.KeyValue:
    first = ln.number(f"a value for key '{field}'", wildcards=True)
    if ln.accept("/"):
        tok = ln.peek()
        length = ln.integer("a prefix length")
        if first.has_wildcards:
            raise ln.error("a prefix length after '*' digits", tok.column if tok else 1)
        return c.PrefixValue(number=first, prefix_len=length)
    if ln.accept("&&&"):
        return c.MaskedValue(number=first, mask=ln.number("a mask"))
    if ln.accept("->"):
        return c.RangeValue(low=first, high=ln.number("the high end of the range"))
    return c.PlainValue(number=first)


def _key_follows(ln: _Line) -> bool:
    """Whether the name at the cursor is a key field (`NAME:`) rather than an action (`NAME(`)."""
    for tok in ln.tokens[ln.pos:]:
        if tok.text in (":", "("):
            return tok.text == ":"
    return False


def _parse_add(ln: _Line) -> c.AddEntry:
    table = ln.qualified_name("a table name")
    priority = None
    tok, after = ln.peek(), ln.peek(1)
    if tok is not None and tok.kind == "number" and (after is None or after.text != ":"):
        if not tok.text.isdigit():
            raise ln.error(f"a priority must be a decimal number, found '{tok.text}'", tok.column)
        priority = int(tok.text)
        ln.pos += 1
    keys: list[c.KeyMatch] = []
    while True:
        tok = ln.peek()
        if tok is None:
            ln.fail("a key 'FIELD:VALUE' or an action 'NAME(...)'")
        if tok.kind == "number" or _key_follows(ln):
            field = ln.qualified_name("a key field name")
            ln.expect(":", f"':' after key field '{field}'")
            keys.append(c.KeyMatch(field=field, value=_key_value(ln, field)))
            continue
        break
    actions = [_action_call(ln)]
    while (tok := ln.peek()) is not None and tok.kind == "name":
        actions.append(_action_call(ln))
    entry_id = None
    if ln.accept("="):
        tok = ln.peek()
        if tok is None or tok.kind != "name":
            ln.fail("an entry id after '='")
        entry_id = ln.next("an entry id").text
    ln.end()
    return c.AddEntry(line=ln.lineno, table=table, priority=priority, keys=tuple(keys),
                      actions=tuple(actions), entry_id=entry_id)


def _hex_payload(ln: _Line, code: str, start: int, expect: bool) -> tuple[str, bool]:
    """The hex after `packet PORT` / `expect PORT`: spaces removed, upper case, `$` split off."""
    body = code[start:]
    exact = False
    stripped = body.rstrip()
    if expect and stripped.endswith("$"):
        exact = True
        stripped = stripped[:-1]
    pattern = _HEX_EXPECT if expect else _HEX_PACKET
    digits: list[str] = []
    pos = 0
    while pos < len(stripped):
        ch = stripped[pos]
        if ch in " \t\r":
            pos += 1
            continue
        m = pattern.match(stripped, pos)
        if m is None:
            what = "hex digits, '*' or a final '$'" if expect else "hex digits"
            raise ln.error(f"expected {what}, found '{ch}'", start + pos + 1)
        digits.append(m.group())
        pos = m.end()
    data = "".join(digits).upper()
    if len(data) % 2:
        raise ln.error(f"odd number of hex digits ({len(data)}): packets are whole bytes",
                       start + 1)
    return data, exact


def _parse_packet_or_expect(ln: _Line, code: str, keyword: str) -> c.Command:
    port_tok = ln.peek()
    if port_tok is None or port_tok.kind != "number" or not port_tok.text.isdigit():
        ln.fail("a decimal port number")
    port = int(port_tok.text)
    data_start = port_tok.column - 1 + len(port_tok.text)
    if keyword == "packet":
        data, _ = _hex_payload(ln, code, data_start, expect=False)
        if not data:
            raise ln.error("expected packet bytes in hex after the port", data_start + 1)
        return c.SendPacket(line=ln.lineno, port=port, data=bytes.fromhex(data))
    data, exact = _hex_payload(ln, code, data_start, expect=True)
    if not data and not exact:
        return c.ExpectPacket(line=ln.lineno, port=port, pattern=None)
    return c.ExpectPacket(line=ln.lineno, port=port, pattern=data, exact_length=exact)


def _parse_check_counter(ln: _Line) -> c.CheckCounter:
    name = ln.qualified_name("a counter name")
    ln.expect("(", "'(' after the counter name")
    tok = ln.peek()
    index = entry_id = None
    if tok is not None and tok.kind == "name":
        entry_id = ln.next("an entry id").text.lstrip("$")
    else:
        index = ln.integer("a counter index or $ENTRY_ID")
    ln.expect(")")
    kind, op, value = None, "==", 0
    if not ln.at_end():
        kind_tok = ln.next("'packets' or 'bytes'")
        if kind_tok.text.lower() not in c.COUNT_KINDS:
            raise ln.error(f"expected 'packets' or 'bytes', found '{kind_tok.text}'",
                           kind_tok.column)
        kind = kind_tok.text.lower()
        op_tok = ln.peek()
        if op_tok is None or op_tok.text not in c.COMPARISONS:
            ln.fail("a comparison (== != < <= > >=)")
        op = ln.next("a comparison").text
        value = ln.integer("a number")
    ln.end()
    return c.CheckCounter(line=ln.lineno, counter=name, index=index, entry_id=entry_id,
                          kind=kind, op=op, value=value)


def _port_list(ln: _Line) -> tuple[int, ...]:
    ports = [ln.integer("a port")]
    while not ln.at_end():
        ports.append(ln.integer("a port"))
    return tuple(ports)


def _rates(ln: _Line) -> tuple[tuple[float, int], ...]:
    rates = []
    while True:
        rate = ln.rate()
        ln.expect(":", "':' between rate and burst")
        rates.append((rate, ln.integer("a burst size")))
        if ln.at_end():
            return tuple(rates)


def _simple(ln: _Line, keyword: str) -> c.Command:
    """The simple_switch_CLI pass-through commands of p4c's BMv2 driver."""
    n = ln.lineno
    if keyword == "mirroring_add":
        cmd = c.MirroringAdd(line=n, session=ln.integer("a session id"), port=ln.integer("a port"))
    elif keyword == "mirroring_add_mc":
        cmd = c.MirroringAddMc(line=n, session=ln.integer("a session id"),
                               mgid=ln.integer("a multicast group"))
    elif keyword == "mirroring_delete":
        cmd = c.MirroringDelete(line=n, session=ln.integer("a session id"))
    elif keyword == "mirroring_get":
        cmd = c.MirroringGet(line=n, session=ln.integer("a session id"))
    elif keyword == "mc_mgrp_create":
        cmd = c.McGroupCreate(line=n, mgid=ln.integer("a multicast group id"))
    elif keyword == "mc_node_create":
        return c.McNodeCreate(line=n, rid=ln.integer("a replication id"), ports=_port_list(ln))
    elif keyword == "mc_node_update":
        return c.McNodeUpdate(line=n, handle=ln.integer("a node handle"), ports=_port_list(ln))
    elif keyword == "mc_node_associate":
        cmd = c.McNodeAssociate(line=n, mgid=ln.integer("a multicast group id"),
                                handle=ln.integer("a node handle"))
    elif keyword == "counter_read":
        cmd = c.CounterRead(line=n, counter=ln.qualified_name("a counter name"),
                            index=ln.integer("an index"))
    elif keyword == "counter_write":
        cmd = c.CounterWrite(line=n, counter=ln.qualified_name("a counter name"),
                             index=ln.integer("an index"), packets=ln.integer("a packet count"),
                             bytes=ln.integer("a byte count"))
    elif keyword == "register_read":
        cmd = c.RegisterRead(line=n, register=ln.qualified_name("a register name"),
                             index=ln.integer("an index"))
    elif keyword == "register_write":
        cmd = c.RegisterWrite(line=n, register=ln.qualified_name("a register name"),
                              index=ln.integer("an index"), value=ln.integer("a value"))
    elif keyword == "register_reset":
        cmd = c.RegisterReset(line=n, register=ln.qualified_name("a register name"))
    elif keyword == "meter_get_rates":
        cmd = c.MeterGetRates(line=n, meter=ln.qualified_name("a meter name"),
                              index=ln.integer("an index"))
    elif keyword == "meter_set_rates":
        meter = ln.qualified_name("a meter name")
        tok = ln.peek()
        if tok is not None and tok.kind == "name":
            entry_id = ln.next("an entry id").text.lstrip("$")
            return c.MeterSetRates(line=n, meter=meter, index=None, entry_id=entry_id,
                                   rates=_rates(ln))
        index = ln.integer("an index or $ENTRY_ID")
        return c.MeterSetRates(line=n, meter=meter, index=index, rates=_rates(ln))
    elif keyword in ("pvs_add", "pvs_remove"):
        name = ln.qualified_name("a value set name")
        value = ln.integer("a value")
        mask = None if ln.at_end() else ln.integer("a mask")
        cmd = c.ValueSetChange(line=n, value_set=name, value=value, mask=mask,
                               add=keyword == "pvs_add")
    else:  # meter_array_set_rates
        meter = ln.qualified_name("a meter name")
        return c.MeterSetRates(line=n, meter=meter, index=None, rates=_rates(ln))
    ln.end()
    return cmd


_SIMPLE = ("mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get",
           "mc_mgrp_create", "mc_node_create", "mc_node_update", "mc_node_associate",
           "counter_read", "counter_write", "register_read", "register_write", "register_reset",
           "meter_get_rates", "meter_set_rates", "meter_array_set_rates", "pvs_add", "pvs_remove")
KEYWORDS = ("add", "setdefault", "remove", "packet", "expect", "no_packet", "wait",
            "check_counter") + _SIMPLE


def _parse_line(path: str, number: int, text: str) -> c.Command | None:
    code = text.split("#", 1)[0]
    if not code.strip():
        return None
    words = code.split(None, 2)
    if words[0].lower() in ("packet", "expect"):
        # Only the keyword and the port are tokens; the rest is raw hex (see _hex_payload).
        head_end = code.index(words[0]) + len(words[0])
        port_end = code.index(words[1], head_end) + len(words[1]) if len(words) > 1 else head_end
        ln = _Line(path, number, text, code[:port_end])
        ln.next("a command")
        return _parse_packet_or_expect(ln, code, words[0].lower())
    ln = _Line(path, number, text, code)
    head = ln.next("a command")
    keyword = head.text.lower()
    if head.kind != "name" or keyword not in KEYWORDS:
        raise ln.error(f"unknown command '{head.text}' (expected one of: {', '.join(KEYWORDS)})",
                       head.column)
    if keyword == "add":
        return _parse_add(ln)
    if keyword == "setdefault":
        table = ln.qualified_name("a table name")
        action = _action_call(ln)
        ln.end()
        return c.SetDefault(line=number, table=table, action=action)
    if keyword == "remove":
        what = ln.next("'all'")
        if what.text.lower() != "all":
            raise ln.error(f"expected 'all' (only 'remove all' is supported), found '{what.text}'",
                           what.column)
        ln.end()
        return c.RemoveAll(line=number)
    if keyword in ("no_packet", "wait"):
        ln.end()
        return c.NoPacket(line=number) if keyword == "no_packet" else c.Wait(line=number)
    if keyword == "check_counter":
        return _parse_check_counter(ln)
    return _simple(ln, keyword)


def parse_stf(text: str, path: str = "<stf>") -> c.StfTest:
    """Parse a whole STF text; the first syntax error raises `StfSyntaxError`."""
    cmds = []
    for number, line in enumerate(text.splitlines(), start=1):
        cmd = _parse_line(path, number, line)
        if cmd is not None:
            cmds.append(cmd)
    return c.StfTest(path=path, commands=tuple(cmds))


def parse_stf_file(path: str | Path) -> c.StfTest:
    """Read and parse a file; an unreadable file is a `StfSyntaxError` at line 0 too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StfSyntaxError(str(path), 0, 0, f"cannot read the test file: {exc}") from None
    return parse_stf(text, str(path))
