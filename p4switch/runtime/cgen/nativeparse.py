"""The parser as C (part of the native packet code, next to `nativegen.py`'s controls).

Only parsers that parsergen would lay out as nested code are translated: no state loops,
headers of whole bytes with fields of at most 64 bits (unsigned), extracted by name (no stacks,
unions or varbit fields), `set` and `verify` operations, and transition keys of fields compared
with values and masks (no lookahead, no value sets). Anything else keeps the Python parser
(`Untranslatable`). Semantics are parsergen's: a header that runs past the packet's end stops
parsing with PacketTooShort in `standard_metadata.parser_error` and the payload starting where
that header would have; BMv2 takes the `default` transition only when no value matches; no
match and no default ends parsing without an error. Lane vectors (vheaders.py) are read into
fresh arrays of their storage type. The verify checksums run afterwards as the Python parser
runs them (a callback of its own lines), since they read the fields the parse just wrote.
"""

from __future__ import annotations

from ..config import Node
from ..pygen.exprgen import CodeScope
from ..pygen.parsergen import ParserCompiler, error_code
from .nativeexpr import (RUN_TYPENUMS, ExprTranslator, Untranslatable, _Block,
                         calculation_groups, run_ctype)
from .nativegen import PHV_LOCALS, NativeGenerator


