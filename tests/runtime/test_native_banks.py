"""A switch's register banks as the generated C reads them: through the `Banks` that
`bank_table` checks once when the state is bound (cgen/nativebuild.py `bound_state`), the
state tuple's last item. A state without it, or with a bank not as the module was compiled
for, is refused with a TypeError, never read as something else; what the C writes lands in
the switch's own registers."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

from p4switch.runtime.cgen import nativebuild

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_ina_switch as ina_bench  # noqa: E402


@pytest.fixture
def ina_switch(tmp_path, monkeypatch):
    """An ina.p4 switch (k = 4 lanes, 4 workers) running its controls as C."""
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    monkeypatch.setenv("INAEMU_NATIVE", "1")
    sw = ina_bench.configured_switch(4, 4, program=ina_bench.ina_bmv2_json(4))
    code = sw.program.untraced
    assert code.native_fast is not None, (nativebuild.why_not, code.native.refused)
    return sw


def _bound(sw):
    """(the module's `fast`, its bound state tuple)."""
    fast = sw.program.untraced.native_fast
    return fast.func, fast.args[0]


def _bank_indices(state: tuple) -> list[int]:
    return [i for i, item in enumerate(state[:-1]) if isinstance(item, np.ndarray)
            and item.ndim == 2 and item.flags.writeable]


def test_the_bound_state_ends_with_its_banks_over_the_switch_arrays(ina_switch):
    fast, state = _bound(ina_switch)
    banks = state[-1]
    assert type(banks).__name__ == "Banks"
    assert _bank_indices(state), "ina.p4 has register banks"
    again = fast.__self__.bank_table(state[:-1])      # a second table over the same arrays
    assert type(again) is type(banks)


def test_what_the_c_writes_lands_in_the_switch_registers(ina_switch):
    """A contribution through the C fast path: the lanes are in the switch's own register
    cells (the arrays the Banks point into), as the Python control plane reads them."""
    before = {name: list(reg.cells) for name, reg in ina_switch.program.registers.items()}
    for port, data in ina_bench.contributions(4, 4, 1)[:1]:
        ina_switch.receive(port, data)
    after = {name: list(reg.cells) for name, reg in ina_switch.program.registers.items()}
    assert after != before


@pytest.mark.parametrize("entry", ["fast", "ingress"])
@pytest.mark.parametrize("how", ["without banks", "another object last", "a list"])
def test_a_state_without_its_banks_is_refused(ina_switch, entry, how):
    """Both ways in (the whole flow, one control over the PHV's lists) check the state
    before anything reads it."""
    fast, state = _bound(ina_switch)
    wrong = {"without banks": state[:-1], "another object last": state[:-1] + (object(),),
             "a list": list(state)}[how]
    with pytest.raises(TypeError, match="expected"):
        if entry == "fast":
            port, data = ina_bench.contributions(4, 4, 1)[0]
            fast(wrong, (), port, data)
        else:
            fast.__self__.ingress(wrong, [], [])


@pytest.mark.parametrize("how", ["shape", "dtype", "read-only", "not an array", "short"])
def test_bank_table_refuses_a_bank_not_as_compiled(ina_switch, how):
    fast, state = _bound(ina_switch)
    bare = list(state[:-1])
    if how == "short":
        bare = bare[:-1]
    else:
        i = _bank_indices(state)[0]
        array = bare[i]
        bare[i] = {"shape": lambda: np.zeros((array.shape[0] + 1, array.shape[1]), array.dtype),
                   "dtype": lambda: array.astype(np.int8),
                   "read-only": lambda: _read_only(array.copy()),
                   "not an array": lambda: array.tolist()}[how]()
    with pytest.raises(TypeError):
        fast.__self__.bank_table(tuple(bare))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def test_banks_in_a_reference_cycle_are_collected(ina_switch):
    """The Banks holds its state; a state object that refers back to it (a cycle) is
    collected with it, arrays and all, rather than kept for ever."""
    fast, state = _bound(ina_switch)
    fresh = [np.zeros_like(x) if i in _bank_indices(state) else x
             for i, x in enumerate(state[:-1])]
    loop_at = next(i for i, x in enumerate(fresh) if type(x) is dict)
    fresh[loop_at] = {}
    watched = weakref.ref(fresh[_bank_indices(state)[0]])
    banks = fast.__self__.bank_table(tuple(fresh))
    fresh[loop_at]["back"] = banks            # state -> dict -> the Banks -> state
    del fresh, banks
    gc.collect()
    assert watched() is None
