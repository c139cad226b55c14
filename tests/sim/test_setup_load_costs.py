"""What loading one program into many switches does once per process and what it still does per
switch (the simulator's set-up, docs/scale.md): the engine's generated fast-path modules are
compiled once per source, but every switch runs its own copy of their bytecode (CPython
specialises bytecode in place per globals dict; shared code objects slowed switches taking
turns), and the generated source is parsed once for `may_read_slot`."""

from __future__ import annotations

from inaemu.sim import control
from p4switch.runtime import Switch
from p4switch.runtime.pygen import codecache, fastpath


def _code_objects(switch: Switch):
    engine = switch._engine
    return [engine.fast.__code__, engine.fast_queued.__code__,
            engine.clear_invalid.__code__, engine.length_after_ingress.__code__]


def test_fast_paths_compiled_once_and_run_from_own_copies():
    program = control.compile_program(str(control.L3_PROGRAM))
    first = Switch(program.config)
    before = codecache._compiled.cache_info()
    second, third = Switch(program.config), Switch(program.config)
    after = codecache._compiled.cache_info()
    assert after.misses == before.misses            # nothing compiled again
    assert after.hits - before.hits == 2 * 4        # 4 modules per switch, from the cache
    for a, b in ((first, second), (second, third)):
        for x, y in zip(_code_objects(a), _code_objects(b)):
            assert x is not y and x.co_code == y.co_code and x.co_consts == y.co_consts
    # and they forward alike
    frame = bytes(12) + b"\x08\x00" + bytes(20)
    assert first.receive(1, frame) == second.receive(1, frame)


def test_a_generated_source_is_parsed_once_for_every_slot_asked():
    source = "def egress(f, v):\n    f[3] = f[4]\n\ndef parse(f, v, d):\n    egress(f, v)\n"
    fastpath._function_defs.cache_clear()
    answers = [fastpath.may_read_slot(source, ("parse",), slot) for slot in (3, 4, 5)]
    assert answers == [False, True, False]
    assert fastpath._function_defs.cache_info().misses == 1