class ParserTranslator:
    def __init__(self, gen: NativeGenerator, parser: Node, checksums: list, scope: CodeScope,
                 calculations: dict | None = None):
        self.gen = gen
        self.checksums = checksums
        self.calculations = calculations or {}
        self.node = parser
        self.scope = CodeScope(scope.layout, scope.namespace, None, in_parser=True)
        self.layout = scope.layout
        self.python = ParserCompiler(parser, checksums, scope, False)
        self.too_short = error_code(self.scope, "PacketTooShort")
        self.runs = scope.namespace.get("__vector_runs__") or {}
        self._depth = 0

    def compile(self) -> str:
        states = {}
        for snode in self.node["parse_states"].items():
            states[snode["name"].str()] = snode
        init = self.node["init_state"].opt_str()
        if init is None or self.python._has_cycle(init, states):
            raise Untranslatable("a parser with state loops")
        self.states = states
        body = self._state(init, 0)
        perr = self.layout.std("parser_error")
        on_error = [f"PF[{perr}] = (u64)err;"] if perr is not None else []
        try:
            after = [line for node, _ in self.checksums for line in self._verify_c(node)]
        except Untranslatable:
            after = []
            verify = self.python._verify_checksums()
            if verify:
                cb = self.gen.callback("f, v, d, pos", ["n = len(d)"] + [v[4:] for v in verify])
                after = [f"if (call_verify({cb}, P, d, pos)) goto fail;"]
        return "\n".join([
            "static Py_ssize_t parse_impl(PyObject *S, Phv *P, PyObject *d) {",
            "    " + PHV_LOCALS,
            "    PyObject *p = NULL;",
            "    Py_buffer D; const uint8_t *b; Py_ssize_t n, pos = 0; long err = 0;",
            "    (void)p;",
            "    if (PyObject_GetBuffer(d, &D, PyBUF_SIMPLE) < 0) return -1;",
            "    b = (const uint8_t *)D.buf; n = D.len;",
        ] + ["    " + line for line in body] + [
            "    goto parsed;",
            "error:",
        ] + ["    " + line for line in on_error] + [
            "parsed:",
            "    PyBuffer_Release(&D);",
            "    D.obj = NULL;",
        ] + ["    " + line for line in after] + [
            "    return pos;",
            "fail:",
            "    if (D.obj != NULL) PyBuffer_Release(&D);",
            "    return -1;",
            "}"])

    def _verify_c(self, node: Node) -> list[str]:
        """An Internet checksum (csum16) verified in C (see `checksum_c`); a mismatch sets
        checksum_error."""
        block = _Block(self.gen, None)
        ex = ExprTranslator(self.scope, block)
        ref, body = checksum_c(node, self.calculations, self.layout, block)
        mask = (1 << ref.width) - 1
        target = block.slot(ref.slot)
        ck_err = self.layout.std("checksum_error")
        mismatch = f"PF[{ck_err}] = 1;" if ck_err is not None else ";"
        # the whole sum against the field (parsergen's `_checksum_test`)
        body += [f"if (cs_result(cs_sum) != ({target} & {mask}ULL)) {{ {mismatch} }}"]
        # only while the target's header is valid, then under the condition (simple_switch)
        tests = [] if ref.header.metadata else [block.valid(ref.header.index)]
        if node.has("if_cond"):
            tests.append(ex.truth(node["if_cond"]))
        if tests:
            body = [f"if ({' && '.join(f'({t})' for t in tests)}) {{"] + \
                ["    " + b for b in body] + ["}"]
        return block.wrap(["{"] + ["    " + b for b in body] + ["}"])

    # ---------------------------------------------------------------------------- states
    def _state(self, name: str, depth: int) -> list[str]:
        if depth > 40:
            raise Untranslatable("a parser path too deep")
        snode = self.states[name]
        lines = []
        for op in snode.get("parser_ops").items():
            lines += self._op(op)
        return lines + self._transition(snode, depth)

    def _op(self, op: Node) -> list[str]:
        name = op["op"].str()
        params = op.get("parameters").items()
        if name == "extract" and len(params) == 1:
            kind, value = params[0].type_value()
            if kind != "regular":
                raise Untranslatable(f"extracting a {kind}")
            return self._extract(self.layout.header(value.str(), value))
        if name == "set" and len(params) == 2:
            block = _Block(self.gen, None)
            target = self.gen._target(params[0], self.scope)
            value = ExprTranslator(self.scope, block).value(params[1])
            return block.wrap([block.store(target[0], target[1], value)])
        if name == "verify" and len(params) == 2:
            block = _Block(self.gen, None)
            ex = ExprTranslator(self.scope, block)
            cond, code = ex.truth(params[0]), ex.value(params[1])
            return block.wrap([f"if (!{cond}) {{ err = (long){code.code}; goto error; }}"])
        raise Untranslatable(f"parser operation '{name}'")

    def _extract(self, inst) -> list[str]:
        htype = inst.htype
        if htype.varbit_index is not None or htype.fixed_bits % 8 or inst.union or \
                any(w > 64 or signed for _, w, signed in htype.fields):
            raise Untranslatable("a varbit, union, signed or wide header")
        nbytes = htype.fixed_bits // 8
        lines = [f"if (pos + {nbytes} > n) {{ err = {self.too_short}; goto error; }}"]
        runs = {run.first: run for run in self.runs.get(inst.index, [])}
        bit = 0
        slot = inst.base
        for i, (_, width, _) in enumerate(htype.fields):
            run = runs.get(slot)
            if run is not None:
                if run.signed or run.first not in self.gen.run_of:
                    raise Untranslatable("a lane vector C does not hold")
                if bit % 8:
                    raise Untranslatable("a lane vector off a byte boundary")
                ctype = run_ctype(run)
                lines.append(f"if (run_from_wire(f, {slot}, b + pos + {bit // 8}, "
                             f"{run.count}, {RUN_TYPENUMS[ctype]}, {run.width // 8})) "
                             "goto fail;")
            elif self.gen.run_of.get(slot) is not None or slot in self.gen.vector_slots:
                pass                    # inside a run: the array holds it
            elif bit % 8 == 0 and width % 8 == 0:
                lines.append(f"PF[{slot}] = be_field(b + pos + {bit // 8}, {width // 8});")
            else:
                lines.append(f"PF[{slot}] = field_bits(b + pos, {bit}, {width});")
            bit += width
            slot += 1
        lines += [f"PV[{inst.index}] = 1;", f"pos += {nbytes};"]
        return lines

    def _transition(self, snode: Node, depth: int) -> list[str]:
        block = _Block(self.gen, None)
        parts = []
        padded_width = 0
        for knode in snode.get("transition_key").items():
            kind, value = knode.type_value()
            if kind != "field":
                raise Untranslatable(f"a transition key of a {kind}")
            ref = self.layout.field(value[0].str(), value[1].str(), value)
            if ref.is_valid_bit or ref.width is None or ref.signed or ref.width > 64:
                raise Untranslatable("a transition key that is not a plain field")
            pad = (ref.width + 7) // 8 * 8
            parts.append((block.slot(ref.slot), pad))
            padded_width += pad
        if padded_width > 64:
            raise Untranslatable("a transition key wider than 64 bits")
        key = ""
        for code, pad in parts:
            key = code if not key else f"((({key}) << {pad}) | {code})"
        lines = []
        default = None
        branches = []
        for tnode in snode.get("transitions").items():
            ttype = tnode.get("type").value
            if ttype is None:
                ttype = "default" if tnode.get("value").value == "default" else "hexstr"
            nxt = tnode.get("next_state").opt_str()
            if ttype == "default":
                default = nxt
                continue
            if ttype != "hexstr" or not parts:
                raise Untranslatable(f"a transition of type {ttype}")
            value = tnode["value"].hexstr()
            if tnode.has("mask"):
                mask = tnode["mask"].hexstr()
                cond = f"(k & {mask & ((1 << 64) - 1)}ULL) == {value & mask}ULL"
                if mask >> 64 or (value & mask) >> 64:
                    raise Untranslatable("a transition value wider than 64 bits")
            else:
                if value >> 64:
                    cond = "0"
                else:
                    cond = f"k == {value}ULL"
            branches.append((cond, nxt))
        chain = []
        for i, (cond, nxt) in enumerate(branches):
            chain.append(f"{'if' if i == 0 else '} else if'} ({cond}) {{")
            chain += ["    " + line for line in self._goto(nxt, depth)]
        if branches:
            chain.append("} else {")
            chain += ["    " + line for line in self._goto(default, depth)]
            chain.append("}")
        else:
            chain += self._goto(default, depth)
        if not branches:
            return lines + chain
        return ["{ u64 k;"] + ["    " + c for c in block.wrap([f"k = {key};"]) + chain] + ["}"]

    def _goto(self, nxt: str | None, depth: int) -> list[str]:
        if nxt is None:
            return ["goto parsed;"]
        return self._state(nxt, depth + 1)


