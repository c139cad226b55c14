"""The C statements and expressions of the native packet code (`nativegen.py`): a block of
statements over the PHV lists with fields in C locals (`_Block`), and BMv2 JSON expressions as
C whose values are exact modulo 2**64 (`ExprTranslator`; the rules in nativegen's docstring)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Node
from ..pygen.exprgen import CodeScope, compile_expr

U64 = (1 << 64) - 1


class Untranslatable(Exception):
    """This construct has no C form here (the statement becomes a callback, or, where no
    callback can stand in, the control stays Python)."""


@dataclass
class CVal:
    code: str
    bits: int | None       # the unbounded value is in [0, 2**bits); None: unknown

    @property
    def exact(self) -> bool:
        return self.bits is not None and self.bits <= 64


def _need_exact(value: CVal) -> str:
    if not value.exact:
        raise Untranslatable("a value that may not fit 64 bits is compared or tested")
    return value.code


class _Block:
    """A stretch of C statements with no Python in between: the fields, flags and action data
    it touches are read once into C locals at its start (from the PHV's words `PF`/`PV`) and
    the fields it wrote are stored back at its end; a lane vector it reads is read through a
    pointer into its array, one it writes is first copied into a new array (the PHV never
    changes an array in place: multicast copies share them), which replaces the old one at
    the end; register banks are written in place, as the lane code does."""

    def __init__(self, gen: "NativeGenerator", param_widths: list[int] | None):
        self.gen = gen
        self.param_widths = param_widths
        self.fields: set[int] = set()
        self.written: set[int] = set()
        self.flags: set[int] = set()
        self.params: set[int] = set()
        self.runs: dict[int, tuple] = {}        # run.first -> (run, written)
        self.banks: dict[str, tuple] = {}       # C name -> (state code, array)

    # --------------------------------------------------------------------------- reading
    def slot(self, index: int) -> str:
        run = self.gen.run_of.get(index)
        if run is None and index in self.gen.vector_slots:
            raise Untranslatable("a lane vector of a kind C does not hold")
        if run is not None:
            self.runs.setdefault(run.first, (run, False))
            return f"((u64)RUN{run.first}[{index - run.first}])"
        self.fields.add(index)
        return f"F{index}"

    def valid(self, index: int) -> str:
        self.flags.add(index)
        return f"V{index}"

    def param(self, index: int) -> str:
        self.params.add(index)
        return f"P{index}"

    def save(self) -> tuple:
        return (set(self.fields), set(self.written), set(self.flags), set(self.params),
                dict(self.runs), dict(self.banks))

    def restore(self, saved: tuple) -> None:
        (self.fields, self.written, self.flags, self.params, self.runs,
         self.banks) = (set(saved[0]), set(saved[1]), set(saved[2]), set(saved[3]),
                        dict(saved[4]), dict(saved[5]))

    # --------------------------------------------------------------------------- writing
    def store(self, index: int, width: int, value: "CVal") -> str:
        code = _masked(value, width)
        run = self.gen.run_of.get(index)
        if run is not None:
            self.runs[run.first] = (run, True)
            return f"RUN{run.first}[{index - run.first}] = ({run_ctype(run)}){code};"
        self.fields.add(index)
        self.written.add(index)
        return f"F{index} = {code};"

    def bank_cell(self, register, index_code: str) -> str:
        """C lvalue of `register`'s cell at `index_code` (a checked index) in its bank."""
        return self.array_cell(register.cells.array, register.cells.column, index_code)

    def array_cell(self, array, column: int, index_code: str) -> str:
        """C lvalue of row `index_code` (a checked index), column `column` of a C-contiguous
        2-D state array (a register bank, a counter's cells)."""
        bound = self.gen.scope.bind("bank", array)
        self.gen.state(bound)
        index = self.gen.state_names.index(bound)
        name = f"BK{index}"
        self.gen.bank_specs[bound] = (array.shape[0], array.shape[1],
                                      RUN_TYPENUMS[BANK_CTYPES[array.dtype.str[1:]]])
        self.banks[name] = (index, array)
        return f"{name}[({index_code}) * {array.shape[1]} + {column}]"

    # ------------------------------------------------------------------------ the C block
    def wrap(self, body: list[str]) -> list[str]:
        if not (self.fields or self.flags or self.params or self.runs or self.banks):
            return body
        decl, load, end = [], [], []
        if self.fields:
            decl.append("u64 " + ", ".join(f"F{i}" for i in sorted(self.fields)) + ";")
            load += [f"F{i} = PF[{i}];" for i in sorted(self.fields)]
        if self.flags:
            decl.append("u64 " + ", ".join(f"V{i}" for i in sorted(self.flags)) + ";")
            load += [f"V{i} = PV[{i}];" for i in sorted(self.flags)]
        params = []
        if self.params:
            decl.append("u64 " + ", ".join(f"P{i}" for i in sorted(self.params)) + ";")
            params = [f"rdpn(p, PD, PN, {i}, &P{i})" for i in sorted(self.params)]
        lines = ["{"] + ["    " + d for d in decl] + ["    " + x for x in load]
        if params:
            lines.append(f"    if ({' || '.join(params)}) goto fail;")
        for first, (run, written) in sorted(self.runs.items()):
            ctype, typenum = run_ctype(run), RUN_TYPENUMS[run_ctype(run)]
            lines.append(f"    {ctype} *RUN{first};")
            if written:
                lines += [f"    PyObject *RO{first};",
                          f"    if (run_copy(f, {first}, {run.count}, {typenum}, sizeof({ctype}), "
                          f"&RO{first}, (void **)&RUN{first})) goto fail;"]
                end.append(f"run_store(f, {first}, RO{first});")
            else:
                lines.append(f"    if (run_view(f, {first}, {run.count}, {typenum}, "
                             f"(void **)&RUN{first})) goto fail;")
        for name, (index, array) in sorted(self.banks.items()):
            ctype = BANK_CTYPES[array.dtype.str[1:]]      # checked when bound (`bank_table`)
            lines.append(f"    {ctype} *{name} = ({ctype} *)BANKS(S)[{index}];")
        lines += ["    " + b for b in body]
        lines += [f"    PF[{i}] = F{i};" for i in sorted(self.written)]
        lines += ["    " + e for e in end]
        return lines + ["}"]


RUN_TYPENUMS = {"uint8_t": "NPY_UINT8", "uint16_t": "NPY_UINT16", "uint32_t": "NPY_UINT32",
                "int64_t": "NPY_INT64", "uint64_t": "NPY_UINT64"}
BANK_CTYPES = {"u1": "uint8_t", "u2": "uint16_t", "u4": "uint32_t", "i8": "int64_t",
               "u8": "uint64_t"}


def run_ctype(run) -> str:
    return {8: "uint8_t", 16: "uint16_t", 32: "uint32_t"}[run.width] if run.narrow \
        else "int64_t"


def _const(value: int) -> CVal:
    if value >= 0:
        if value > U64:
            return CVal(f"(u64){value & U64}ULL", value.bit_length())
        return CVal(f"{value}ULL", value.bit_length())
    return CVal(f"(u64){value & U64}ULL", None)


class ExprTranslator:
    """BMv2 JSON expressions as C over the statement's loads."""

    def __init__(self, scope: CodeScope, stmt: "_Block"):
        self.scope = scope
        self.layout = scope.layout
        self.stmt = stmt

    def value(self, node: Node) -> CVal:
        kind, value = node.type_value()
        if kind == "field":
            ref = self.layout.field(value[0].str(), value[1].str(), value)
            if ref.is_valid_bit:
                return CVal(self.stmt.valid(ref.header.index), 1)
            if ref.signed or ref.width is None or ref.width > 64:
                raise Untranslatable("a signed, varbit or wide field")
            return CVal(self.stmt.slot(ref.slot), ref.width)
        if kind == "hexstr":
            return _const(value.hexstr())
        if kind == "bool":
            return CVal("1" if value.bool() else "0", 1)
        if kind in ("runtime_data", "local"):
            idx = value.int()
            widths = self.stmt.param_widths
            if widths is None or idx >= len(widths) or widths[idx] > 64:
                raise Untranslatable("action data out of range or wider than 64 bits")
            return CVal(self.stmt.param(idx), widths[idx])
        if kind == "expression":
            if isinstance(value.value, dict) and "op" not in value.value and \
                    "type" in value.value:
                return self.value(value)
            return self._op(value)
        raise Untranslatable(f"operand type '{kind}'")

    def truth(self, node: Node) -> str:
        return _need_exact(self.value(node))

    def _op(self, node: Node) -> CVal:
        op = node["op"].str()
        op = {"data_to_bool": "d2b", "bool_to_data": "b2d"}.get(op, op)
        left, right = node.get("left"), node.get("right")
        if op in ("+", "*", "&", "|", "^", "-") and left.value is not None:
            a, b = self.value(left), self.value(right)
            code = f"({a.code} {op} {b.code})"
            if op == "+":
                bits = max(a.bits, b.bits) + 1 if a.bits is not None and b.bits is not None \
                    else None
            elif op == "*":
                bits = a.bits + b.bits if a.bits is not None and b.bits is not None else None
            elif op == "&":
                known = [x.bits for x in (a, b) if x.bits is not None]
                bits = min(known) if known else None
            elif op in ("|", "^"):
                bits = max(a.bits, b.bits) if a.bits is not None and b.bits is not None \
                    else None
            else:
                bits = None
            return CVal(code, bits)
        if op == "-":           # unary minus
            a = self.value(right)
            return CVal(f"(0ULL - {a.code})", None)
        if op == "~":
            a = self.value(right)
            return CVal(f"(~{a.code})", None)
        if op == "<<":
            a, s = self.value(left), self.value(right)
            amount = _need_exact(s)
            if s.bits is not None and s.bits <= 6:
                code = f"({a.code} << {amount})"
            else:
                code = f"shl({a.code}, {amount})"
            const = _literal(s)
            if a.bits is None:
                bits = None
            elif const is not None:
                bits = a.bits + const
            else:
                bits = a.bits + (1 << s.bits) - 1 if s.bits < 16 else None
            return CVal(code, bits)
        if op == ">>":
            a, s = self.value(left), self.value(right)
            amount = _need_exact(s)
            code = f"({_need_exact(a)} >> {amount})" if s.bits <= 6 else \
                f"shr({_need_exact(a)}, {amount})"
            return CVal(code, a.bits)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            a, b = self.value(left), self.value(right)
            return CVal(f"({_need_exact(a)} {op} {_need_exact(b)})", 1)
        if op in ("and", "or"):
            a, b = self.value(left), self.value(right)
            c = "&&" if op == "and" else "||"
            return CVal(f"({_need_exact(a)} {c} {_need_exact(b)})", 1)
        if op == "not":
            return CVal(f"(!{_need_exact(self.value(right))})", 1)
        if op == "d2b":
            return CVal(f"({_need_exact(self.value(right))} != 0)", 1)
        if op == "b2d":
            a = self.value(right)
            return CVal(f"({_need_exact(a)} != 0)", 1)
        if op == "valid":
            expr = compile_expr(right, self.scope)
            if expr.kind != "header" or expr.ref.static is None:
                raise Untranslatable("validity of a header chosen at run time")
            return CVal(self.stmt.valid(expr.ref.static.index), 1)
        if op == "?":
            cond = self.truth(node["cond"])
            a, b = self.value(left), self.value(right)
            bits = max(a.bits, b.bits) if a.bits is not None and b.bits is not None else None
            return CVal(f"({cond} ? {a.code} : {b.code})", bits)
        raise Untranslatable(f"operator '{op}'")


def _literal(value: CVal) -> int | None:
    text = value.code
    if text.endswith("ULL") and text[:-3].isdigit():
        return int(text[:-3])
    return None


def _masked(value: CVal, width: int) -> str:
    if value.bits is not None and value.bits <= width:
        return value.code
    return f"({value.code} & {(1 << width) - 1}ULL)"


def calculation_groups(calc: Node, layout, block: "_Block") -> list[tuple]:
    """A calculation's inputs as calcgen packs them: [(header or None, [(C code, width)])],
    a header's fields counted only while it is valid (a metadata header's always); inputs C
    does not hold (varbit, signed or wider than 64 bits, the payload) are Untranslatable."""
    groups: list[tuple] = []        # (header or None, [(code, width)])
    for item in calc.get("input").items():
        kind, value = item.type_value()
        if kind == "field":
            fref = layout.field(value[0].str(), value[1].str(), value)
            if fref.width is None or fref.signed or fref.width > 64:
                raise Untranslatable("a varbit, signed or wide calculation input")
            code = block.valid(fref.header.index) if fref.is_valid_bit else \
                block.slot(fref.slot)
            parts = [(code, fref.width)]
            header = fref.header
        elif kind == "header":
            header = layout.header(value.str(), value)
            parts = []
            for i, (_, width, signed) in enumerate(header.htype.fields):
                if width is None or signed or width > 64:
                    raise Untranslatable("a varbit, signed or wide calculation input")
                parts.append((block.slot(header.base + i), width))
        elif kind == "hexstr":
            width = item["bitwidth"].int()
            if width > 64:
                raise Untranslatable("a wide constant calculation input")
            header, parts = None, [(f"{value.hexstr() & ((1 << width) - 1)}ULL", width)]
        else:
            raise Untranslatable(f"a calculation input of type {kind}")
        if groups and groups[-1][0] is header:
            groups[-1][1].extend(parts)
        else:
            groups.append((header, parts))
    return groups


def gated_lines(groups: list[tuple], block: "_Block", push) -> list[str]:
    """C lines feeding a calculation's inputs (`calculation_groups`) to `push(code, width)`
    (a line each): a header's under its validity flag, a metadata header's and constants
    always."""
    lines: list[str] = []
    for header, parts in groups:
        pushes = [push(code, width) for code, width in parts]
        if header is not None and not header.metadata:
            lines += [f"if ({block.valid(header.index)}) {{"] + ["    " + p for p in pushes] + \
                ["}"]
        else:
            lines += pushes
    return lines
