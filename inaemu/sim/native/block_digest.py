"""A block's digest for the streamed check, in about half SHA-1's time (`blockdigest.c`).

Why: a ring check judges a block once and gives every other worker whose values are the same
bytes that verdict (inaemu/sim/streamed_check.py `_check`), knowing them by a digest of each
worker's block. SHA-1 of every worker's every block was ~8 % of a 64 x 1 MiB ring run's loop
(64 MiB of cold values at ~0.8 GB/s).

What replaces it is a keyed polynomial hash, whose collisions are bounded by arithmetic rather
than assumed: `reference_digest` is the definition (two sums of the 32-bit words in powers of
two keys mod 2^61 - 1; the C file says why two different blocks of L words share a digest
with probability at most ((L + 1) / (2^61 - 2))^2, ~2^-98 for 16 KiB). The keys are drawn at
random once per process, after nothing that depends on them: the values come from the run's
seed. The C is compared with the definition before use; without it (no compiler,
`INAEMU_NATIVE=0`, a failed check) `digester()` gives SHA-1, as before.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from pathlib import Path
from typing import Callable

import numpy as np

PREFIX = "inaemu_block_digest_"
P = (1 << 61) - 1

_lock = threading.Lock()
_state: dict = {}


def reference_digest(data: bytes, keys: tuple[int, int]) -> bytes:
    """The definition: for each key k, Horner's sum (h = h k + w mod 2^61 - 1) over the
    bytes' 32-bit little-endian words (the last zero-padded), then the byte count; the two
    sums as 8 little-endian bytes each."""
    padded = data + bytes(-len(data) % 4)
    words = np.frombuffer(padded, "<u4").tolist()
    out = b""
    for k in keys:
        h = 0
        for word in words:
            h = (h * k + word) % P
        h = (h * k + len(data)) % P
        out += h.to_bytes(8, "little")
    return out


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
    keys = (1 + secrets.randbelow(P - 1), 1 + secrets.randbelow(P - 1))
    c_digest = built.digest

    def digest(data) -> bytes:
        return c_digest(data, *keys)
    return digest


def differs_from_definition(c) -> str | None:
    """Where the C digest differs from `reference_digest`, or None: every length from 0 to
    41 bytes (the four chains' joins and a partial last word), blocks of values, the keys'
    edges (1 and p - 2) and random ones, and words at 2^32 - 1."""
    rng = np.random.default_rng(13)
    keys = [(1, P - 2), (P - 2, 1), (2, 3)] + \
        [tuple(int(k) for k in rng.integers(1, P - 1, 2)) for _ in range(3)]
    datas = [rng.integers(0, 256, n, np.uint8).tobytes() for n in range(42)]
    datas += [b"\xff" * 37, rng.standard_normal(1027).astype(np.float32).tobytes()]
    for k1, k2 in keys:
        for data in datas:
            if c(data, k1, k2) != reference_digest(data, (k1, k2)):
                return f"blockdigest.c differs from reference_digest: {len(data)} bytes, " \
                       f"keys {k1}, {k2}"
    return None
