"""The streamed check's block digest (inaemu/sim/native/block_digest.py): the C is its
definition's sums, equal bytes give equal digests and every small change another, a C that
differs from the definition is refused, and the check's verdicts are those SHA-1 gave."""

import numpy as np
import pytest

from inaemu.sim.native import block_digest, native_loop_class
from inaemu.sim.native import why_not as native_why_not

needs_c = pytest.mark.skipif(native_loop_class() is None,
                             reason=f"no native core here: {native_why_not()}")
P = block_digest.P


@needs_c
def test_the_c_digest_builds_and_passes_its_check_where_the_native_core_does():
    assert block_digest.digester() is not block_digest.sha1_digest, block_digest.why_not()


def _c():
    from p4switch.runtime.cgen import nativebuild
    from pathlib import Path
    source = (Path(block_digest.__file__).parent / "blockdigest.c").read_text()
    return nativebuild.load_source(block_digest.PREFIX, source).digest


@needs_c
@pytest.mark.parametrize("length", [0, 1, 3, 4, 5, 31, 32, 33, 36, 1000, 16_384 * 4 + 2])
def test_the_c_digest_is_the_definitions_sums(length):
    rng = np.random.default_rng(length)
    data = rng.integers(0, 256, length, np.uint8).tobytes()
    for keys in [(1, P - 2), (P - 2, 2), tuple(int(k) for k in rng.integers(1, P - 1, 2))]:
        assert _c()(data, *keys) == block_digest.reference_digest(data, keys)


@needs_c
def test_the_c_digest_refuses_keys_outside_the_field_and_non_buffers():
    for keys in [(0, 5), (5, P), (5, P + 7)]:
        with pytest.raises(ValueError):
            _c()(b"abcd", *keys)
    with pytest.raises(TypeError):
        _c()("abcd", 3, 5)


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
    """The check before use: one key's sum alone, the words big-endian, the byte count left
    out, the last partial word dropped."""
    reference = block_digest.reference_digest

    def one_key(data, k1, k2):
        return reference(data, (k1, k1))

    def big_endian(data, k1, k2):
        padded = data + bytes(-len(data) % 4)
        swapped = np.frombuffer(padded, ">u4").astype("<u4").tobytes()[:len(data)]
        return reference(swapped, (k1, k2)) if len(data) % 4 == 0 else reference(data, (k1, k2))

    def no_count(data, k1, k2):
        words = np.frombuffer(data + bytes(-len(data) % 4), "<u4").tolist()
        out = b""
        for k in (k1, k2):
            h = 0
            for word in words:
                h = (h * k + word) % P
            out += h.to_bytes(8, "little")
        return out

    def tail_dropped(data, k1, k2):
        return reference(data[:len(data) - len(data) % 4] + bytes(len(data) % 4), (k1, k2))

    assert block_digest.differs_from_definition(lambda d, k1, k2: reference(d, (k1, k2))) is None
    for wrong in (one_key, big_endian, no_count, tail_dropped):
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
