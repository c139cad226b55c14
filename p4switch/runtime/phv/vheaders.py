"""Vector headers: a run of lane fields held in the PHV as one numpy array.

With lane groups as numpy code (`lanes.py`), what is left of k per-lane Python operations is
moving the k values between the packet bytes and the PHV: parsing unpacks k ints, a group turns
them into an array and back into k ints, the deparser packs k ints. A *vector run* avoids all
three: the run's fields (consecutive fields of one header, equal byte-multiple width and sign,
starting on a byte) live in the PHV slot of the run's first field as one int64 array (parsed
from the packet bytes with `numpy.frombuffer`, never changed in place: writes store a new
array); the other slots of the run are unused. The parser fills it, lane groups read and write
it, the deparser turns it back into bytes.

That is only sound when nothing else reads or writes those slots. Each run is chosen from the
lane groups at load time and then checked on the generated (untraced) code itself, with `ast`:
every subscript of `f` that may touch the run must be the run's own name (`f[_vh92]`), which
only the parser, the deparser and lane groups emit; a constant slot or slice inside the run, a
computed slot anywhere, or `f` handed to code we cannot see fails the check, and the program is
generated again without vector runs (lane groups then convert to and from lists). Field lists
(copied by the engine) must not contain the run either. The traced variant never uses them. A
header's slots zeroed by the engine (`clear_invalid`) read as the int 0, which numpy broadcasts
as k zeros, the same value.
"""

from __future__ import annotations

import ast
import struct
import sys
from dataclasses import dataclass

import numpy as np

from ..state.regbanks import NARROW_DTYPES
from .layout import STANDARD_METADATA, HeaderInstance, HeaderType
from .wordplan import split_fields, word_plan
from .writes import constant_index

WIDTHS = (8, 16, 32, 64)
NARROW_TYPES = {8: "_np_uint8", 16: "_np_uint16", 32: "_np_uint32"}   # names in generated code


