"""Registers outside lane groups live in one-column banks (regbanks.bank_scalar_registers):
the C controls read and write their cells as integers in memory, generated Python code
through a flat memoryview, the control plane through BankColumn. Every width from 1 to 64
bits must keep its values exactly (its top bit included) on each path, the paths must agree
packet by packet, and nothing else about a register may change: an index is taken as a list
takes one, and a stored template's view still aliases its bank."""

from __future__ import annotations

import numpy as np
import pytest

from p4switch.runtime import Switch
from p4switch.runtime.share import codeshare, template_store
from p4switch.runtime.state.regbanks import BankColumn, flat_view, is_flat_view, scalar_dtype

from .bmv2 import Bmv2Program, assign, const, fld, op, prim, std

WIDTHS = (1, 7, 8, 16, 20, 32, 48, 63, 64)
SIZE = 8


def _program() -> dict:
    """h.idx picks a cell; every register rW gets h.v (masked to W bits by the write) after
    its old value is read into h.oW, so a packet's output shows what the previous one left."""
    prog = Bmv2Program()
    prog.header_type("h_t", [("idx", 8), ("v", 64)] + [(f"o{w}", 64) for w in WIDTHS])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    body = [assign(std("egress_spec"), const(1))]
    for w in WIDTHS:
        reg = prog.register(f"r{w}", SIZE, w)
        body.append(prim("register_read", fld("h", f"o{w}"), reg, fld("h", "idx")))
        body.append(prim("register_write", reg, fld("h", "idx"), fld("h", "v")))
    body.append(assign(fld("h", "v"), op("+", fld("h", "v"), const(1))))
    aid = prog.action("touch", body)
    prog.run("touch_t", aid)
    return prog.doc


def _packet(idx: int, value: int) -> bytes:
    return bytes([idx]) + value.to_bytes(8, "big") + bytes(8 * len(WIDTHS))


def _switch(monkeypatch, native: bool, tmp_path) -> Switch:
    monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    monkeypatch.setenv("INAEMU_TEMPLATE_CACHE", "0")
    codeshare.clear()
    sw = Switch(_program())
    want = ("parse", "ingress", "egress", "deparse") if native else ()
    assert sw.program.untraced.native_in_use == want
    return sw


def _values(rng) -> list[int]:
    """Values at every register's edges: all ones, the top bit alone, zero, random."""
    edges = [(1 << w) - 1 for w in WIDTHS] + [1 << (w - 1) for w in WIDTHS] + [0, (1 << 64) - 1]
    return edges + [int(rng.integers(0, 1 << 62)) << 2 for _ in range(20)]


def test_every_register_is_a_one_column_bank_of_the_narrowest_type(monkeypatch, tmp_path):
    sw = _switch(monkeypatch, True, tmp_path)
    for w in WIDTHS:
        cells = sw.program.registers[f"r{w}"].cells
        assert isinstance(cells, BankColumn) and cells.array.shape == (SIZE, 1)
        assert cells.array.dtype == scalar_dtype(w)
        assert cells.flat is not None and is_flat_view(cells.flat)
    assert [scalar_dtype(w).itemsize for w in (1, 8, 9, 16, 17, 32, 33, 64)] == \
        [1, 1, 2, 2, 4, 4, 8, 8]
    assert scalar_dtype(65) is None


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_values_at_each_width_kept_exactly(monkeypatch, tmp_path, native):
    """What a packet writes, the next packet at that cell reads back, masked to the width,
    and the control plane reads the same int."""
    sw = _switch(monkeypatch, native, tmp_path)
    for value in _values(np.random.default_rng(1)):
        sw.receive(0, _packet(3, value))
        out = sw.receive(0, _packet(3, 0))[0][1]
        for i, w in enumerate(WIDTHS):
            got = int.from_bytes(out[9 + 8 * i:17 + 8 * i], "big")
            assert got == value & ((1 << w) - 1), (w, value)
            assert sw.register_read(f"r{w}", 3) == 0     # the second packet wrote 0


