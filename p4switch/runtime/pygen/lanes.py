"""Lane groups as numpy code: a run of k isomorphic per-lane statements (`lanegroups.py`
finds them) becomes a few numpy operations over the k lanes at once, whatever k is.

Registers of a group live in a `regbanks.RegisterBank` (row `idx` is one vector); lane fields
are read from and written to the PHV as a list slice converted to an array, or, for a vector
run (`vheaders.py`), as the array the PHV already holds. Each template statement becomes one
numpy statement. Anything without a vector form (another primitive, an operand kind or
operator numpy cannot do exactly, values that could exceed int64) leaves the primitives to the
scalar compiler, which is always correct. The generated code tests the index once: in range,
the vector statements; out of range, the same statements without the register accesses
(BMv2: a read leaves its destination unchanged, a write does nothing). Values follow BMv2:
unbounded arithmetic (int64 here, with bounds proved at load time) truncated to the width of
whatever stores them.

Narrow lanes: where every value a group stores into a W-bit unsigned register or field is
computed only through operations that are exact modulo 2**W (+ - * & | ^ ~ <<, selects; and
comparisons, >>, max/min only of values known exact), the group's banks and vector runs hold
native uint<W> arrays (W = 8, 16, 32) and the arithmetic wraps there: no int64 conversion when
a packet is parsed and no mask after an add. `bank_registers` tries every group both ways and
keeps int64 for whatever a group that needs exact values touches. Each value's code knows its
numpy dtype (`_Val.narrow`) and whether it is the exact value or only right modulo
2**`modbits`; anything that would need the exact value of a wrapped one is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..config import ConfigError, Node
from ..phv.vheaders import NARROW_TYPES, all_runs
from ..state.regbanks import NARROW_DTYPES, RegisterBank, narrow_dtype
from .exprgen import CodeScope, compile_expr, data
from .lanegroups import LaneGroup, _diamonds, _same_bank, _slot, find_groups, reduction

__all__ = ["ENABLED", "LANE_HELPERS", "LaneGroup", "VectorCompiler", "bank_registers",
           "find_groups"]

ENABLED = True        # tests turn it off to compare with the scalar code
MAX_BITS = 62         # every intermediate value must fit in int64 with room to spare
# ---------------------------------------------------------------------------- register banks
class LaneRuns(list):
    """The lane field runs (lists of slots) of the vectorisable groups, and the slots every
    group using them would also compute narrow (vheaders.candidate_runs reads both)."""

    narrow_slots: frozenset = frozenset()


def bank_registers(actions, registers: dict, layout) -> LaneRuns:
    """Group the lane registers of every vectorisable lane group into banks (before codegen),
    so that scalar code and the control plane never pay for a bank no vector code uses, and
    make a bank narrow (its registers' unsigned width) when every group using it compiles
    with narrow storage. Returns the groups' lane field runs (slots), the candidates for
    vector headers, with the slots that may be narrow."""
    runs = LaneRuns()
    if not ENABLED:
        return runs
    banks: list[RegisterBank] = []
    wide_regs: set[str] = set()
    wide_slots: set[int] = set()
    for action in actions:
        prims = action.node.get("primitives").items()
        scope = CodeScope(layout, {"__registers__": registers}, action.param_widths)
        for group in find_groups(prims, layout, registers):
            if VectorCompiler(group, scope, _counter(), dry_run=True).compile() is None:
                continue
            runs += group.lane_fields.values()
            # with every storage that could be narrow narrow: a group that passes then also
            # passes with any subset narrow (fewer wrapped values), so vetoes need no rounds
            if VectorCompiler(group, scope, _counter(), dry_run=True,
                              assume_narrow=True).compile() is None:
                wide_regs.update(n for names in group.lane_regs.values() for n in names)
                wide_slots.update(s for slots in group.lane_fields.values() for s in slots)
            for names in group.lane_regs.values():
                regs = [registers[n] for n in names]
                if RegisterBank.fits(regs):
                    banks.append(RegisterBank(regs))
    for bank in banks:
        dtype = narrow_dtype(bank.bitwidth)
        if dtype is not None and wide_regs.isdisjoint(bank.names):
            bank.retype(dtype)
    runs.narrow_slots = frozenset(s for slots in runs for s in slots) - wide_slots
    return runs


def _counter():
    count = [0]

    def tmp() -> str:
        count[0] += 1
        return str(count[0])
    return tmp


# ------------------------------------------------------------------------------- vector code
class _Unsupported(Exception):
    pass


@dataclass
class _Val:
    code: str
    bits: int            # |value| < 2**bits
    nonneg: bool
    vector: bool
    boolean: bool = False
    array: bool = False      # certainly a 1-d ndarray (not an int or 0-d stand-in)
    cmp: tuple | None = None  # a comparison: (op, left code, right code)
    narrow: int = 0          # W: a native uint<W> numpy value (wraps); 0: int64 or Python int
    modbits: int = 0         # 0: the exact value; M: only right modulo 2**M (bits: its bound)


class VectorCompiler:
    """Numpy code for one lane group, over `f` (PHV list), `p` (action data) and banks."""

    def __init__(self, group: LaneGroup, scope, tmp, dry_run: bool = False,
                 assume_narrow: bool = False) -> None:
        self.dry_run = dry_run  # check that every statement has a vector form; no banks yet
        self.assume_narrow = assume_narrow  # dry run: all banks and runs that may be narrow
        self.group = group
        self.scope = scope
        self.layout = scope.layout
        self.tmp = tmp          # fresh local names from the primitive compiler

    def compile(self) -> list[str] | None:
        try:
            return self._compile()
        except (_Unsupported, ConfigError):
            return None

    def _compile(self) -> list[str]:
        group = self.group
        regs = self.scope.namespace["__registers__"]
        self.banks: dict[str, tuple[str, int, int, int]] = {}   # copy-0 reg -> bank info
        for reg0, names in group.lane_regs.items():
            if self.dry_run:
                width = regs[names[0]].bitwidth
                narrow = width if self.assume_narrow and width in NARROW_DTYPES else 0
                self.banks[reg0] = ("bank", 0, -1, width, narrow)
                continue
            cells = [regs[n].cells for n in names]
            if not _same_bank([regs[n] for n in names]):
                raise _Unsupported()
            array = cells[0].array
            first = cells[0].column
            whole = first == 0 and len(names) == array.shape[1]
            name = self.scope.bind("bank", array)
            narrow = array.dtype.itemsize * 8 if array.dtype.kind == "u" else 0
            self.banks[reg0] = (name, first, first + len(names) if not whole else -1,
                                regs[names[0]].bitwidth, narrow)
        index_line, check = [], "True"
        index_node = self._index_node()
        if index_node is not None:
            size = regs[group.lane_regs[next(iter(group.lane_regs))][0]].size
            expr = compile_expr(Node(index_node, "lanes"), self.scope)
            self.index = f"_vi{self.tmp()}"
            index_line = [f"{self.index} = {data(expr)}"]
            low = "" if expr.masked_to is not None else f"0 <= {self.index} and "
            check = f"{low}{self.index} < {size}"
        inside = self._statements(in_range=True)
        if check == "True":
            return index_line + inside
        outside = self._statements(in_range=False)
        return index_line + [f"if {check}:"] + _indent(inside) + ["else:"] + _indent(outside)

    def _index_node(self):
        for prim in self.group.template:
            params = prim.get("parameters") or []
            if prim["op"] == "register_read":
                return params[2]
            if prim["op"] == "register_write":
                return params[1]
        return None

    # -- statements
    def _statements(self, in_range: bool) -> list[str]:
        self.env: dict[tuple, _Val] = {}
        self.loaded: dict[tuple, _Val] = {}
        self.views: list[int] = []
        lines: list[str] = []
        self.lines = lines
        written: list[tuple] = []
        for item in _diamonds(self.group.template):
            if isinstance(item, tuple):
                written += self._diamond(*item)
                continue
            params = item["parameters"]
            op = item["op"]
            if op in ("assign", "modify_field"):
                target = tuple(params[0]["value"])
                if target in self.group.accumulators:
                    self._accumulate(item)
                    written.append(target)
                    continue
                value = self._store_value(self._expr(params[1]), target)
                self._bind(target, value)
                written.append(target)
            elif op == "register_read":
                if not in_range:
                    continue            # the destination keeps its value
                target = tuple(params[0]["value"])
                bank, first, end, width, narrow = self.banks[params[1]["value"]]
                row = self._row(bank, first, end)
                value = self._store_value(_Val(row, width, True, True, array=True,
                                               narrow=narrow), target)
                self._bind(target, value)
                if value.code == row:   # a view of the bank row: see _copy_views
                    self.views.append(len(lines) - 1)
                written.append(target)
            else:
                if not in_range:
                    continue
                bank, first, end, width, _ = self.banks[params[0]["value"]]
                value = self._truncate(self._expr(params[2]), width, False)
                lines.append(f"{self._row(bank, first, end)} = {value.code}")
        for target in dict.fromkeys(written):
            value = self.env[target]
            slots = self.group.lane_fields.get(target)
            run = self._vector_run(slots) if slots is not None else None
            if run is not None:
                lines.append(f"f[{run.name}] = {self._run_value(run, value)}")
            elif slots is not None:
                lanes = self.group.lanes
                code = f"{value.code}.tolist()" if value.vector else f"[{value.code}] * {lanes}"
                lines.append(f"f[{slots[0]}:{slots[-1] + 1}] = {code}")
            else:
                slot = _slot(self.layout, target)
                code = value.code
                if value.array:
                    code = f"{value.code}.item(-1)"
                elif value.vector:
                    code = f"_lane_last({value.code})"
                lines.append(f"f[{slot}] = {code}")
        return self._copy_views(lines)

    def _accumulate(self, prim: dict) -> None:
        """`a = a op e` in every copy: op-reduce the copies' e values, combine into a once."""
        target, op, operand = reduction(prim)
        acc = self._expr({"type": "field", "value": list(target)})
        value = self._expr(operand)
        if value.boolean or acc.vector:
            raise _Unsupported()
        if value.vector:
            code = f"int({_REDUCERS[op]}({value.code}))"
        elif op == "^":               # the same e in every copy: pairs cancel
            code = value.code if self.group.lanes % 2 else "0"
        else:
            code = value.code         # | and & are idempotent
        # | & ^ work bit by bit: over wrapped lanes the result is right in their low bits
        combined = _Val(f"({acc.code} {op} {code})", max(acc.bits, value.bits) + 1,
                        acc.nonneg and value.nonneg, False,
                        modbits=_modbits(acc, value))
        self._bind(target, self._store_value(combined, target))

    def _run_value(self, run, value: _Val) -> str:
        """Code for a value stored whole into a vector run: the run's own dtype, always (the
        code reading it relies on that; the int 0 of a zeroed run stands for any dtype)."""
        lanes = self.group.lanes
        storage = NARROW_TYPES[run.width] if run.narrow_bits else "_np_int64"
        if not value.vector:
            return f"_np_full({lanes}, {value.code}, dtype={storage})"
        if value.narrow == run.narrow_bits:
            return value.code
        if value.array:                         # a copy (never a bank row's view)
            return f"{value.code}.astype({storage})"
        return f"{storage}({value.code})"       # an int, or an array made here: converted

    def _copy_views(self, lines: list[str]) -> list[str]:
        """A register read binds a view of the bank row; it is copied when it is used after
        a write to a bank (which would change it) or stored whole into the PHV (where it
        must not change with the bank later). When all it is used for after the write is its
        last lane (a shared scratch field's final value), that lane is read before the write
        instead of copying the row."""
        for at in reversed(self.views):
            name = lines[at].split(" = ", 1)[0]
            used = re.compile(rf"\b{name}\b(?!\.tolist)")
            last = f"{name}.item(-1)"
            written = stored = late_whole = late_last = False
            for line in lines[at + 1:]:
                target, _, value = line.partition(" = ")
                if written and last in line:
                    late_last = True
                if written and used.search(line.replace(last, "")):
                    late_whole = True
                if value == name:        # stored, or aliased (and maybe stored later)
                    stored = True
                if target.startswith("bank"):
                    written = True
            if stored or late_whole:
                lines[at] += ".copy()"
            elif late_last:
                hoisted = f"{name}_last"
                lines[at + 1:] = [line.replace(last, hoisted) for line in lines[at + 1:]]
                lines.insert(at + 1, f"{hoisted} = {last}")
        return lines

    def _diamond(self, cond_node, then: list[dict], other: list[dict]) -> list[tuple]:
        """If-conversion: both sides computed, each written field merged with a select."""
        inner = cond_node
        while isinstance(inner, dict) and inner.get("type") == "expression":
            inner = inner.get("value")                 # parameters are wrapped (p4c)
        if isinstance(inner, dict) and inner.get("op") == "b2d":   # p4c: b2d(c) != 0 is c
            cond_node = inner["right"]
        cond = self._exact(self._expr(cond_node))
        if not cond.boolean:
            cond = _Val(f"({cond.code} != 0)", 1, True, cond.vector, True)
        before = dict(self.env)
        sides = []
        for side in (then, other):
            self.env = dict(before)
            for prim in side:
                target = tuple(prim["parameters"][0]["value"])
                self._bind(target, self._store_value(self._expr(prim["parameters"][1]),
                                                     target))
            sides.append(self.env)
        self.env = before
        keys = list(dict.fromkeys(tuple(p["parameters"][0]["value"]) for p in then + other))
        for key in keys:
            field = {"type": "field", "value": list(key)}
            a = sides[0][key] if key in sides[0] else self._expr(field)
            b = sides[1][key] if key in sides[1] else self._expr(field)
            self._bind(key, self._choice(cond, a, b))
        return keys

    def _choice(self, cond: _Val, a: _Val, b: _Val) -> _Val:
        """`cond ? a : b` (a diamond's merge, p4c's `?:`); both sides of one dtype."""
        if cond.modbits:
            raise _Unsupported()
        vector = cond.vector or a.vector or b.vector
        if cond.vector:
            narrow, mixed = _common_narrow(a, b), _narrow_vectors(a, b)
            a = _replace_code(a, self._operand(a, True, narrow, mixed))
            b = _replace_code(b, self._operand(b, True, narrow, mixed))
            code = _select(cond, a, b)
            array = cond.array or a.array or b.array
        else:                     # Python picks one side: both must have one dtype
            narrow = a.narrow if a.vector and b.vector and a.narrow == b.narrow else 0
            if not narrow:
                a, b = self._wide(a), self._wide(b)
            code = f"({a.code} if {cond.code} else {b.code})"
            array = a.array and b.array
        return _Val(code, max(a.bits, b.bits), a.nonneg and b.nonneg, vector, a.boolean,
                    array=array, narrow=narrow, modbits=_modbits(a, b))

    def _wide(self, value: _Val) -> _Val:
        """The value as int64 (or a Python int), whatever dtype it has."""
        if not value.narrow:
            return value
        return _replace_code(value, f"_np_int64({value.code})", narrow=0)

    def _vector_run(self, slots: list[int]):
        for run in all_runs(self.scope.namespace.get("__vector_runs__", {})):
            if run.first == slots[0] and run.count == len(slots):
                return run
        return None

    def _row(self, bank: str, first: int, end: int) -> str:
        return f"{bank}[{self.index}]" if end < 0 else f"{bank}[{self.index}, {first}:{end}]"

    def _bind(self, target: tuple, value: _Val) -> None:
        name = f"_vv{self.tmp()}"
        self.lines.append(f"{name} = {value.code}")
        self.env[target] = _Val(name, value.bits, value.nonneg, value.vector,
                                array=value.array, narrow=value.narrow, modbits=value.modbits)

    def _field_info(self, key: tuple):
        ref = self.layout.field(key[0], key[1], Node(list(key), "lanes"))
        if ref.is_valid_bit or ref.width is None:
            raise _Unsupported()
        return ref

    def _store_value(self, value: _Val, target: tuple) -> _Val:
        ref = self._field_info(target)
        return self._truncate(value, ref.width, ref.signed)

    def _truncate(self, value: _Val, width: int, signed: bool) -> _Val:
        if value.boolean:
            value = _Val(f"({value.code}).astype(_np_int64)" if value.vector
                         else f"(1 if {value.code} else 0)", 1, True, value.vector,
                         array=value.array)
        mask = (1 << width) - 1
        if value.modbits:           # right modulo 2**modbits only: enough for width <= that
            if signed or width > value.modbits:
                raise _Unsupported()
            if value.narrow == width and value.array:
                return _Val(value.code, width, True, True, array=True, narrow=width)
            lit = self._lit(mask, value.vector, value.narrow)
            return _Val(f"(({value.code}) & {lit})", width, True, value.vector,
                        array=value.array, narrow=value.narrow)
        if signed:
            value = self._wide(value)  # the formula's subtraction must not wrap
            half = 1 << (width - 1)
            if not value.nonneg or value.bits >= width:
                h, m = self._lit(half, value.vector), self._lit(mask, value.vector)
                return _Val(f"((({value.code}) + {h} & {m}) - {h})", width, False,
                            value.vector, array=value.array)
            return value
        if value.nonneg and value.bits <= width:
            return value
        narrow = value.narrow if mask < 1 << value.narrow else 0
        return _Val(f"(({value.code}) & {self._lit(mask, value.vector, narrow)})", width, True,
                    value.vector, array=value.array, narrow=value.narrow)

    def _lit(self, const: int, vector: bool, narrow: int = 0) -> str:
        """A constant operand. Next to a vector it is a read-only 0-d int64 array (uint<W>
        next to narrow vectors): numpy (2.x) takes ~0.25 us longer per operation to convert
        a Python int operand, which is most of what an operation on a few hundred lanes
        costs."""
        if not vector or self.dry_run:
            return repr(const)
        if narrow:
            name, dtype = f"_lu{narrow}_{const}", NARROW_DTYPES[narrow]
        else:
            name = f"_lc{const}" if const >= 0 else f"_lcm{-const}"
            dtype = np.dtype(np.int64)
        namespace = self.scope.namespace
        if name not in namespace:
            array = np.array(const, dtype=dtype)
            array.flags.writeable = False
            namespace[name] = array
        return name

    def _operand(self, value: _Val, vector: bool, narrow: int = 0,
                 narrow_vectors: bool = False) -> str:
        """An operand's code next to the other operands of one numpy operation: a literal
        constant as `_lit` makes it. With narrow vectors among them (`narrow_vectors`) a
        Python int stays only if the result is narrow (`narrow`, from `_common_narrow`:
        it fits, numpy casts it to their dtype); otherwise it is made an int64, so the
        result is an exact int64 (numpy would try to cast it to uint<W> and raise)."""
        if not vector or value.vector:
            return value.code
        if _INT.fullmatch(value.code):
            const = int(value.code)
            return self._lit(const, True, narrow if 0 <= const < 1 << narrow else 0)
        if narrow_vectors and not (narrow and _fits(value, narrow)):
            return f"_np_int64({value.code})"
        return value.code

    # -- expressions
    def _expr(self, node) -> _Val:
        kind, value = node.get("type"), node.get("value")
        if kind == "field":
            key = tuple(value)
            if key in self.env:
                return self.env[key]
            ref = self._field_info(key)
            bits, nonneg = ref.width, not ref.signed
            if bits > MAX_BITS:
                raise _Unsupported()        # would not fit the int64 vector arithmetic
            slots = self.group.lane_fields.get(key)
            if slots is None:
                return _Val(f"f[{ref.slot}]", bits, nonneg, False)
            if key not in self.loaded:
                run = self._vector_run(slots)
                if run is not None:      # the PHV holds the array (vheaders.py)
                    self.loaded[key] = _Val(f"f[{run.name}]", bits, nonneg, True,
                                            narrow=run.narrow_bits)
                    return self.loaded[key]
                if self.assume_narrow and nonneg and bits in NARROW_DTYPES:
                    self.loaded[key] = _Val("f[_vh]", bits, nonneg, True, narrow=bits)
                    return self.loaded[key]
                name = f"_vf{self.tmp()}"
                self.lines.append(f"{name} = _np_array(f[{slots[0]}:{slots[-1] + 1}], "
                                  f"dtype=_np_int64)")
                self.loaded[key] = _Val(name, bits, nonneg, True)
            return self.loaded[key]
        if kind == "hexstr":
            const = Node(value, "lanes").hexstr() if isinstance(value, str) else int(value)
            return self._const(const)
        if kind == "bool":
            return _Val("True" if value else "False", 1, True, False, boolean=True)
        if kind in ("runtime_data", "local"):
            widths = self.scope.param_widths or []
            if not isinstance(value, int) or value >= len(widths):
                raise _Unsupported()
            if widths[value] > MAX_BITS:
                raise _Unsupported()
            return _Val(f"p[{value}]", widths[value], True, False)
        if kind == "expression":
            if isinstance(value, dict) and "op" not in value and "type" in value:
                return self._expr(value)
            return self._op(value)
        raise _Unsupported()

    def _const(self, const: int) -> _Val:
        bits = max(abs(const).bit_length(), 1)
        if bits > MAX_BITS:
            raise _Unsupported()
        return _Val(repr(const), bits, const >= 0, False)

    def _op(self, node: dict) -> _Val:
        op = node.get("op")
        left = node.get("left")
        right = node.get("right")
        if op in ("+", "-", "*", "&", "|", "^"):
            if left is None:
                raise _Unsupported()
            a, b = self._num(left), self._num(right)
            if op == "+":
                bits, nonneg = max(a.bits, b.bits) + 1, a.nonneg and b.nonneg
            elif op == "-":
                bits, nonneg = max(a.bits, b.bits) + 1, False
            elif op == "*":
                bits, nonneg = a.bits + b.bits, a.nonneg and b.nonneg
            elif op == "&":
                nonneg = a.nonneg or b.nonneg
                bits = min(x.bits for x in (a, b) if x.nonneg) if nonneg else max(a.bits, b.bits)
            else:
                bits, nonneg = max(a.bits, b.bits), a.nonneg and b.nonneg
            vector = a.vector or b.vector
            narrow, mixed = _common_narrow(a, b), _narrow_vectors(a, b)
            code = f"({self._operand(a, vector, narrow, mixed)} {op} " \
                f"{self._operand(b, vector, narrow, mixed)})"
            value = _Val(code, bits, nonneg, vector, array=a.array or b.array, narrow=narrow,
                         modbits=_modbits(a, b))
            value = _wrapped(value)
            if op == "&":      # x & y, y exact in [0, 2**M), x right modulo 2**M: exact
                for x, y in ((a, b), (b, a)):
                    if x.modbits and not y.modbits and y.nonneg and y.bits <= x.modbits:
                        value = _replace_code(value, code, bits=y.bits, nonneg=True,
                                              modbits=0)
                    if x.narrow and x.array and y.code == str((1 << x.narrow) - 1) and \
                            (not x.modbits or x.modbits >= x.narrow):
                        # uint<W> values are their own low W bits: the mask does nothing
                        return _replace_code(x, x.code, bits=x.narrow, nonneg=True,
                                             modbits=0)
            return self._checked(value)
        if op in ("<<", ">>"):
            a, b = self._num(left), self._num(right)
            if b.vector or not b.code.isdigit():
                raise _Unsupported()
            amount = int(b.code)
            if op == ">>":
                a = self._exact(a)      # the high bits move down: they must be right
            bits = a.bits + amount if op == "<<" else max(a.bits - amount, 1)
            narrow = a.narrow if a.vector and amount < a.narrow else 0
            code = f"({self._wide(a).code if a.narrow and not narrow else a.code} {op} " \
                f"{self._lit(amount, a.vector, narrow)})"
            return self._checked(_wrapped(_Val(code, bits, a.nonneg, a.vector, array=a.array,
                                               narrow=narrow, modbits=a.modbits)))
        if op == "~":
            a = self._num(right)
            return self._checked(_wrapped(_Val(f"(~{a.code})", a.bits + 1, False, a.vector,
                                               array=a.array, narrow=a.narrow,
                                               modbits=a.modbits)))
        if op in ("==", "!=", "<", ">", "<=", ">="):
            a, b = self._exact(self._num(left)), self._exact(self._num(right))
            vector = a.vector or b.vector
            narrow, mixed = _common_narrow(a, b), _narrow_vectors(a, b)
            left_code = self._operand(a, vector, narrow, mixed)
            right_code = self._operand(b, vector, narrow, mixed)
            return _Val(f"({left_code} {op} {right_code})", 1, True, vector, True,
                        array=a.array or b.array, cmp=(op, left_code, right_code))
        if op in ("and", "or"):
            a, b = self._bool(left), self._bool(right)
            if a.vector or b.vector:
                fn = "_np_logical_and" if op == "and" else "_np_logical_or"
                return _Val(f"{fn}({a.code}, {b.code})", 1, True, True, True)
            return _Val(f"({a.code} {op} {b.code})", 1, True, False, True)
        if op == "not":
            a = self._bool(right)
            code = f"_np_logical_not({a.code})" if a.vector else f"(not {a.code})"
            return _Val(code, 1, True, a.vector, True)
        if op == "d2b":
            a = self._exact(self._num(right))
            return _Val(f"({a.code} != 0)", 1, True, a.vector, True)
        if op == "b2d":
            a = self._bool(right)
            code = f"({a.code}).astype(_np_int64)" if a.vector else f"(1 if {a.code} else 0)"
            return _Val(code, 1, True, a.vector)
        if op == "two_comp_mod":
            a = self._wide(self._exact(self._num(left)))
            width = self._num(right)
            if width.vector or not width.code.isdigit() or int(width.code) < 1:
                raise _Unsupported()
            w = int(width.code)
            half, mask = self._lit(1 << (w - 1), a.vector), self._lit((1 << w) - 1, a.vector)
            return _Val(f"((({a.code}) + {half} & {mask}) - {half})", w, False, a.vector,
                        array=a.array)
        if op == "?":
            cond = self._bool(node.get("cond"))
            a, b = self._expr(left), self._expr(right)
            if a.boolean != b.boolean:
                raise _Unsupported()
            return self._choice(cond, a, b)
        raise _Unsupported()

    @staticmethod
    def _exact(value: _Val) -> _Val:
        """`value`, which this operation needs exact (not only modulo a power of 2)."""
        if value.modbits:
            raise _Unsupported()
        return value

    def _num(self, node) -> _Val:
        if node is None:
            raise _Unsupported()
        value = self._expr(node)
        if value.boolean:
            raise _Unsupported()   # BMv2 JSON turns booleans into data with b2d
        return value

    def _bool(self, node) -> _Val:
        if node is None:
            raise _Unsupported()
        value = self._expr(node)
        if not value.boolean:
            raise _Unsupported()
        return value

    @staticmethod
    def _checked(value: _Val) -> _Val:
        if value.bits > MAX_BITS:
            raise _Unsupported()
        return value


def _fits(value: _Val, narrow: int) -> bool:
    """Whether a scalar is certainly a value of uint<narrow> (numpy casts it, else raises)."""
    return value.nonneg and value.bits <= narrow and not value.modbits


def _common_narrow(a: _Val, b: _Val) -> int:
    """The width W of the uint<W> dtype numpy gives an operation on a and b, or 0 (int64 or
    Python int): the vectors' dtype if they are all narrow and every scalar fits it."""
    vectors = [x for x in (a, b) if x.vector]
    if not vectors or any(not x.narrow for x in vectors):
        return 0
    narrow = max(x.narrow for x in vectors)
    for x in (a, b):
        if not x.vector and not _INT.fullmatch(x.code) and not _fits(x, narrow):
            return 0
    return narrow


def _narrow_vectors(a: _Val, b: _Val) -> bool:
    return (a.vector and bool(a.narrow)) or (b.vector and bool(b.narrow))


def _modbits(*values: _Val) -> int:
    """The modulus (bits) a result of `values` is right for: the smallest of theirs."""
    wrapped = [x.modbits for x in values if x.modbits]
    return min(wrapped) if wrapped else 0


def _wrapped(value: _Val) -> _Val:
    """A result in a uint<W> dtype: exact when it fits, else right modulo 2**W (and within
    [0, 2**W) as the bound of what is there)."""
    if not value.narrow:
        return value
    if value.nonneg and value.bits <= value.narrow and not value.modbits:
        return value
    return _replace_code(value, value.code, bits=value.narrow, nonneg=True,
                         modbits=min(value.modbits or value.narrow, value.narrow))


def _replace_code(value: _Val, code: str, **changes) -> _Val:
    fields = dict(vars(value))
    fields.update(code=code, **changes)
    return _Val(**fields)


def _select(cond: _Val, a: _Val, b: _Val) -> str:
    """`cond ? a : b` over lanes. A select of the two sides of a comparison is their
    maximum or minimum (exact on integers, and one numpy call instead of two)."""
    if not (cond.vector or a.vector or b.vector):
        return f"({a.code} if {cond.code} else {b.code})"
    if cond.cmp is not None and not a.boolean and cond.cmp[0] in (">", ">=", "<", "<="):
        op, left, right = cond.cmp
        picks = {(left, right): "max", (right, left): "min"}.get((a.code, b.code))
        if picks is not None:
            if op in ("<", "<="):
                picks = "min" if picks == "max" else "max"
            return f"_np_{picks}imum({a.code}, {b.code})"
    return f"_np_where({cond.code}, {a.code}, {b.code})"


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines] or ["    pass"]


def _lane_last(value) -> int:
    """The last lane's value. A vector run zeroed by clear_invalid or setValid is the int 0,
    and numpy ops on such ints alone give 0-d arrays: both stand for every lane."""
    return int(value[-1]) if getattr(value, "ndim", 0) else int(value)


_INT = re.compile(r"-?\d+")
_REDUCERS = {"|": "_np_or_reduce", "&": "_np_and_reduce", "^": "_np_xor_reduce"}
LANE_HELPERS = {"_np_or_reduce": np.bitwise_or.reduce, "_np_and_reduce": np.bitwise_and.reduce,
                "_np_xor_reduce": np.bitwise_xor.reduce,
                "_lane_last": _lane_last, "_np_array": np.array, "_np_int64": np.int64,
                "_np_uint8": np.uint8, "_np_uint16": np.uint16, "_np_uint32": np.uint32,
                "_np_where": np.where, "_np_full": np.full,
                "_np_maximum": np.maximum, "_np_minimum": np.minimum,
                "_np_logical_and": np.logical_and, "_np_logical_or": np.logical_or,
                "_np_logical_not": np.logical_not}