@dataclass(frozen=True)
class VectorRun:
    header: HeaderInstance
    first: int          # PHV slot of the first field (holds the array)
    count: int          # fields in the run
    width: int          # bits per field
    signed: bool
    byte_offset: int    # of the run within the header
    narrow: bool = False  # held as native uint<width> (lanes.py: modular code), else int64

    @property
    def name(self) -> str:
        return f"_vh{self.first}"

    @property
    def narrow_bits(self) -> int:
        """The width of the run's native unsigned arrays, or 0 (int64 arrays)."""
        return self.width if self.narrow else 0

    @property
    def storage(self):
        return NARROW_DTYPES[self.width] if self.narrow else np.dtype(np.int64)

    @property
    def slots(self) -> range:
        return range(self.first, self.first + self.count)

    @property
    def dtype(self) -> str:
        return (">i" if self.signed else ">u") + str(self.width // 8)



def segments(runs: list[VectorRun]) -> list:
    """A header with vector runs in order: pseudo-instances of the fields between runs (for
    their ordinary code) and the runs themselves."""
    header = runs[0].header
    out: list = []
    slot = header.base
    for run in runs + [None]:
        end = run.first if run is not None else header.base + len(header.htype.fields)
        if end > slot:
            fields = header.htype.fields[slot - header.base:end - header.base]
            htype = HeaderType(f"{header.htype.name}$part", fields)
            out.append(HeaderInstance(header.name, -1, htype, False, slot))
        if run is not None:
            out.append(run)
            slot = run.first + run.count
    return out


def all_runs(runs: dict) -> list[VectorRun]:
    return [run for header_runs in runs.values() for run in header_runs]


def candidate_runs(lane_slot_runs: list[list[int]], layout, field_lists: dict) -> dict:
    """header validity index -> VectorRun, for runs of lane fields that may be vector runs.
    A run is narrow when all its slots are in `lane_slot_runs.narrow_slots` (lanes.py's
    `bank_registers`: every lane group using them computes modulo 2**width), unsigned, and
    8, 16 or 32 bits wide."""
    narrow_slots = getattr(lane_slot_runs, "narrow_slots", frozenset())
    by_slot = {}
    for inst in layout.header_list:
        for i in range(len(inst.htype.fields)):
            by_slot[inst.base + i] = (inst, i)
    listed = {s for slots in field_lists.values() for s in slots}
    runs: dict[int, list[VectorRun]] = {}
    refused: set[int] = set()
    for slots in lane_slot_runs:
        inst, position = by_slot.get(slots[0], (None, None))
        # metadata too (p4c's per-lane temporaries), but never standard_metadata, which the
        # engine reads and writes by slot
        if inst is None or inst.name == STANDARD_METADATA or inst.union or \
                inst.varbit_len_slot is not None or _in_stack(inst, layout) or \
                inst.htype.fixed_bits % 8:
            continue
        _, width, signed = inst.htype.fields[position]
        offset = sum(w for _, w, _ in inst.htype.fields[:position])
        narrow = not signed and width in NARROW_DTYPES and narrow_slots.issuperset(slots)
        run = VectorRun(inst, slots[0], len(slots), width, bool(signed), offset // 8, narrow)
        if width not in WIDTHS or offset % 8 or slots[-1] >= inst.base + len(inst.htype.fields) \
                or listed.intersection(slots):
            refused.add(inst.index)
            continue
        known = runs.setdefault(inst.index, [])
        if run in known:
            continue
        if any(set(run.slots) & set(other.slots) for other in known):
            refused.add(inst.index)        # overlapping runs: the groups disagree on lanes
        known.append(run)
    return {index: sorted(found, key=lambda r: r.first) for index, found in runs.items()
            if index not in refused}


def _in_stack(inst: HeaderInstance, layout) -> bool:
    return any(inst in stack.headers for stack in layout.stacks.values())


# ------------------------------------------------------------------------- parser, deparser
def extract_lines(runs: list[VectorRun], scope, at: int | None = None) -> list[str]:
    """Lines filling the header's slots from `d` at `pos`, or at the constant offset `at`
    (the length is already checked)."""
    lines: list[str] = []
    offset = 0
    for seg in segments(runs):
        where = f"pos + {offset}" if at is None else str(at + offset)
        if isinstance(seg, VectorRun):
            lines.append(f"f[{seg.name}] = {_from_wire(seg, where)}")
            offset += seg.count * seg.width // 8
        else:
            lines += _part_extract(seg, where, scope)
            offset += seg.htype.fixed_bits // 8
    return lines


def _from_wire(run: VectorRun, at: str) -> str:
    """The run's array from the packet bytes: int64 (lanes.py bounds its arithmetic), or the
    native unsigned dtype of a narrow run. Reading the big-endian words as native ones and
    swapping the bytes costs ~0.4 us at 256 lanes against ~0.7 for a conversion to int64."""
    if not run.narrow:
        return f"_np_frombuffer(d, {run.dtype!r}, {run.count}, {at}).astype(_np_int64)"
    native = NARROW_TYPES[run.width]
    if run.width == 8:           # bytes have no order; a read-only view is never changed
        return f"_np_frombuffer(d, {native}, {run.count}, {at})"
    if sys.byteorder == "little":
        return f"_np_frombuffer(d, {native}, {run.count}, {at}).byteswap()"
    return f"_np_frombuffer(d, {native}, {run.count}, {at}).copy()"


def _part_extract(part: HeaderInstance, at: str, scope) -> list[str]:
    fields = part.htype.fields
    if not fields:
        return []
    nbytes = part.htype.fixed_bits // 8
    at = at.removesuffix(" + 0")
    plan = word_plan(part.htype)
    end = part.base + len(fields)
    if plan is not None:
        unpack = scope.bind("unpack", struct.Struct(plan.fmt).unpack_from)
        if plan.direct:
            return [f"f[{part.base}:{end}] = {unpack}(d, {at})"]
        words = [f"_u{k}" for k in range(len(plan.words))]
        return [f"{', '.join(words)}, = {unpack}(d, {at})",
                f"f[{part.base}:{end}] = ({', '.join(plan.field_codes(words))},)"]
    return [f"x = int.from_bytes(d[{at}:{at} + {nbytes}], 'big')"] + \
        split_fields(part.htype, str(part.base), "x")


def bytes_code(runs: list[VectorRun], scope, part_code) -> str:
    """Code for the header's bytes; `part_code(instance, scope)` gives other fields' bytes."""
    parts = [f"_vh_bytes(f[{seg.name}], {seg.dtype!r}, {seg.count})"
             if isinstance(seg, VectorRun) else part_code(seg, scope) for seg in segments(runs)]
    return parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")"


def zero_lines(runs: list[VectorRun]) -> list[str]:
    """setValid's zeroing of the header: the int 0 stands for a run of zeros."""
    lines = []
    for seg in segments(runs):
        if isinstance(seg, VectorRun):
            lines.append(f"f[{seg.name}] = 0")
        else:
            n = len(seg.htype.fields)
            lines.append(f"f[{seg.base}:{seg.base + n}] = {[0] * n!r}")
    return lines


def _vh_bytes(value, dtype: str, count: int) -> bytes:
    if not getattr(value, "ndim", 0):   # an int (zeroed, never parsed) or a 0-d result
        return np.full(count, int(value), dtype=np.int64).astype(dtype).tobytes()
    return value.astype(dtype, copy=False).tobytes()


def convert_runs(f: list, runs: dict, to_arrays: bool) -> None:
    """A PHV of one code variant made right for the other: each vector run as one array in
    its first slot (untraced code), or as one int per slot (traced code)."""
    for run in all_runs(runs):
        end = run.first + run.count
        if to_arrays:
            f[run.first] = np.array(f[run.first:end], dtype=run.storage)
        else:
            value = f[run.first]
            f[run.first:end] = np.broadcast_to(np.asarray(value, dtype=np.int64),
                                               (run.count,)).tolist()


VH_HELPERS = {"_np_frombuffer": np.frombuffer, "_vh_bytes": _vh_bytes, "_np_int64": np.int64,
              "_np_uint8": np.uint8, "_np_uint16": np.uint16, "_np_uint32": np.uint32}


# ------------------------------------------------------------------------------- the check
def only_sanctioned(source: str, runs: dict) -> bool:
    """Whether every access to a run's slots in `source` is through the run's own name, and
    `f` never escapes to code outside `source` (see the module docstring)."""
    slots = {s for run in all_runs(runs) for s in run.slots}
    names = {run.name for run in all_runs(runs)}
    tree = ast.parse(source)
    local = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id == "f":
            allowed.add(id(node.value))
            index = node.slice
            if isinstance(index, ast.Name) and index.id in names:
                continue
            if isinstance(index, ast.Slice):
                low, high = _const(index.lower), _const(index.upper)
                if index.step is not None or low is None or high is None or \
                        any(low <= s < high for s in slots):
                    return False
                continue
            value = _const(index)
            if value is None or value in slots:
                return False
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in local:
            allowed.update(id(a) for a in node.args if isinstance(a, ast.Name) and a.id == "f")
        elif isinstance(node, ast.Name) and node.id == "f" and id(node) not in allowed and \
                isinstance(node.ctx, ast.Load):
            return False
    return True


def _const(node) -> int | None:
    return constant_index(node)
