"""The streamed check's block digest (inaemu/sim/native/block_digest.py): the C is its
definition's sums, equal bytes give equal digests and every small change another, a C that
differs from the definition is refused, and the check's verdicts are those SHA-1 gave."""

import numpy as np
import pytest

from inaemu.sim.native import block_digest, native_loop_class
from inaemu.sim.native import why_not as native_why_not

needs_c = pytest.mark.skipif(native_loop_class() is None,
                             reason=f"no native core here: {native_why_not()}")
KEYS = block_digest.KEYS


def _c():
    from p4switch.runtime.cgen import nativebuild
    from pathlib import Path
    source = (Path(block_digest.__file__).parent / "blockdigest.c").read_text()
    return nativebuild.load_source(block_digest.PREFIX, source).digest


@needs_c
def test_the_c_digest_builds_and_passes_its_check_where_the_native_core_does():
    assert block_digest.digester() is not block_digest.sha1_digest, block_digest.why_not()


@needs_c
@pytest.mark.parametrize("length", [0, 1, 3, 4, 5, 7, 8, 9, 31, 32, 33, 36, 1000,
                                    16_384 * 4 + 2])
def test_the_c_digest_is_the_definitions_sums(length):
    rng = np.random.default_rng(length)
    data = rng.integers(0, 256, length, np.uint8).tobytes()
    need = block_digest.key_words_for(length)
    for words, fill in [(need, "random"), (need + 10, "random"), (need, "ones"), (need, "zeros")]:
        if fill == "random":
            keys = rng.integers(0, 256, 4 * KEYS * words, np.uint8).tobytes()
        else:
            keys = (b"\xff" if fill == "ones" else b"\x00") * (4 * KEYS * words)
        assert _c()(data, keys) == block_digest.reference_digest(data, keys)
        assert _c()(memoryview(b"." + data)[1:], keys) == _c()(data, keys)   # unaligned


@needs_c
def test_the_c_digest_refuses_short_or_ragged_keys_and_non_buffers():
    keys = bytes(4 * KEYS * 2)          # one pair of words a key: 8 bytes at most
    assert len(_c()(b"12345678", keys)) == 8 * (KEYS + 1)
    with pytest.raises(ValueError, match="9 bytes need keys of 4 words, not 2"):
        _c()(b"123456789", keys)
    with pytest.raises(ValueError, match="whole pairs"):
        _c()(b"abcd", bytes(4 * KEYS * 2 + 4))
    with pytest.raises(TypeError):
        _c()("abcd", keys)
    with pytest.raises(TypeError):
        _c()(b"abcd", bytearray(keys))


def test_the_definition_is_nh_written_out_word_by_word():
    """`reference_digest` against the sums written one product at a time in Python ints."""
    rng = np.random.default_rng(5)
    for length in (0, 3, 8, 13, 64):
        data = rng.integers(0, 256, length, np.uint8).tobytes()
        words = block_digest.key_words_for(length) + 4
        keys = rng.integers(0, 256, 4 * KEYS * words, np.uint8).tobytes()
        padded = data + bytes(-len(data) % 8)
        w = [int.from_bytes(padded[i:i + 4], "little") for i in range(0, len(padded), 4)]
        expected = b""
        for j in range(KEYS):
            k = [int.from_bytes(keys[4 * (j * words + i):4 * (j * words + i) + 4], "little")
                 for i in range(words)]
            total = sum(((w[i] + k[i]) % 2**32) * ((w[i + 1] + k[i + 1]) % 2**32)
                        for i in range(0, len(w), 2))
            expected += (total % 2**64).to_bytes(8, "little")
        expected += length.to_bytes(8, "little")
        assert block_digest.reference_digest(data, keys) == expected


