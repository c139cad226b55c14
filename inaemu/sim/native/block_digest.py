"""A block's digest for the streamed check, at memory speed (`blockdigest.c`).

Why: a ring check judges a block once and gives every other worker whose values are the same
bytes that verdict (inaemu/sim/streamed_check.py `_check`), knowing them by a digest of each
worker's block. SHA-1 of every worker's every block was ~8 % of a 64 x 1 MiB ring run's loop
(64 MiB of cold values at ~0.8 GB/s); a polynomial sum mod 2^61 - 1 (session 50) ~4.5 %.

What replaces it is UMAC's NH with three independent random keys, whose collisions are
bounded by arithmetic rather than assumed: `reference_digest` is the definition, and the C
file says why two different blocks of one length share a digest with probability at most
2^-96. The keys are drawn at random per process, after nothing that depends on them (the
values come from the run's seed), and grow (their prefixes kept) to the longest block asked
for. The C is compared with the definition before use; without it (no compiler,
`INAEMU_NATIVE=0`, a failed check) `digester()` gives SHA-1.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from pathlib import Path
from typing import Callable

import numpy as np

PREFIX = "inaemu_block_digest_"
KEYS = 3
MIN_KEY_WORDS = 1 << 12     # a key string's first length: a 16 KiB block's words

_lock = threading.Lock()
_state: dict = {}


def key_words_for(nbytes: int) -> int:
    """The words a key string needs for `nbytes` bytes: the words, rounded up to a pair."""
    return (nbytes + 7) // 8 * 2


def reference_digest(data: bytes, keys: bytes) -> bytes:
    """The definition: the bytes as 32-bit little-endian words zero-padded to whole pairs;
    for each of the three key strings in `keys` (equal lengths, one after the other) the sum
    over pairs of ((w_2i + k_2i) mod 2^32) ((w_2i+1 + k_2i+1) mod 2^32) mod 2^64; the three
    sums and the byte count as 8 little-endian bytes each."""
    nwords = key_words_for(len(data))
    words = np.frombuffer(data + bytes(4 * nwords - len(data)), "<u4").astype(np.uint64)
    key_strings = np.frombuffer(keys, "<u4").reshape(KEYS, -1)
    if key_strings.shape[1] < nwords:
        raise ValueError(f"{len(data)} bytes need keys of {nwords} words")
    out = b""
    for key in key_strings:
        mixed = (words + key[:nwords].astype(np.uint64)) & 0xFFFF_FFFF
        out += int((mixed[0::2] * mixed[1::2]).sum(dtype=np.uint64)).to_bytes(8, "little")
    return out + len(data).to_bytes(8, "little")


def random_keys(words: int, grown_from: bytes = b"") -> bytes:
    """Three key strings of `words` words each: `grown_from`'s strings (shorter, or empty)
    with fresh random words after each, so that a shorter block's digest does not change."""
    old = len(grown_from) // KEYS
    return b"".join(grown_from[j * old:(j + 1) * old] + secrets.token_bytes(4 * words - old)
                    for j in range(KEYS))


def sha1_digest(data) -> bytes:
    return hashlib.sha1(data, usedforsecurity=False).digest()


def digester() -> Callable[[object], bytes]:
    """`digest(buffer) -> bytes`: the checked C digest with this process's keys, else SHA-1.
    Equal bytes, equal digests; different bytes of one length, different digests but with the
    probability above (or SHA-1's)."""
    if "digest" not in _state:
        with _lock:
            if "digest" not in _state:
                _state["digest"] = _load()
    return _state["digest"]


def why_not() -> str | None:
    """Why `digester()` is SHA-1 (after it was asked for), else None."""
    return _state.get("why_not")


def _load() -> Callable[[object], bytes]:
    from p4switch.runtime.cgen import nativebuild
    if not nativebuild.enabled():
        _state["why_not"] = "C is off (INAEMU_NATIVE=0)"
        return sha1_digest
    built = nativebuild.load_source(PREFIX, (Path(__file__).parent / "blockdigest.c").read_text())
    if built is None:
        _state["why_not"] = "blockdigest.c could not be built: " + \
            "; ".join(nativebuild.why_not.values())
        return sha1_digest
    problem = differs_from_definition(built.digest)
    if problem is not None:
        _state["why_not"] = problem
        return sha1_digest
    c_digest = built.digest
    keys = [random_keys(MIN_KEY_WORDS)]
    grow = threading.Lock()

    def digest(data) -> bytes:
        try:
            return c_digest(data, keys[0])
        except ValueError:          # a longer block than any before: longer keys, then again
            need = key_words_for(memoryview(data).nbytes)
            with grow:
                have = len(keys[0]) // 4 // KEYS
                if have < need:
                    keys[0] = random_keys(max(need, 2 * have), keys[0])
            return c_digest(data, keys[0])
    return digest


def differs_from_definition(c) -> str | None:
    """Where the C digest differs from `reference_digest`, or None: every length from 0 to
    41 bytes (a partial last word and pair), keys just long enough and longer, blocks of
    values, an unaligned buffer, and words and keys at 0 and 2^32 - 1."""
    rng = np.random.default_rng(13)
    datas = [rng.integers(0, 256, n, np.uint8).tobytes() for n in range(42)]
    datas += [b"\xff" * 37, rng.standard_normal(1027).astype(np.float32).tobytes()]
    for data in datas:
        need = key_words_for(len(data))
        for words in {need, need + 2, 2 * need + 6}:
            for fill in ("random", "zeros", "ones"):
                if fill == "random":
                    keys = rng.integers(0, 256, 4 * KEYS * words, np.uint8).tobytes()
                else:
                    keys = (b"\x00" if fill == "zeros" else b"\xff") * (4 * KEYS * words)
                for view in (data, memoryview(b"x" + data)[1:]):
                    if c(view, keys) != reference_digest(data, keys):
                        return f"blockdigest.c differs from reference_digest: " \
                               f"{len(data)} bytes, keys of {words} words ({fill})"
    return None
