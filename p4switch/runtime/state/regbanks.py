"""Register banks: parallel register arrays stored as the columns of one 2-D numpy array.

Lane-parallel programs (ina.p4: one register per value lane, all indexed by the same cell)
touch row `i` of every register of a group at once. Keeping those registers as the columns of
one `(size, lanes)` array makes that row one contiguous vector (`lanes.py` emits numpy code
over it): int64, or the registers' own unsigned width (8/16/32 bits) when every lane group
using the bank computes in that width modulo 2**width (`lanes.bank_registers` decides).
Every other user of a register (scalar generated code that was not vectorised, the traced
variant, the control plane's read/write/reset) sees each register as before, a sequence of
Python ints, through `BankColumn`.
"""

from __future__ import annotations

import numpy as np

MAX_BANK_WIDTH = 62  # int64 storage, with room for one carry in vector arithmetic
NARROW_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32)}


def narrow_dtype(bitwidth: int) -> np.dtype | None:
    """The native unsigned dtype of exactly `bitwidth` bits, if numpy has one (not 64: lane
    code keeps int64 headroom there)."""
    return NARROW_DTYPES.get(bitwidth)


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
                self.array[:, column] = np.asarray(list(reg.cells), dtype=np.int64)
            reg.cells = BankColumn(self.array, column)
            self._cells.append(reg.cells)
        self.columns = {name: i for i, name in enumerate(self.names)}

    def retype(self, dtype) -> None:
        """Hold the cells as `dtype` from now on (before any generated code refers to the
        array; values must fit, as register values always do in their width)."""
        self.array = self.array.astype(dtype)
        for cells in self._cells:
            cells.array = self.array

    @staticmethod
    def fits(registers: list) -> bool:
        first = registers[0]
        return all(r.size == first.size and r.bitwidth == first.bitwidth for r in registers) \
            and first.bitwidth <= MAX_BANK_WIDTH and first.size > 0 and \
            all(not isinstance(r.cells, BankColumn) for r in registers)


class BankColumn:
    """One column of a 2-D integer array (a register of a bank, a counter's packets or
    bytes), read and written as a list of ints."""

    __slots__ = ("array", "column")

    def __init__(self, array: np.ndarray, column: int) -> None:
        self.array = array
        self.column = column

    def __len__(self) -> int:
        return self.array.shape[0]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.array[index, self.column].tolist()
        return int(self.array[index, self.column])

    def __setitem__(self, index, value) -> None:
        if isinstance(index, slice):
            self.array[index, self.column] = np.asarray(list(value), dtype=self.array.dtype)
        else:
            self.array[index, self.column] = value

    def __iter__(self):
        return iter(self.array[:, self.column].tolist())

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"BankColumn({list(self)!r})"