def checksum_c(node: Node, calculations: dict, layout, block: _Block) -> tuple:
    """(the checksum's target field, C lines leaving in `cs_sum` a sum congruent to its
    calculation's 16-bit words' sum modulo 0xFFFF, zero only when they all are) for a csum16
    over fields and constants, as calcgen computes it: the inputs packed MSB-first, fields of
    invalid headers left out, zero-padded to 16-bit words. Each input is one `cs_term`, placed
    by the bits before it: a constant while every header left out before it is whole words
    long, else counted at run time (`cs_n`)."""
    calc = calculations.get(node["calculation"].str())
    if calc is None or calc["algo"].str() != "csum16":
        raise Untranslatable("a checksum other than csum16")
    ref = layout.field(node["target"][0].str(), node["target"][1].str(), node["target"])
    if ref.is_valid_bit or ref.width is None or ref.width > 64 or ref.signed:
        raise Untranslatable("a checksum target that is not a plain field")
    groups = calculation_groups(calc, layout, block)
    body = ["u64 cs_sum = 0;"]
    counted = False             # the bits before the group are counted at run time
    before = 0                  # else: how many there are
    for header, parts in groups:
        gated = header is not None and not header.metadata
        bits = sum(width for _, width in parts)
        if gated and bits % 16 and not counted:
            body.append(f"unsigned cs_n = {before % 16};")
            counted = True
        lines, end = [], 0
        for code, width in parts:
            end += width
            place = f"cs_n + {end}" if counted else f"{(before + end) % 16}"
            lines.append(f"cs_sum += cs_term({code}, {width}, {place});")
        if counted and bits % 16:
            lines.append(f"cs_n += {bits % 16};")
        if gated:
            body += [f"if ({block.valid(header.index)}) {{"] + ["    " + x for x in lines] + ["}"]
        else:
            body += lines
        before += bits
    return ref, body
