"""The compile cache (inaemu/compile_cache.py): a program is compiled once per (sources,
defines, compiler); an entry is complete or absent; a change to an included file is a miss."""

from __future__ import annotations

import json

from inaemu.compile_cache import cache_key, compile_cached
from tests.conftest import copy_p4_program



def test_second_compile_is_read_back_and_equal(tmp_path):
    program, cache = copy_p4_program(tmp_path), tmp_path / "cache"
    first = compile_cached(program, directory=cache)
    second = compile_cached(program, directory=cache)
    assert (first.cached, second.cached) == (False, True)
    assert first.bmv2_json == second.bmv2_json and first.p4info_text == second.p4info_text
    assert json.loads(second.bmv2_json)["pipelines"]
    assert sorted(p.name for p in cache.iterdir()) == [f"{first.key}.json",
                                                       f"{first.key}.p4info.binpb",
                                                       f"{first.key}.p4info.txtpb"]


def test_key_follows_defines_and_included_files(tmp_path):
    program = copy_p4_program(tmp_path)
    base = cache_key(program)
    assert cache_key(program, {"X": "1"}) != base
    included = program.parent / "forwarding.p4inc"
    included.write_text(included.read_text() + "\n// changed\n")
    assert cache_key(program) != base


def test_a_damaged_entry_is_compiled_again(tmp_path):
    program, cache = copy_p4_program(tmp_path), tmp_path / "cache"
    key = compile_cached(program, directory=cache).key
    (cache / f"{key}.json").write_text("{ not json")
    again = compile_cached(program, directory=cache)
    assert not again.cached and json.loads(again.bmv2_json)
    assert compile_cached(program, directory=cache).cached
