"""A float32 all-reduce call's integers: what each chunk's packet carries, and the sum back.

docs/protocol.md §5 and docs/formats.md. A job chooses a lane format (int32, int16 or int8: 1, 2
or 4 values per 32-bit wire lane, so a chunk holds k, 2k or 4k values) and a scaling:

* `job`: one scale for the call, limit / M, from M = the MAX round's global max |x|;
* `block`: one scale per chunk, limit / B, with B >= the chunk's max |x| over all workers
  agreed through the switch one step ahead: chunk c's packet carries (in `bmax`, a bfloat16
  rounded up) this worker's max for chunk c + pool_size, the next chunk to use the same slot;
  the switch keeps the max and the RESULT of chunk c returns it. The first window's maxima
  come from the MAX round, whose lanes 1..k-1 carry the per-chunk maxima of the first chunks
  (lane 0 the global max, as in job scaling).

limit = floor((2^(bits-1) - 1) / divisor): with divisor = n (the default) no sum of n values can
leave the lane's range; a smaller divisor (int16/int8 only) trades that guarantee for
resolution. The switch flags a cell whose packed sum overflowed; every worker sees the same
flags, so after the last result they all redo the flagged chunks, in chunk order, at divisor n
(`redo_chunks`). Nothing here does I/O: the session (hosts/ina_session.py) drives it.
"""

from __future__ import annotations

import numpy as np

from . import quantize as qz
from .ina_wire import HEADER_BYTES, _reused, contribution_payload, contribution_table


BLOCK_VALUES = 1 << 16      # values per block of the per-call vector work (256 KiB of float32)
_INFINITY_BITS = 0x7F800000  # |x|'s float32 bits are at least this for inf and NaN only


