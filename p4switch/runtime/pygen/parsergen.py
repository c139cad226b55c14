"""The parser (with checksum verification) compiled into `parse(f, v, d) -> payload offset`.

States become blocks of one `while` loop, laid out depth-first from the start state so most
transitions fall through to a later block; only backward transitions (loops over header stacks)
`continue`. Failures raise `_ParserError(code)` inside the function, which records the code in
`standard_metadata.parser_error` and stops parsing where it was: v1model sends the packet on to
ingress with the headers extracted so far (BMv2's behaviour).
"""

from __future__ import annotations

import re
import struct

from ..config import MAX_WIDTH, Node
from ..phv.layout import HeaderInstance, HeaderType
from ..phv.vheaders import extract_lines
from ..phv.wordplan import split_fields, word_plan
from .calcgen import SUM_TERMS
from .exprgen import CodeScope, Expr, compile_expr, data, boolean
from .primgen import PrimitiveCompiler, compile_target, store

STATE_VISIT_LIMIT = 1000  # visits before ParserTimeout, only for parsers whose states loop
MAX_NESTED_DEPTH = 40     # states on one path of a nested (loop-free) parser; Python's
MAX_NESTED_LINES = 3000   # indentation limit is 100; repeated states must stay small

DEFAULT_ERROR_CODES = {"NoError": 0, "PacketTooShort": 1, "NoMatch": 2, "StackOutOfBounds": 3,
                       "HeaderTooShort": 4, "ParserTimeout": 5, "ParserInvalidArgument": 6}


class _TooLarge(Exception):
    """The nested form of a parser would be too deep or too long: keep the state loop."""


class ParserError(Exception):
    """Raised inside generated parser code; carries the P4 error code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def error_code(scope: CodeScope, name: str) -> int:
    return scope.layout.errors.get(name, DEFAULT_ERROR_CODES[name])


def make_lookahead(too_short: int):
    def _lookahead(d: bytes, pos: int, offset: int, width: int) -> int:
        first = pos + offset // 8
        skip = offset % 8
        nbytes = (skip + width + 7) // 8
        if first + nbytes > len(d):
            raise ParserError(too_short)
        chunk = int.from_bytes(d[first:first + nbytes], "big")
        return (chunk >> (nbytes * 8 - skip - width)) & ((1 << width) - 1)
    return _lookahead


def peek_padded(d: bytes, pos: int, offset: int, width: int) -> int:
    """A lookahead in a transition key: simple_switch reads past the packet's end as zeros
    there, without PacketTooShort (a lookahead into a field, `set`, does raise it)."""
    first = pos + offset // 8
    skip = offset % 8
    nbytes = (skip + width + 7) // 8
    chunk = int.from_bytes(d[first:first + nbytes].ljust(nbytes, b"\0"), "big")
    return (chunk >> (nbytes * 8 - skip - width)) & ((1 << width) - 1)


def make_extract_varbit(too_short: int, header_too_short: int, invalid_argument: int):
    """The varbit extract helper. As in simple_switch, a length that is not a whole number of
    bytes is ParserInvalidArgument (checked first), one beyond the field's maximum
    HeaderTooShort, one past the packet's end PacketTooShort; nothing is extracted then."""
    def _extract_varbit(f, v, d, pos, base, widths, length_slot, valid_index, varbit_bits,
                        max_bits):
        fixed = sum(w for w in widths if w is not None)
        if varbit_bits % 8:
            raise ParserError(invalid_argument)
        if varbit_bits < 0 or (max_bits is not None and fixed + varbit_bits > max_bits):
            raise ParserError(header_too_short)
        nbytes = (fixed + varbit_bits) // 8
        if pos + nbytes > len(d):
            raise ParserError(too_short)
        value = int.from_bytes(d[pos:pos + nbytes], "big")
        shift = fixed + varbit_bits
        for i, width in enumerate(widths):
            width = varbit_bits if width is None else width
            shift -= width
            f[base + i] = (value >> shift) & ((1 << width) - 1)
        f[length_slot] = varbit_bits
        v[valid_index] = 1
        return pos + nbytes
    return _extract_varbit


_READS_POS = re.compile(r"\bpos\b|\braise\b|\bd\b")


