"""Register banks: parallel register arrays stored as the columns of one 2-D numpy array.

Lane-parallel programs (ina.p4: one register per value lane, all indexed by the same cell)
touch row `i` of every register of a group at once. Keeping those registers as the columns of
one `(size, lanes)` array makes that row one contiguous vector (`lanes.py` emits numpy code
over it): int64, or the registers' own unsigned width (8/16/32 bits) when every lane group
using the bank computes in that width modulo 2**width (`lanes.bank_registers` decides).
Every other user of a register (scalar generated code that was not vectorised, the traced
variant, the control plane's read/write/reset) sees each register as before, a sequence of
Python ints, through `BankColumn`.

Every other register of 1 to 64 bits is a bank of its own, one column of the narrowest
unsigned type that holds its width (`bank_scalar_registers`), so that the C back end reads
and writes its cells as plain integers in memory instead of as Python int objects in a list
(a pointer and an object a cell, each a cache line apart). Generated Python code reads such a
register through the column's flat `memoryview` (`python_cells`), which gives and takes
Python ints at about twice a list's cost an access (a numpy scalar index is ~5x and gives a
numpy type).
"""

from __future__ import annotations

import operator

import numpy as np

MAX_BANK_WIDTH = 62  # int64 storage, with room for one carry in vector arithmetic
NARROW_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32)}
SCALAR_DTYPES = ((8, np.dtype(np.uint8)), (16, np.dtype(np.uint16)), (32, np.dtype(np.uint32)),
                 (64, np.dtype(np.uint64)))
FLAT_FORMATS = {"u1": "B", "u2": "H", "u4": "I", "u8": "Q", "i8": "q"}


def narrow_dtype(bitwidth: int) -> np.dtype | None:
    """The native unsigned dtype of exactly `bitwidth` bits, if numpy has one (not 64: lane
    code keeps int64 headroom there)."""
    return NARROW_DTYPES.get(bitwidth)


def scalar_dtype(bitwidth: int) -> np.dtype | None:
    """The narrowest unsigned dtype that holds `bitwidth` bits (None past 64): a register's
    values are always masked to its width, so a wider type never wraps one."""
    for bits, dtype in SCALAR_DTYPES:
        if bitwidth <= bits:
            return dtype
    return None


def bank_scalar_registers(registers: dict) -> None:
    """Give every register still held as a list, of 1 to 64 bits, a one-column bank of its
    own (after `lanes.bank_registers` has banked the lane registers)."""
    for reg in registers.values():
        if isinstance(reg.cells, list) and 0 < reg.bitwidth <= 64 and reg.size > 0:
            RegisterBank([reg], scalar_dtype(reg.bitwidth))


def flat_view(array: np.ndarray) -> memoryview:
    """A one-column array's cells as a 1-D memoryview that gives and takes Python ints."""
    return memoryview(array).cast("B").cast(FLAT_FORMATS[array.dtype.str[1:]])


def is_flat_view(view: memoryview) -> bool:
    """Whether `view` is `flat_view` of the array it views (so that it can be made again)."""
    array = view.obj
    return isinstance(array, np.ndarray) and array.ndim == 2 and array.shape[1] == 1 and \
        array.flags.c_contiguous and view.ndim == 1 and view.shape == (array.shape[0],) and \
        view.format == FLAT_FORMATS.get(array.dtype.str[1:])


def python_cells(cells):
    """What generated Python code indexes for a register's cells: a one-column bank's flat
    view, else the cells themselves (a list, or a column of a wider bank)."""
    flat = getattr(cells, "flat", None)
    return cells if flat is None else flat


class RegisterBank:
    """Registers of equal size and width, one column each, in the order of their lanes."""

    def __init__(self, registers: list, dtype=np.int64) -> None:
        self.names = [reg.name for reg in registers]
        self.size = registers[0].size
        self.bitwidth = registers[0].bitwidth
        self.array = np.zeros((self.size, len(registers)), dtype=dtype)
        self._cells = []
        for column, reg in enumerate(registers):
            if any(reg.cells):      # a fresh register is all zeros, as the array already is
                self.array[:, column] = np.asarray(list(reg.cells), dtype=self.array.dtype)
            reg.cells = BankColumn(self.array, column)
            self._cells.append(reg.cells)
        self.columns = {name: i for i, name in enumerate(self.names)}

    def retype(self, dtype) -> None:
        """Hold the cells as `dtype` from now on (before any generated code refers to the
        array; values must fit, as register values always do in their width)."""
        self.array = self.array.astype(dtype)
        for cells in self._cells:
            cells.rebind(self.array)

    @staticmethod
    def fits(registers: list) -> bool:
        first = registers[0]
        return all(r.size == first.size and r.bitwidth == first.bitwidth for r in registers) \
            and first.bitwidth <= MAX_BANK_WIDTH and first.size > 0 and \
            all(not isinstance(r.cells, BankColumn) for r in registers)


class BankColumn:
    """One column of a 2-D integer array (a register of a bank, a counter's packets or
    bytes), read and written as a list of ints."""

    __slots__ = ("array", "column", "flat")

    def __init__(self, array: np.ndarray, column: int) -> None:
        self.column = column
        self.rebind(array)

    def rebind(self, array: np.ndarray) -> None:
        """Hold `array` (a bank's retyped cells) from now on."""
        self.array = array
        one_column = array.ndim == 2 and array.shape[1] == 1 and array.flags.c_contiguous \
            and array.dtype.str[1:] in FLAT_FORMATS
        self.flat = flat_view(array) if one_column else None

    def __len__(self) -> int:
        return self.array.shape[0]

    # An index is taken as a list takes one (`operator.index`): a bool is 0 or 1, where numpy
    # would take it as a mask and read or write every row.
    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.array[index, self.column].tolist()
        return int(self.array[operator.index(index), self.column])

    def __setitem__(self, index, value) -> None:
        if isinstance(index, slice):
            self.array[index, self.column] = np.asarray(list(value), dtype=self.array.dtype)
        else:
            self.array[operator.index(index), self.column] = value

    def __iter__(self):
        return iter(self.array[:, self.column].tolist())

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"BankColumn({list(self)!r})"