class FloatCodec:
    """Quantization of one worker's float32 vector for one call, and dequantization of sums."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('_scratch', '_sink', '_source', 'first_position', 'job', 'worker', 'n',
                 'pool_size', 'fmt', 'scaling', 'format_code', 'k', 'per_chunk', 'length',
                 'chunks', 'limit', 'safe_limit', '_full', '_values', '_last_row', 'block_max',
                 'local_max', '_local_bmax', '_agreed', 'global_max', '_scale', '_limits',
                 'overflowed', 'redo_chunks', 'unresolved_overflows', '_job_body', '_table',
                 '_table_first', '_lanes', '_quantized', '_sum', '_pending', '_packet_bytes',
                 '_wire_sums', '_block_sums', '_job_lanes', '_sum_rows', '_sum_dtype',
                 '_table_rows', '__weakref__')

    def __init__(self, values, *, job: int, worker: int, n: int, k: int,
                 pool_size: int, fmt: str, scaling: str, divisor: int,
                 first_position: int | None = None, scratch: dict | None = None,
                 sink=None):
        """`values`: float32 (ValueError if one is inf or NaN). `first_position`: the position
        of the call's chunk 0 (docs/protocol.md §4), when
        the caller sends chunk c at slot and version of position first_position + c: job
        scaling then builds every CONTRIB payload at once when the scale is known. `scratch`:
        a dict the caller keeps between calls, whose memory the call's internal vectors (the
        payloads, the RESULT lanes) reuse instead of fresh pages each call.

        Streamed (`sink` given): `values` is anything with `size` and `read(first, end)` (a
        `hosts.gradient_stream.GradientStream`), read a block at a time, and each block of
        the sum goes to `sink(first, values)` when its last RESULT is stored instead of into
        a result vector: the call holds what is in flight, not the vector. Job scaling with
        the overflow-free divisor n only (no chunk is ever redone); ValueError otherwise.
        A source with a `quantized(first, values)` method is told each range as it is
        quantized (the ranges the sink gets, in order): every worker of the job has
        quantized a range before any RESULT of it can exist, so the simulator's check sums
        its exact reference from these values instead of drawing them again. A sink with a
        `shared(first, lanes, key, make)` method is asked for each block's values: `make()`
        dequantizes the block's RESULT lanes, and `key` is everything else they depend on,
        so a sink may hand the values it made for equal lanes and key to another worker.
        A sink whose `lanes` is `(store, index)` keeps the RESULT lanes itself: each row goes
        to `store.store(index, block, row, rows, lanes)`, and a block's lanes come back from
        `store.take(index, block)` as the bytes stored (the simulator's native core keeps a
        job's lanes once for all its workers: inaemu/sim/native/joblanes.c)."""
        self._scratch = scratch
        self._sink = sink
        self._job_lanes = None if sink is None else getattr(sink, "lanes", None)
        self._source = None
        if sink is not None:
            if scaling != "job" or qz.format_limit(fmt, divisor) != qz.format_limit(fmt, n):
                raise ValueError("a streamed call needs job scaling and the divisor n")
            if first_position is None:
                raise ValueError("a streamed call needs its first position")
            self._source, values = values, None
        self.first_position = first_position
        self.job, self.worker, self.n, self.pool_size = job, worker, n, pool_size
        self.fmt, self.scaling = fmt, scaling
        self.format_code = qz.FORMAT_CODES[fmt]
        self.k = k
        self.per_chunk = k * qz.values_per_lane(fmt)
        self.length = (values if self._source is None else self._source).size
        self.chunks = -(-self.length // self.per_chunk)
        self.limit = qz.format_limit(fmt, divisor)
        self.safe_limit = qz.format_limit(fmt, n)
        # The whole chunks as rows of the caller's vector (read only, no copy), and the last,
        # partial one padded with zeros apart (not a padded copy of the whole vector: 16 MiB
        # written at the start of every call, before the MAX round can go).
        self._full = self.length // self.per_chunk
        self._values = None if values is None else \
            values[:self._full * self.per_chunk].reshape(self._full, self.per_chunk)
        self._last_row: np.ndarray | None = None
        if self._source is not None:
            self._init_streamed()
            return
        if self._full < self.chunks:
            self._last_row = np.zeros(self.per_chunk, np.float32)
            self._last_row[:values.size - self._full * self.per_chunk] = \
                values[self._full * self.per_chunk:]
        # Each chunk's max |x|: the max of the float32 bit patterns with the sign cleared
        # (the same float32 values: |x| orders as its bits for finite x), on integers, a
        # third faster than abs then max. The same pass finds inf and NaN (ValueError), which
        # the caller need not look for in a pass of its own.
        block_max = np.empty(self.chunks, np.uint32)
        scratch_rows = np.empty((min(self.chunks, self._block_rows()), self.per_chunk),
                                np.uint32)
        for first, end in self._row_blocks():
            magnitudes = scratch_rows[:end - first]
            np.bitwise_and(self._rows(first, end).view(np.uint32), 0x7FFFFFFF, out=magnitudes)
            np.max(magnitudes, axis=1, out=block_max[first:end])
        if self.chunks and block_max.max() >= _INFINITY_BITS:   # inf or NaN somewhere
            raise qz.non_finite_error(values)
        self.block_max = block_max.view(np.float32).astype(np.float64)
        self.local_max = float(self.block_max.max()) if self.chunks else 0.0
        self._local_bmax = qz.block_max_codes(self.block_max)
        self._agreed = np.zeros(self.chunks, np.uint16)  # block: each chunk's agreed bmax code
        self.global_max: float | None = None
        self._scale: float | None = None                 # job: the call's scale
        self._limits = np.full(self.chunks, self.limit, np.int64)   # of each sum's sending
        self.overflowed: list[int] = []                  # chunks whose RESULT was flagged
        self.redo_chunks: list[int] = []                 # fixed when the first pass ends
        self.unresolved_overflows = 0                    # flagged even at divisor n
        self._job_body: bytes | None = None
        self._table: memoryview | None = None            # job scaling: every payload (above)
        self._table_first = 0                            # the chunk of the table's first row
        self._lanes: np.ndarray | None = None            # job scaling: where quantizing writes
        self._quantized = 0                              # chunks quantized into the lanes
        self._sum: np.ndarray | None = None              # job scaling: the result, by blocks
        self._pending: list[int] | None = None           # RESULTs each block still waits for
        self._packet_bytes = HEADER_BYTES + 4 * k
        # the RESULT lanes as they arrived, in wire order (one row per chunk; read at the end)
        # (every row is written by its RESULT before any is read: no need to clear it)
        memory = _reused(scratch, "results", self.chunks * 4 * k)
        self._wire_sums = memoryview(bytearray(self.chunks * 4 * k) if memory is None
                                     else memory[:self.chunks * 4 * k])
        self._publish_rows()

    def _init_streamed(self) -> None:
        """The streamed call's state: the local max from one pass over the source (a block at
        a time), and no per-chunk vectors (job scaling needs none: one scale, no redo)."""
        max_bits = getattr(self._source, "max_bits", None)
        if max_bits is not None:         # the source's own pass (it may have drawn it ahead)
            local = max_bits(self.block_values(self.k, self.fmt))
            if local >= _INFINITY_BITS:
                raise ValueError("cannot quantize a non-finite value of the source")
        else:
            local = 0
            for first, end in self._row_blocks():
                bits = self._rows(first, end).view(np.uint32) & 0x7FFFFFFF
                top = int(bits.max())
                if top >= _INFINITY_BITS:
                    raise ValueError(f"cannot quantize a non-finite value in chunks "
                                     f"{first}..{end - 1}")
                local = max(local, top)
        self.local_max = float(np.array([local], np.uint32).view(np.float32)[0])
        self.block_max = None
        self._local_bmax = self._agreed = self._limits = None
        self.global_max = None
        self._scale = None
        self.overflowed, self.redo_chunks = [], []
        self.unresolved_overflows = 0
        self._job_body = self._table = self._lanes = None
        self._table_first = 0                 # the chunk of the table's first row
        self._quantized = 0
        self._sum = None
        self._pending = None
        self._packet_bytes = HEADER_BYTES + 4 * self.k
        self._wire_sums = None
        self._block_sums: dict[int, bytearray] = {}   # block -> its RESULT lanes so far
        self._publish_rows()

    @property
    def scale(self) -> float | None:
        """Job scaling: the call's scale once the MAX round is done (block scaling: None)."""
        return self._scale

    # ---- the MAX round ---------------------------------------------------------------------

    def max_offer(self) -> np.ndarray:
        """The MAX_CONTRIB lanes: float32 bit patterns of the global max (lane 0) and, for
        block scaling, of the first chunks' maxima (lanes 1..k-1)."""
        offer = np.zeros(self.k, np.float64)
        offer[0] = self.local_max
        if self.scaling == "block":
            first = min(self.k - 1, self.pool_size, self.chunks)
            offer[1:1 + first] = self.block_max[:first]
        return offer.astype(np.float32).view(np.int32)

    def on_max(self, patterns: np.ndarray) -> None:
        """The MAX_RESULT's lanes (unsigned patterns): the scale, or the first chunks' maxima."""
        maxima = (np.asarray(patterns, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32)
        maxima = maxima.view(np.float32).astype(np.float64)
        self.global_max = float(maxima[0])
        if self.scaling == "job":
            self._scale = 1.0 if self.global_max == 0 else self.limit / self.global_max
            wire = qz.wire_dtype(self.fmt)
            if self._source is not None:        # a table of one block, refilled per block
                self._sum_as_results_come()
                self._quantize_rows(1)
                return
            if self.first_position is None:
                table, lanes = None, np.empty((self.chunks, self.per_chunk), wire)
            else:
                table = contribution_table(
                    job=self.job, worker=self.worker, fmt=self.format_code,
                    first_position=self.first_position, pool_size=self.pool_size,
                    chunks=self.chunks, lane_dtype=wire, values_per_chunk=self.per_chunk,
                    scratch=self._scratch)
                lanes = table["lanes"]
            self._lanes = lanes
            if self.limit == self.safe_limit:
                self._sum_as_results_come()
            if table is None:
                self._quantize_rows(self.chunks)
                self._job_body = lanes.tobytes()
            else:
                # Only the first block now: the first window goes out at once, and the rest is
                # quantized a block at a time as the chunks are sent (`contribution`), while
                # the switch already aggregates (every worker quantizes after the MAX result).
                self._table = memoryview(table.view(np.uint8))
                self._quantize_rows(1)
            return
        first = min(self.pool_size, self.chunks)
        self._agreed[:first] = qz.block_max_codes(np.full(first, self.global_max))
        covered = min(self.k - 1, first)
        self._agreed[:covered] = qz.block_max_codes(maxima[1:1 + covered])

    def _sum_as_results_come(self) -> None:
        """Job scaling without redo (one scale for every chunk, each stored once): each block
        of chunks is dequantized into the result when its last RESULT is stored, so the call
        does not end with a pass over the whole vector (the same values: one division per
        element either way)."""
        rows = max(1, BLOCK_VALUES // self.per_chunk)
        self._sum = None if self._sink is not None else np.empty(self.length, np.float32)
        self._sum_rows = rows
        self._pending = [rows] * (self.chunks // rows) + ([self.chunks % rows]
                                                          if self.chunks % rows else [])
        self._sum_dtype = qz.wire_dtype(self.fmt)

    def _dequantize_rows(self, block: int) -> None:
        first = block * self._sum_rows * self.per_chunk
        end = min(first + self._sum_rows * self.per_chunk, self.length)
        size = self._sum_dtype.itemsize
        if self._sink is not None:     # streamed: the block's lanes, then to the sink
            if self._job_lanes is None:
                lanes = self._block_sums.pop(block)
            else:
                store, index = self._job_lanes
                lanes = store.take(index, block)
            dtype, scale = self._sum_dtype, self._scale

            def make() -> np.ndarray:
                sums = np.frombuffer(lanes, dtype, count=end - first)
                return qz.dequantize_scaled(sums, scale)
            shared = getattr(self._sink, "shared", None)
            self._sink(first, make() if shared is None else
                       shared(first, lanes, (dtype, end - first, scale), make))
            return
        sums = np.frombuffer(self._wire_sums, self._sum_dtype, count=end - first,
                             offset=first * size)
        qz.dequantize_scaled(sums, self._scale, out=self._sum[first:end])

    def _quantize_rows(self, rows: int) -> None:
        """Job scaling: quantize whole blocks of chunks into the lanes until the first `rows`
        chunks are done (a block at a time: the temporaries stay in cache)."""
        per_block = max(1, BLOCK_VALUES // self.per_chunk)
        first = self._quantized
        if self._source is not None:
            while first < rows:
                first = self._quantize_streamed_block(first, min(first + per_block, self.chunks))
            return
        while first < rows:
            end = min(first + per_block, self.chunks)
            qz.quantize_into(self._lanes[first:end], self._rows(first, end), self._scale,
                             self.limit, self.fmt)
            first = end
        self._quantized = first
        self._publish_rows()
        if first == self.chunks:
            self._lanes = None
            if self.limit == self.safe_limit:
                self._values = self._last_row = None   # no redo: the floats are not needed

    def _quantize_streamed_block(self, first: int, end: int) -> int:
        """Streamed: chunks [first, end) quantized into a table of their payloads (the last
        block's table memory again; every earlier row has been sent once and is kept by its
        flight). Returns end."""
        table = contribution_table(
            job=self.job, worker=self.worker, fmt=self.format_code,
            first_position=self.first_position + first, pool_size=self.pool_size,
            chunks=end - first, lane_dtype=qz.wire_dtype(self.fmt),
            values_per_chunk=self.per_chunk, first_chunk=first, scratch=self._scratch)
        start, stop = first * self.per_chunk, min(end * self.per_chunk, self.length)
        values = self._source.read(start, stop)
        quantized = getattr(self._source, "quantized", None)
        if quantized is not None:
            quantized(start, values)
        qz.quantize_into(table["lanes"], values, self._scale, self.limit, self.fmt)
        self._table, self._table_first, self._quantized = \
            memoryview(table.view(np.uint8)), first, end
        self._publish_rows()
        return end

    def _rows(self, first: int, end: int) -> np.ndarray:
        """The float32 values of chunks [first, end) as rows (the last chunk zero-padded): a
        view of the caller's vector, except for a range that takes in the last, partial
        chunk (a copy of that range; once per call for a block of rows). Streamed: read
        from the source (a new array)."""
        if self._source is not None:
            start, stop = first * self.per_chunk, min(end * self.per_chunk, self.length)
            return self._padded_rows(self._source.read(start, stop), end - first)
        if end <= self._full:
            return self._values[first:end]
        if first >= self._full:
            return self._last_row[None, :]
        return np.concatenate((self._values[first:], self._last_row[None, :]))

    def _padded_rows(self, values: np.ndarray, rows: int) -> np.ndarray:
        """Streamed: values read for `rows` chunks as rows, the last chunk zero-padded."""
        short = rows * self.per_chunk - values.size
        if short:
            values = np.concatenate((values, np.zeros(short, np.float32)))
        return values.reshape(rows, self.per_chunk)

    def _block_rows(self) -> int:
        return max(1, BLOCK_VALUES // self.per_chunk)

    @staticmethod
    def block_values(k: int, fmt: str) -> int:
        """Values per block of a call of `k` lanes in `fmt`: what a streamed call reads from
        its source at a time (whole chunks of about BLOCK_VALUES values)."""
        per_chunk = k * qz.values_per_lane(fmt)
        return max(1, BLOCK_VALUES // per_chunk) * per_chunk

    def _row_blocks(self):
        """(first, end) chunk ranges of about BLOCK_VALUES values: whole-vector steps a block
        at a time keep their temporaries in the cache instead of allocating the vector again."""
        rows = max(1, BLOCK_VALUES // self.per_chunk)
        for first in range(0, self.chunks, rows):
            yield first, min(first + rows, self.chunks)

    # ---- contributions and results -----------------------------------------------------------

    def table_rows(self) -> tuple[memoryview | None, int, int, int]:
        """(table, row bytes, first row's chunk, chunks ready): with job scaling, the CONTRIB
        payload of chunk first <= c < ready is table[(c - first) * row bytes:(c - first + 1)
        * row bytes], what `contribution` returns for it (the session's per-chunk path reads
        it so; first is 0 but for a streamed call); (None, 0, 0, 0) otherwise. Kept as one
        tuple (`_table_rows`, which the native core's session reads as it is) and made again
        whenever one of them changes (`_publish_rows`): the session asks for it on every
        window it fills."""
        return self._table_rows

    def _publish_rows(self) -> None:
        """`table_rows()` from the fields it gives, after any of them changed."""
        self._table_rows = (None, 0, 0, 0) if self._table is None else \
            (self._table, self._packet_bytes, self._table_first, self._quantized)

    def contribution(self, key: int, slot: int, ver: int) -> bytes:
        """The CONTRIB payload of transmission `key` (chunk `key`, or a redo past the chunks)."""
        if self._table is not None and key < self.chunks:
            if key >= self._quantized:
                self._quantize_rows(key + 1)
            size = self._packet_bytes                # slot and ver follow first_position
            row = key - self._table_first
            if row < 0:
                raise ValueError(f"chunk {key}: a streamed call sends its chunks in order")
            return self._table[row * size:(row + 1) * size].tobytes()
        if key < self.chunks:
            chunk, limit = key, self.limit
            ahead = key + self.pool_size
            bmax = int(self._local_bmax[ahead]) if (self.scaling == "block"
                                                    and ahead < self.chunks) else 0
        else:
            chunk, limit, bmax = self.redo_chunks[key - self.chunks], self.safe_limit, 0
        if self.scaling == "job" and limit == self.limit:
            step = self.per_chunk * qz.FORMAT_BITS[self.fmt] // 8
            body = self._job_body[chunk * step:(chunk + 1) * step]
        else:
            body = self._quantized_chunk(chunk, limit)
        return contribution_payload(job=self.job, worker=self.worker, slot=slot, chunk=key,
                                    ver=ver, bmax=bmax, fmt=self.format_code, body=body)

    def _quantized_chunk(self, chunk: int, limit: int) -> bytes:
        """One chunk's wire bytes at its own scale (block scaling, or a redo): scalar work and
        a few whole-array numpy steps, since this runs once per packet."""
        if self.scaling == "job":
            top = self.global_max
        else:
            top = qz.block_max_value(int(self._agreed[chunk]))
        if self.block_max[chunk] > top:
            raise ValueError(f"chunk {chunk}: the agreed maximum {top!r} is below this worker's "
                             f"{self.block_max[chunk]!r}")
        scale = limit / top if top > 0 else 1.0
        scaled = np.multiply(self._rows(chunk, chunk + 1)[0], scale, dtype=np.float64)
        np.clip(np.rint(scaled, out=scaled), -limit, limit, out=scaled)
        return scaled.astype(qz.wire_dtype(self.fmt)).tobytes()

    def on_result(self, key: int, payload: bytes, bmax: int, overflow: bool) -> None:
        """A RESULT of transmission `key`: its sums, the block max it agrees one step ahead,
        and the switch's overflow flag."""
        redo = key >= self.chunks
        chunk = self.redo_chunks[key - self.chunks] if redo else key
        if not redo and self.scaling == "block" and key + self.pool_size < self.chunks:
            self._agreed[key + self.pool_size] = bmax
        if overflow:    # at divisor n a redo would change nothing: count it (a faulty peer)
            if redo or self.limit == self.safe_limit:
                self.unresolved_overflows += 1
            else:
                self.overflowed.append(chunk)
        if redo:
            self._limits[chunk] = self.safe_limit
        self.store(chunk, payload)

    def store(self, chunk: int, payload: bytes) -> None:
        """A RESULT's lanes, as they are, into chunk `chunk`'s row (a later one replaces it).
        (The native simulator core's C path does the same in `codec_store`,
        inaemu/sim/native/inasession.c: a change here is a change there.)"""
        size = 4 * self.k
        if self._job_lanes is not None:
            block, row = divmod(chunk, self._sum_rows)
            store, index = self._job_lanes
            rows = min(self._sum_rows, self.chunks - block * self._sum_rows)
            store.store(index, block, row, rows, memoryview(payload)[HEADER_BYTES:])
        elif self._sink is not None:
            block, row = divmod(chunk, self._sum_rows)
            lanes = self._block_sums.get(block)
            if lanes is None:
                rows = min(self._sum_rows, self.chunks - block * self._sum_rows)
                lanes = self._block_sums[block] = bytearray(rows * size)
            lanes[row * size:(row + 1) * size] = memoryview(payload)[HEADER_BYTES:]
        else:
            self._wire_sums[chunk * size:(chunk + 1) * size] = memoryview(payload)[HEADER_BYTES:]
        pending = self._pending
        if pending is not None:
            block = chunk // self._sum_rows
            left = pending[block] - 1
            pending[block] = left
            if not left:
                self._dequantize_rows(block)

    def end_of_pass(self) -> int:
        """After the first pass's last result: the chunks to redo (every worker's list is the
        same: the flags came from the same cells), as extra transmissions. Returns how many."""
        self.redo_chunks = sorted(self.overflowed)
        self.overflowed = []
        return len(self.redo_chunks)

    # ---- the sum ---------------------------------------------------------------------------

    def scales(self) -> np.ndarray:
        """Per chunk, the scale its sum was sent at (after the call: agreed maxima, limits)."""
        if self.scaling == "job":
            top = self.global_max or 0.0
            return self._limits / top if top > 0 else np.ones(self.chunks)
        return qz.block_scales(self._agreed, self._limits)

    def result(self) -> np.ndarray | None:
        """The sum (None when streamed: every block went to the sink)."""
        if self._sink is not None:
            return None
        if self._pending is not None and not any(self._pending):
            return self._sum                 # dequantized block by block as results came
        per_chunk = self.scales()
        if per_chunk.size and np.all(per_chunk == per_chunk[0]):
            scales = float(per_chunk[0])     # one scale: no per-element vector to build
        else:
            scales = np.repeat(per_chunk, self.per_chunk)[:self.length]
        sums = np.frombuffer(self._wire_sums, qz.wire_dtype(self.fmt))[:self.length]
        return qz.dequantize_scaled(sums, scales)

    def release(self) -> None:
        """After `result`: drop the vectors; `error_bound` needs only the scales."""
        self._values = self._job_body = self._table = self._wire_sums = self._lanes = None
        self._last_row = self._source = None
        self._sum = self._pending = None
        self._publish_rows()

    def error_bound(self, result: np.ndarray) -> np.ndarray:
        """Per element: n half-units of the scale its block's sum used, plus half an ulp."""
        if self._sink is not None:          # one scale, so any block of the sum alone
            return qz.error_bound_scaled(self.n, self._scale, result)
        per_chunk = self.scales()
        if per_chunk.size and np.all(per_chunk == per_chunk[0]):
            return qz.error_bound_scaled(self.n, float(per_chunk[0]), result)
        return qz.error_bound_scaled(self.n, per_chunk, result, per=self.per_chunk)