class ParserCompiler:
    def __init__(self, parser: Node, checksums: list[tuple[Node, str]], scope: CodeScope,
                 traced: bool):
        self.node = parser
        self.checksums = checksums
        scope = CodeScope(scope.layout, scope.namespace, None, in_parser=True)
        self.scope = scope
        self.layout = scope.layout
        self.traced = traced
        self.prims = PrimitiveCompiler(scope, traced)
        self.too_short = error_code(scope, "PacketTooShort")
        self._inline: tuple | None = None   # (states, [lines emitted]) while nesting states
        self._depth = 0
        # nested code only: `pos` as a constant while every header so far had a fixed size
        # (None: only the run-time `pos` knows); `_synced`: the run-time `pos` holds it
        self._pos: int | None = None
        self._synced = True

    def compile(self) -> str:
        states = {}
        for snode in self.node["parse_states"].items():
            name = snode["name"].str()
            if name in states:
                raise snode["name"].error(f"duplicate parse state '{name}'")
            states[name] = snode
        init = self.node["init_state"].opt_str()
        if init is not None and init not in states:
            raise self.node["init_state"].error(f"unknown parse state '{init}'")
        order = self._depth_first(init, states)
        position = {name: i for i, name in enumerate(order)}
        looping = any(position[dst] <= position[src] for src in order
                      for dst in self._successors(states[src], states))
        lines = ["def parse(f, v, d):", "    n = len(d)", "    pos = 0"]
        nested = None if init is None or self._has_cycle(init, states) else \
            self._nested(init, states, position)
        if nested is not None:
            lines += ["    try:"] + ["        " + line for line in nested]
            lines += self._parser_error_handler()
        elif init is not None:
            lines += ["    st = 0", "    steps = 0" if looping else "", "    try:",
                      "        while True:"]
            if looping:
                timeout = error_code(self.scope, "ParserTimeout")
                lines += ["            steps += 1", f"            if steps > {STATE_VISIT_LIMIT}:",
                          f"                raise _ParserError({timeout})"]
            for name in order:
                body = self._state(states[name], position)
                lines.append(f"            if st == {position[name]}:")
                lines += ["                " + line for line in body]
            lines += ["            break"] + self._parser_error_handler()
        lines += self._verify_checksums()
        lines.append("    return pos")
        return "\n".join(line for line in lines if line != "")

    def _parser_error_handler(self) -> list[str]:
        lines = ["    except _ParserError as exc:"]
        perr = self.layout.std("parser_error")
        lines.append(f"        f[{perr}] = exc.code" if perr is not None else "        pass")
        if self.traced:
            lines.append("        T.parser_error(exc.code)")
        return lines

    def _nested(self, init: str, states: dict, position: dict) -> list[str] | None:
        """A parser without loops as nested code: each transition's branch holds its next
        state's code (a state reached from several states is repeated), so no state variable
        and no dispatch per state. None when that would be too large or too deep."""
        self._inline = (states, [0])
        self._pos, self._synced = 0, True
        try:
            lines = self._inline_state(init, position, 0)
        except _TooLarge:
            return None
        finally:
            self._inline = None
            self._pos, self._synced = None, True
        return lines or ["pass"]

    def _sync(self) -> list[str]:
        """`pos = <constant>` where code that reads `pos` (or raises, ending parsing there)
        follows; from then on the run-time `pos` is the truth."""
        lines = [] if self._synced or self._pos is None else [f"pos = {self._pos}"]
        self._pos, self._synced = None, True
        return lines

    def _inline_state(self, name: str, position: dict, depth: int) -> list[str]:
        states, emitted = self._inline
        if depth > MAX_NESTED_DEPTH:
            raise _TooLarge()
        self._depth = depth
        lines = self._state(states[name], position)
        emitted[0] += len(lines)
        if emitted[0] > MAX_NESTED_LINES:
            raise _TooLarge()
        return lines

    def _has_cycle(self, init: str, states: dict) -> bool:
        """Whether a state can be reached from itself (a state loop; depth-first order also
        calls a state reached from two branches `looping`, which needs no loop)."""
        colour: dict[str, int] = {}          # 1: on the current path, 2: done
        stack = [(init, iter(self._successors(states[init], states)))]
        colour[init] = 1
        while stack:
            name, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[name] = 2
                stack.pop()
            elif colour.get(child) == 1:
                return True
            elif child not in colour:
                colour[child] = 1
                stack.append((child, iter(self._successors(states[child], states))))
        return False

    def _successors(self, snode: Node, states: dict) -> list[str]:
        out = []
        for tnode in snode.get("transitions").items():
            nxt = tnode.get("next_state").opt_str()
            if nxt is not None:
                if nxt not in states:
                    raise tnode["next_state"].error(f"unknown parse state '{nxt}'")
                out.append(nxt)
        return out

    def _depth_first(self, init: str | None, states: dict) -> list[str]:
        order: list[str] = []
        seen: set[str] = set()
        stack = [init] if init is not None else []
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            order.append(name)
            stack += reversed([s for s in self._successors(states[name], states) if s not in seen])
        return order

    # ------------------------------------------------------------------------------- a state
    def _state(self, snode: Node, position: dict) -> list[str]:
        lines = []
        if self.traced:
            lines.append(f"T.parser_state({snode['name'].str()!r})")
        for op in snode.get("parser_ops").items():
            lines += self._op(op)
        lines += self._transition(snode, position)
        return lines

    def _op(self, op: Node) -> list[str]:
        name = op["op"].str()
        params = op.get("parameters").items()
        if name == "extract":
            if len(params) != 1:
                raise op.error("extract takes 1 parameter")
            return self._extract(params[0], None)
        lines = self._other_op(op, name, params)
        if name == "set" and not any(_READS_POS.search(line) for line in lines):
            return lines         # a field assignment: `pos` may stay a constant
        return self._sync() + lines

    def _other_op(self, op: Node, name: str, params: list) -> list[str]:
        if name == "extract_VL":
            if len(params) != 2:
                raise op.error("extract_VL takes 2 parameters")
            return self._extract(params[0], compile_expr(params[1], self.scope))
        if name == "set":
            if len(params) != 2:
                raise op.error("set takes 2 parameters")
            return [store(compile_target(params[0], self.scope),
                          compile_expr(params[1], self.scope))]
        if name == "verify":
            if len(params) != 2:
                raise op.error("verify takes 2 parameters")
            cond = compile_expr(params[0], self.scope)
            err = compile_expr(params[1], self.scope)
            return [f"if not {boolean(cond)}:", f"    raise _ParserError({data(err)})"]
        if name in ("shift", "advance"):
            if len(params) != 1:
                raise op.error(f"{name} takes 1 parameter")
            amount = compile_expr(params[0], self.scope)
            lines = [f"k = {data(amount)}"]
            if name == "advance":       # bits: as simple_switch, only whole bytes, else
                invalid = error_code(self.scope, "ParserInvalidArgument")   # nothing skipped
                lines += ["if k & 7:", f"    raise _ParserError({invalid})", "k >>= 3"]
            # past the end: PacketTooShort, and the bytes not skipped stay as payload
            return lines + ["if k < 0 or pos + k > n:",
                            f"    raise _ParserError({self.too_short})", "pos += k"]
        if name == "primitive":
            if len(params) != 1:
                raise op.error("primitive takes 1 parameter")
            return self.prims.compile_primitive(params[0])
        raise op["op"].error(f"unsupported parser operation '{name}'")

    def _extract(self, target: Node, varbit_length) -> list[str]:
        kind, value = target.type_value()
        if kind == "regular":
            inst = self.layout.header(value.str(), value)
            return self._extract_into(inst, inst.htype, str(inst.index), str(inst.base),
                                      varbit_length, target)
        prefix = self._sync()
        return prefix + self._extract_other(kind, value, varbit_length, target)

    def _extract_other(self, kind: str, value: Node, varbit_length, target: Node) -> list[str]:
        if kind == "stack":
            stack = self.layout.stack(value.str(), value)
            first = stack.headers[0]
            oob = error_code(self.scope, "StackOutOfBounds")
            lines = [f"i = f[{stack.next_slot}]", f"if i >= {stack.size}:",
                     f"    raise _ParserError({oob})"]
            if stack.htype.varbit_index is not None:
                # each element keeps its own varbit length: extract into the one chosen by i
                lines += self._sync()    # before the branches: each reads the run-time `pos`
                for i, element in enumerate(stack.headers):
                    lines.append(f"{'if' if i == 0 else 'elif'} i == {i}:")
                    lines += ["    " + line for line in self._extract_into(
                        element, stack.htype, str(element.index), str(element.base),
                        varbit_length, target)]
            else:
                lines += self._extract_into(None, stack.htype, f"({first.index} + i)",
                                            f"({first.base} + i * {stack.stride})",
                                            varbit_length, target, stack_member=first)
            lines.append(f"f[{stack.next_slot}] = i + 1")
            return lines
        if kind == "union_stack":
            ustack, member = self._union_stack_member(value)
            oob = error_code(self.scope, "StackOutOfBounds")
            lines = [f"i = f[{ustack.next_slot}]", f"if i >= {ustack.size}:",
                     f"    raise _ParserError({oob})"]
            for i, union in enumerate(ustack.unions):   # unions are not laid out with a stride
                inst = self._union_member(union, member)
                lines.append(f"{'if' if i == 0 else 'elif'} i == {i}:")
                lines += ["    " + line for line in self._extract_into(
                    inst, inst.htype, str(inst.index), str(inst.base), varbit_length, target)]
            lines.append(f"f[{ustack.next_slot}] = i + 1")
            return lines
        raise target.error(f"unsupported extract target type '{kind}'")

    def _union_stack_member(self, value: Node):
        """(union stack, member header name in its unions) from [stack name, member name]."""
        name = value[0].str()
        ustack = self.layout.union_stacks.get(name)
        if ustack is None:
            raise value.error(f"unknown header union stack '{name}'")
        member = value[1].str()
        for union in ustack.unions:
            if member not in union.members:
                # members are keyed by header instance name; match on the member suffix
                found = [m for m in union.members if m.endswith("." + member) or m == member]
                if len(found) != 1:
                    raise value.error(f"union stack '{name}' has no member '{member}'")
        return ustack, member

    def _union_member(self, union, member: str):
        if member in union.members:
            return union.members[member]
        return next(inst for m, inst in union.members.items() if m.endswith("." + member))

    def _extract_into(self, inst: HeaderInstance | None, htype: HeaderType, valid: str,
                      base: str, varbit_length, where: Node, stack_member=None) -> list[str]:
        lines = []
        member = inst or stack_member
        if htype.varbit_index is not None:
            if varbit_length is None:
                raise where.error("extracting a header with a variable-length field needs "
                                  "extract_VL")
            widths = [w for _, w, _ in htype.fields]
            max_bits = htype.max_length * 8 if htype.max_length is not None else None
            if inst is None:
                raise where.error("variable-length headers in stacks are not supported")
            lines += self._sync()
            lines.append(f"pos = _extract_varbit(f, v, d, pos, {base}, {widths!r}, "
                         f"{inst.varbit_len_slot}, {valid}, {data(varbit_length)}, {max_bits})")
        else:
            if htype.fixed_bits % 8:
                raise where.error(f"header type '{htype.name}' is {htype.fixed_bits} bits, not "
                                  "a whole number of bytes")
            nbytes = htype.fixed_bits // 8
            at = self._pos       # a constant offset (nested code), or None: `pos`
            here = "pos" if at is None else str(at)
            if at is None:
                lines += [f"if pos + {nbytes} > n:", f"    raise _ParserError({self.too_short})"]
            else:
                synced = self._synced    # the `pos = ...` below is on the error path only
                lines += [f"if n < {at + nbytes}:"] + \
                    ["    " + line for line in self._sync()] + \
                    [f"    raise _ParserError({self.too_short})"]
                self._pos, self._synced = at, synced
            plan = word_plan(htype)
            runs = None if inst is None or self.traced else \
                self.scope.namespace.get("__vector_runs__", {}).get(inst.index)
            if runs:
                lines += extract_lines(runs, self.scope, at)
            elif plan is not None:
                unpack = self.scope.bind("unpack", struct.Struct(plan.fmt).unpack_from)
                end = f"{base} + {len(htype.fields)}" if not base.isdigit() else \
                    str(int(base) + len(htype.fields))
                if plan.direct:
                    lines.append(f"f[{base}:{end}] = {unpack}(d, {here})")
                else:
                    words = [f"_u{k}" for k in range(len(plan.words))]
                    lines.append(f"{', '.join(words)}, = {unpack}(d, {here})")
                    lines.append(f"f[{base}:{end}] = ({', '.join(plan.field_codes(words))},)")
            elif htype.fields:
                span = f"d[pos:pos + {nbytes}]" if at is None else f"d[{at}:{at + nbytes}]"
                lines.append(f"x = int.from_bytes({span}, 'big')")
                lines += split_fields(htype, base, "x")
            lines.append(f"v[{valid}] = 1")
            if at is None:
                lines.append(f"pos += {nbytes}")
            else:
                self._pos, self._synced = at + nbytes, False
        if inst is not None and inst.union:
            for other in self.layout.unions[inst.union].members.values():
                if other is not inst:
                    lines.append(f"v[{other.index}] = 0")
        if self.traced:
            lines.append(f"T.extract({member.name if inst else where.value['value']!r}, "
                         f"{valid})")
        return lines

    def _transition(self, snode: Node, position: dict) -> list[str]:
        key_parts = []
        lines_before: list[str] = []      # `pos = ...` before a lookahead reads it
        for knode in snode.get("transition_key").items():
            kind, value = knode.type_value()
            if kind == "union_stack_field":
                ustack, member = self._union_stack_member(value)
                insts = [self._union_member(u, member) for u in ustack.unions]
                ref = self.layout.field(insts[0].name, value[2].str(), value)
                if ref.width is None or ref.is_valid_bit:
                    raise knode.error("a transition key field needs a fixed width")
                offset = ref.slot - insts[0].base
                slots = tuple(inst.base + offset for inst in insts)
                key_parts.append((Expr(f"f[{slots!r}[f[{ustack.next_slot}] - 1]]", "data",
                                       width=ref.width, signed=ref.signed), ref.width))
                continue
            if kind == "lookahead":
                offset, width = value[0].int(0, MAX_WIDTH), value[1].int(1, MAX_WIDTH)
                synced = self._sync()
                if synced:
                    lines_before.extend(synced)
                key_parts.append((Expr(f"_peek_padded(d, pos, {offset}, {width})", "data",
                                       masked_to=width), width))
                continue
            expr = compile_expr(knode, self.scope)
            width = expr.width
            if width is None:
                raise knode.error("a transition key field needs a fixed width")
            key_parts.append((expr, width))
        lines = lines_before
        if key_parts:
            padded = compressed = ""
            for expr, width in key_parts:
                code = data(expr)
                if expr.signed:
                    code = f"({code} & {(1 << width) - 1})"
                pad = (width + 7) // 8 * 8
                padded = code if not padded else f"(({padded}) << {pad}) | {code}"
                compressed = code if not compressed else f"(({compressed}) << {width}) | {code}"
            lines.append(f"k = {padded}")
            uses_vset = any(t.get("type").value == "parse_vset"
                            for t in snode.get("transitions").items())
            if uses_vset:
                lines.append(f"ck = {compressed}")
        # BMv2 tries the value transitions in order and takes a `default` only when none
        # matches, wherever it stands in the list; with several defaults the last one counts.
        first = True
        default_goto = None
        for tnode in snode.get("transitions").items():
            ttype = tnode.get("type").value
            if ttype is None:  # older p4c: {"value": "default"} or a bare hex value
                ttype = "default" if tnode.get("value").value == "default" else "hexstr"
            if not isinstance(ttype, str):
                raise tnode["type"].error("must be a string")
            nxt = tnode.get("next_state").opt_str()
            saved = self._pos, self._synced    # every branch starts where this state ends
            goto = self._goto(nxt, snode, position)
            self._pos, self._synced = saved
            if ttype == "default":
                default_goto = goto
                continue
            if not key_parts:
                raise tnode.error("a value transition needs a transition key")
            if ttype == "hexstr":
                value = tnode["value"].hexstr()
                if tnode.has("mask"):
                    mask = tnode["mask"].hexstr()
                    cond = f"(k & {mask}) == {value & mask}"
                else:
                    cond = f"k == {value}"
            elif ttype == "parse_vset":
                name = tnode["value"].str()
                vset = self.scope.namespace["__vsets__"].get(name)
                if vset is None:
                    raise tnode["value"].error(f"unknown parse value set '{name}'")
                vmask = (1 << vset.bitwidth) - 1
                if tnode.has("mask"):
                    vmask &= self._compress_mask(tnode["mask"].hexstr(), [w for _, w in key_parts])
                cond = f"{self.scope.bind('vset', vset)}.matches(ck, {vmask})"
            else:
                raise tnode["type"].error(f"unknown transition type '{ttype}'")
            lines.append(f"{'if' if first else 'elif'} {cond}:")
            lines += ["    " + g for g in goto]
            first = False
        if default_goto is not None:
            if first:
                return lines + default_goto
            return lines + ["else:"] + ["    " + g for g in default_goto]
        # BMv2 ends parsing without an error when nothing matches and there is no default
        # (p4c does not add P4_16's implicit NoMatch for BMv2); NoMatch only comes from an
        # explicit verify.
        if self._inline is not None:
            end = self._sync() or ["pass"]
        else:
            end = ["break"]
        lines += ["else:"] + ["    " + e for e in end] if not first else end
        return lines

    @staticmethod
    def _compress_mask(padded_mask: int, widths: list[int]) -> int:
        out = 0
        shift = sum((w + 7) // 8 * 8 for w in widths)
        for w in widths:
            shift -= (w + 7) // 8 * 8
            out = (out << w) | ((padded_mask >> shift) & ((1 << w) - 1))
        return out

    def _goto(self, nxt: str | None, snode: Node, position: dict) -> list[str]:
        if self._inline is not None:        # nested code: the next state's code in place
            if nxt is None:
                return self._sync() or ["pass"]
            if nxt not in self._inline[0]:
                raise snode.error(f"unknown parse state '{nxt}'")
            depth = self._depth
            lines = self._inline_state(nxt, position, depth + 1)
            self._depth = depth
            return lines or ["pass"]
        if nxt is None:
            return ["break"]
        if nxt not in position:
            raise snode.error(f"unknown parse state '{nxt}'")
        here = position[snode["name"].str()]
        there = position[nxt]
        return [f"st = {there}"] + (["continue"] if there <= here else [])

    def _checksum_test(self, calc: str, indent: str, received: str) -> list[str]:
        """`if <computed> != <received>:`, the calculation's whole output against the field
        (simple_switch compares the two numbers: a 16-bit sum never equals an 8-bit field's
        value unless it fits). A checksum that is a plain sum of terms (calcgen's Internet
        checksum) is summed right here: no call, no payload slice."""
        structure = self.scope.namespace.get(SUM_TERMS, {}).get(calc)
        if structure is None:
            return [f"{indent}if {calc}(f, v, d[pos:]) != {received}:"]
        lines = [f"{indent}_cs = 0"]
        for index, terms in structure:
            add = f"_cs += {' + '.join(terms)}"
            lines += [f"{indent}{add}"] if index is None else \
                [f"{indent}if v[{index}]:", f"{indent}    {add}"]
        return lines + [f"{indent}if (65535 if not _cs else ~(_cs % 65535 or 65535) & 65535) "
                        f"!= {received}:"]

    def _verify_checksums(self) -> list[str]:
        lines = []
        ck_err = self.layout.std("checksum_error")
        for node, calc in self.checksums:
            target = self.layout.field(node["target"][0].str(), node["target"][1].str(),
                                       node["target"])
            if target.width is None or target.is_valid_bit:
                raise node["target"].error("a checksum target must be a fixed-width field")
            mask = (1 << target.width) - 1
            # simple_switch verifies only while the target's header is valid, then the condition
            tests = [] if target.header.metadata else [f"v[{target.header.index}]"]
            if node.has("if_cond"):
                tests.append(f"({boolean(compile_expr(node['if_cond'], self.scope))})")
            indent = "    "
            if tests:
                lines.append(f"    if {' and '.join(tests)}:")
                indent = "        "
            lines += self._checksum_test(calc, indent, f"f[{target.slot}] & {mask}")
            if ck_err is not None:
                lines.append(f"{indent}    f[{ck_err}] = 1")
            else:
                lines.append(f"{indent}    pass")
            if self.traced:
                lines.append(f"{indent}    T.checksum_error({node['name'].value!r})")
        return lines
