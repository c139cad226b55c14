"""Lane statements rolled into loops (`cgen/nativereroll.py`): the rolled text must be each
copy's text again for every index, anything a loop would change is left unrolled, and ina.p4's
native controls built with rolled loops (at -O3) give what the Python controls give, packet by
packet, including lanes that overflow and the MAX round's formats."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from p4switch.runtime.cgen import nativereroll
from p4switch.runtime.share import codeshare, template_store
from p4switch.runtime.cgen.nativereroll import MIN_TRIPS, ROLLED_LOOP, reroll

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_ina_switch as ina_bench  # noqa: E402
from tests.ina.packets import CONTRIB, ina_packet  # noqa: E402


def _lanes(count: int) -> list[str]:
    lines = []
    for j in range(count):
        lines.append(f"{{ u64 i = F14; if (i < 2048ULL) "
                     f"{{ F71 = ((u64)BK24[(i) * 364 + {j}]); }} }}")
        lines.append(f"RUN141[{j}] = (uint32_t)(F71 + {3 * j + 5}) & 4294967295ULL; "
                     f"T[{j + 1}] = T[{2 * j + 1}];")
    return lines


def _unroll(rolled: list[str]) -> list[str]:
    """The rolled lines executed as text: every loop's body once per index, its literals'
    sums evaluated (the reverse of `reroll`, for the tests)."""
    import re
    out, at = [], 0
    while at < len(rolled):
        head = rolled[at]
        if not head.startswith(ROLLED_LOOP):
            out.append(head)
            at += 1
            continue
        count = int(re.search(r"< (\d+);", head).group(1))
        end = rolled.index("}", at)
        body = [line[4:] for line in rolled[at + 1:end]]
        for j in range(count):
            for line in body:
                line = re.sub(r"\((\d+) \+ (\d+) \* lane_j\)",
                              lambda m: str(int(m.group(1)) + int(m.group(2)) * j), line)
                line = re.sub(r"\((\d+) \+ lane_j\)", lambda m: str(int(m.group(1)) + j), line)
                line = re.sub(r"\((\d+) \* lane_j\)", lambda m: str(int(m.group(1)) * j), line)
                out.append(line.replace("(lane_j)", str(j)))
        at = end + 1
    return out


def test_copies_of_a_group_become_one_loop_that_is_each_copy_again():
    lines = ["F14 = PF[14];"] + _lanes(364) + ["PF[14] = F14;"]
    rolled = reroll(lines)
    assert rolled[0] == "F14 = PF[14];" and rolled[-1] == "PF[14] = F14;"
    assert rolled[1] == "for (int lane_j = 0; lane_j < 364; lane_j++) {"
    assert len(rolled) == 6
    assert "(5 + 3 * lane_j)" in rolled[3] and "364 + (lane_j)]" in rolled[2]
    assert _unroll(rolled) == lines


def test_a_short_stretch_stays_as_it_is():
    lines = _lanes(MIN_TRIPS - 1)
    assert reroll(lines) == lines
    assert reroll(_lanes(MIN_TRIPS))[0].startswith(ROLLED_LOOP)


def test_only_the_stretch_that_steps_evenly_is_rolled():
    lines = _lanes(20)
    lines[2 * 12 + 1] = lines[2 * 12 + 1].replace("+ 41)", "+ 40)")     # copy 12 differs
    rolled = reroll(lines)
    assert rolled[0] == "for (int lane_j = 0; lane_j < 12; lane_j++) {"
    assert _unroll(rolled) == lines


@pytest.mark.parametrize("lines", [
    [f"x[{j}] = 1; break;" for j in range(10)],                    # break would leave the loop
    [f"x[{j}] = 1; continue;" for j in range(10)],
    [f"case {j}: x = {j};" for j in range(10)],
    [f"}} x[{j}] = 1; {{" for j in range(10)],                      # braces not balanced
    [f"x[0{j}] = 1;" for j in range(10, 18)],                     # octal: 8, 9, ... not 10
    [f"y[{j}] = lane_j;" for j in range(10)],                      # the loop's own name
    ["x[0] = 1;"] * 10,                                            # no literal steps
])
def test_what_a_loop_would_change_is_not_rolled(lines):
    assert not any(line.startswith(ROLLED_LOOP) for line in reroll(lines))


def test_an_octal_literal_ends_the_roll_before_it():
    lines = [f"x[{j}] = 1;" for j in range(10)] + ["x[010] = 1;"]
    rolled = reroll(lines)
    assert rolled[0] == "for (int lane_j = 0; lane_j < 10; lane_j++) {"
    assert rolled[-1] == "x[010] = 1;"


# ---------------------------------------------------------------------------- ina.p4
@pytest.fixture
def native_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    return tmp_path


def _state(sw) -> tuple:
    program = sw.program
    return ({name: list(reg.cells) for name, reg in program.registers.items()},
            {name: (list(c.packets), list(c.bytes)) for name, c in program.counters.items()})


def _packets(k: int, n: int, cells: int, seed: int) -> list[tuple[int, bytes]]:
    """Contributions in protocol order with lanes at the int32 edges (sums that overflow) and
    every lane format, some resent."""
    rng = random.Random(seed)
    edges = [0, 1, -1, 0x7FFFFFFF, -0x80000000, 0x3FFFFFFF, 0x7FFFFFFE]
    packets = []
    for chunk in range(cells):
        slot, ver = chunk % ina_bench.POOL, (chunk // ina_bench.POOL) % 2
        fmt = rng.choice([0, 1, 2]) << 2
        for w in range(n):
            values = [rng.choice(edges) if rng.random() < 0.3 else rng.getrandbits(32)
                      for _ in range(k)]
            packets.append((w + 1, ina_packet(ina_bench.host(w), ina_bench.AGGREGATOR,
                                              kind=CONTRIB, job=ina_bench.JOB, worker=w,
                                              slot=slot, ver=ver, chunk=chunk, values=values,
                                              flags=fmt)))
    return packets + rng.sample(packets, len(packets) // 4)


@pytest.mark.parametrize("seed", [1, 2])
def test_ina_with_rolled_lanes_matches_python(native_cache, monkeypatch, seed):
    k = 64
    doc = ina_bench.ina_bmv2_json(k)
    switches = []
    for native in (False, True):
        monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
        sw = ina_bench.configured_switch(k, 4, program=doc)
        assert sw.program.untraced.native_in_use == (
            ("parse", "ingress", "egress", "deparse") if native else ())
        switches.append(sw)
    python, native = switches
    source = native.program.untraced.native.c_source
    assert ROLLED_LOOP in source and "LANE_LOOPS static int ctl_ingress_impl" in source
    for i, (port, data) in enumerate(_packets(k, 4, 24, seed)):
        assert native.receive(port, data) == python.receive(port, data), f"packet {i}"
    assert _state(native) == _state(python)


def test_ina_rolled_and_unrolled_controls_are_the_same_switch(native_cache, monkeypatch):
    """The same packets through ina.p4's native controls built with and without rolling."""
    k = 16
    doc = ina_bench.ina_bmv2_json(k)
    monkeypatch.setenv("INAEMU_NATIVE", "1")
    rolled = ina_bench.configured_switch(k, 3, program=doc)
    monkeypatch.setattr(nativereroll, "MIN_TRIPS", 10 ** 6)
    monkeypatch.setattr(template_store, "ENABLED", False)     # (nor one stored on disk)
    codeshare.clear()       # (else the rolled program's code is shared with the second switch)
    try:
        unrolled = ina_bench.configured_switch(k, 3, program=doc)
    finally:
        codeshare.clear()
    assert ROLLED_LOOP in rolled.program.untraced.native.c_source
    assert ROLLED_LOOP not in unrolled.program.untraced.native.c_source
    for i, (port, data) in enumerate(_packets(k, 3, 20, 5)):
        assert rolled.receive(port, data) == unrolled.receive(port, data), f"packet {i}"
    assert _state(rolled) == _state(unrolled)
