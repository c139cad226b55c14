"""A P4Info read from its protobuf bytes (the compile cache's `.p4info.binpb`) indexes as the
text does. The cache writes the bytes with a digest of the JSON, so a
matching digest spares parsing the JSON; an entry without them (older caches) or whose JSON
does not match is checked by parsing it as before."""

from __future__ import annotations


import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from controller.errors import P4InfoError
from controller.p4info import P4InfoIndex
from inaemu.compile_cache import compile_cached, p4info_binary

from p4info_sample import SAMPLE_P4INFO
from tests.conftest import copy_p4_program


def test_the_bytes_index_as_the_text_does():
    text = P4InfoIndex.from_text(SAMPLE_P4INFO)
    binary = P4InfoIndex.from_binary(p4info_binary(SAMPLE_P4INFO))
    assert binary.p4info == text.p4info and binary.binary is not None
    assert binary.table("ipv4_lpm") == text.table("ipv4_lpm")


def test_garbage_bytes_are_a_p4info_error():
    with pytest.raises(P4InfoError, match="not a binary P4Info"):
        P4InfoIndex.from_binary(b"\xff\xff\xff", source="x.binpb")



def test_the_cache_keeps_the_binary_p4info_and_checks_the_json_by_it(tmp_path):
    program, cache = copy_p4_program(tmp_path), tmp_path / "cache"
    first = compile_cached(program, directory=cache)
    expected = p4info_pb2.P4Info()
    text_format.Parse(first.p4info_text, expected)
    assert first.p4info_binary == expected.SerializeToString()
    binpb = cache / f"{first.key}.p4info.binpb"
    assert binpb.exists()
    again = compile_cached(program, directory=cache)
    assert again.cached and again.p4info_binary == first.p4info_binary
    # an older entry (no binary file): checked by parsing the JSON, the file written then
    binpb.unlink()
    older = compile_cached(program, directory=cache)
    assert older.cached and older.p4info_binary == first.p4info_binary and binpb.exists()
    # a JSON that is not the one the digest was made for: parsed, found damaged, compiled
    (cache / f"{first.key}.json").write_text("{ not json")
    damaged = compile_cached(program, directory=cache)
    assert not damaged.cached and damaged.bmv2_json == first.bmv2_json
    # another valid JSON under the digest of the first: parsed, valid, digest written anew
    (cache / f"{first.key}.json").write_bytes(b'{"other": 1}')
    other = compile_cached(program, directory=cache)
    assert other.cached and other.bmv2_json == b'{"other": 1}'
    assert compile_cached(program, directory=cache).cached