def test_grown_keys_keep_their_prefixes_and_a_long_block_is_digested():
    short = block_digest.random_keys(6)
    grown = block_digest.random_keys(10, short)
    assert len(grown) == 4 * KEYS * 10
    for j in range(KEYS):
        assert grown[40 * j:40 * j + 24] == short[24 * j:24 * (j + 1)]
    data = bytes(range(20))             # 5 words, 6 with the pad: within both
    assert block_digest.reference_digest(data, grown) == \
        block_digest.reference_digest(data, short)
    digest = block_digest.digester()
    values = np.random.default_rng(6).standard_normal(3 * block_digest.MIN_KEY_WORDS)
    small = values[:100].astype(np.float32)
    before = digest(small.data)
    long_block = digest(values.astype(np.float32).data)     # longer than the first keys
    assert digest(values.astype(np.float32).data) == long_block
    assert digest(small.data) == before


def test_equal_bytes_give_equal_digests_and_small_changes_other_ones():
    """Whichever digest this process uses: one bit flipped anywhere, two values swapped, a
    value moved by one ulp, a zero word appended: each another digest."""
    digest = block_digest.digester()
    values = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    base = digest(values.copy().data)
    assert digest(values.copy().data) == base
    rng = np.random.default_rng(4)
    for bit in rng.integers(0, 8 * values.nbytes, 64):
        changed = bytearray(values.tobytes())
        changed[bit // 8] ^= 1 << (bit % 8)
        assert digest(bytes(changed)) != base
    swapped = values.copy()
    swapped[[10, 11]] = swapped[[11, 10]]
    assert digest(swapped.data) != base
    nudged = values.copy()
    nudged[4095] = np.nextafter(nudged[4095], np.float32(np.inf))
    assert digest(nudged.data) != base
    assert digest(np.append(values, np.float32(0)).data) != base


def test_a_c_digest_that_differs_from_the_definition_is_refused():
    """The check before use: one key's sum three times, the words big-endian, the byte count
    left out, the last partial word dropped, an unaligned buffer read one byte off."""
    reference = block_digest.reference_digest

    def plain(data, keys):
        return reference(bytes(data), keys)

    def one_key(data, keys):
        first = keys[:len(keys) // KEYS]
        return reference(bytes(data), first * KEYS)

    def big_endian(data, keys):
        data = bytes(data)
        padded = data + bytes(-len(data) % 4)
        swapped = np.frombuffer(padded, ">u4").astype("<u4").tobytes()[:len(data)]
        return reference(swapped if len(data) % 4 == 0 else data, keys)

    def no_count(data, keys):
        return reference(bytes(data), keys)[:-8] + bytes(8)

    def tail_dropped(data, keys):
        data = bytes(data)
        return reference(data[:len(data) - len(data) % 4] + bytes(len(data) % 4), keys)

    def unaligned_off(data, keys):
        if isinstance(data, memoryview) and len(data):
            return reference(bytes(data.obj)[:len(data)], keys)
        return reference(bytes(data), keys)

    assert block_digest.differs_from_definition(plain) is None
    for wrong in (one_key, big_endian, no_count, tail_dropped, unaligned_off):
        assert block_digest.differs_from_definition(wrong) is not None, wrong.__name__


@pytest.mark.parametrize("loss", [0.0, 2.0])
def test_a_streamed_ring_judged_by_the_c_digest_gives_sha1s_verdicts(monkeypatch, loss):
    """The same run with each digest: every packet, every record (the verdicts included)."""
    from inaemu.sim import SimJob, simulate
    from inaemu.sim import streamed_check
    from topologies.builders import star
    topology = star(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    runs = []
    for digester in (block_digest.digester, lambda: block_digest.sha1_digest):
        monkeypatch.setattr(streamed_check.block_digest, "digester", digester)
        trace: list[str] = []
        result = simulate(topology, jobs, algo="ring", keep_results=False, seed=8, bw=1000,
                          size_bytes=4 * 30_001, loss=loss, trace=trace)
        runs.append((trace, [record.as_dict() for record in result.records]))
    assert runs[0] == runs[1]
    assert all(record["correct"] for record in runs[0][1])