def test_native_and_python_agree_packet_by_packet(monkeypatch, tmp_path):
    python = _switch(monkeypatch, False, tmp_path)
    native = _switch(monkeypatch, True, tmp_path)
    rng = np.random.default_rng(2)
    for i, value in enumerate(_values(rng) * 3):
        packet = _packet(int(rng.integers(0, SIZE + 2)), value)   # some indexes out of range
        assert native.receive(0, packet) == python.receive(0, packet), i
    for w in WIDTHS:
        assert native.register_read_all(f"r{w}") == python.register_read_all(f"r{w}")


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_the_control_planes_writes_reach_the_packets(monkeypatch, tmp_path, native):
    sw = _switch(monkeypatch, native, tmp_path)
    for w in WIDTHS:
        sw.register_write(f"r{w}", 5, (1 << w) - 1)
    out = sw.receive(0, _packet(5, 0))[0][1]
    for i, w in enumerate(WIDTHS):
        assert int.from_bytes(out[9 + 8 * i:17 + 8 * i], "big") == (1 << w) - 1
    sw.register_reset("r64")
    assert sw.register_read_all("r64") == [0] * SIZE


@pytest.mark.parametrize("index", [True, False])
def test_an_index_is_taken_as_a_list_takes_it(monkeypatch, tmp_path, index):
    """Regression: a bool index reached numpy as a mask, so a write of cell True (1) wrote
    every cell of a banked register and a read failed."""
    sw = _switch(monkeypatch, False, tmp_path)
    sw.register_write("r16", index, 77)
    cells = [0] * SIZE
    cells[int(index)] = 77
    assert sw.register_read_all("r16") == cells
    assert sw.register_read("r16", index) == 77


def test_a_stored_templates_views_still_alias_their_banks(monkeypatch, tmp_path):
    """A template written and read back: the generated code's view of a register and the
    register's own cells are one memory again, so that what the code writes, the control
    plane reads."""
    monkeypatch.setenv("INAEMU_NATIVE", "0")
    codeshare.clear()
    sw = Switch(_program())
    template = codeshare.make_template(sw.program)
    assert template_store.save("scalar-banks", template, tmp_path)
    loaded = template_store.load("scalar-banks", tmp_path)
    program = loaded.program
    cells = program.registers["r64"].cells
    views = [v for v in program.untraced.namespace.values() if type(v) is memoryview]
    assert any(v is cells.flat for v in views)
    cells.flat[4] = (1 << 64) - 1
    assert cells[4] == (1 << 64) - 1 and int(cells.array[4, 0]) == (1 << 64) - 1


def test_flat_views_are_made_only_of_one_column_arrays():
    one = np.zeros((4, 1), np.uint32)
    assert is_flat_view(flat_view(one))
    assert not is_flat_view(memoryview(np.zeros(4, np.uint32)))
    assert not is_flat_view(memoryview(np.zeros((4, 2), np.uint32)).cast("B").cast("I"))
    assert BankColumn(np.zeros((4, 2), np.uint64), 1).flat is None


def test_switches_sharing_code_write_their_own_registers(monkeypatch, tmp_path):
    """The second switch of a JSON runs the first's generated Python code over its own state
    (codeshare): its views must be its own registers', not the template's."""
    monkeypatch.setenv("INAEMU_NATIVE", "0")
    monkeypatch.setenv("INAEMU_TEMPLATE_CACHE", "0")
    codeshare.clear()
    a, b = Switch(_program()), Switch(_program())
    assert a.program.untraced.source is b.program.untraced.source     # shared, not made again
    b.receive(0, _packet(2, 0xABCD))
    assert b.register_read("r16", 2) == 0xABCD
    assert a.register_read("r16", 2) == 0
    a.register_write("r64", 6, 5)
    out = b.receive(0, _packet(6, 0))[0][1]
    assert int.from_bytes(out[9 + 8 * WIDTHS.index(64):17 + 8 * WIDTHS.index(64)], "big") == 0


def test_a_register_wider_than_64_bits_is_read_by_python_code(monkeypatch, tmp_path):
    """Regression: the C controls read a 128-bit register (a list of Python ints) as a 64-bit
    integer, so a cell past 2**64 raised OverflowError on every packet that read it; now
    such a read keeps its control in Python, which truncates to the destination as BMv2."""
    prog = Bmv2Program()
    prog.header_type("h_t", [("idx", 8), ("o", 64)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    reg = prog.register("wide", 4, 128)
    prog.run("t", prog.action("read_wide", [
        assign(std("egress_spec"), const(1)),
        prim("register_read", fld("h", "o"), reg, fld("h", "idx"))]))
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    outputs = []
    for native in ("0", "1"):
        monkeypatch.setenv("INAEMU_NATIVE", native)
        codeshare.clear()
        sw = Switch(prog.doc)
        sw.register_write("wide", 1, (1 << 100) + 5)
        outputs.append(sw.receive(0, bytes([1]) + bytes(8)))
    assert outputs[0] == outputs[1]
    assert outputs[0][0][1] == bytes([1]) + (5).to_bytes(8, "big")
