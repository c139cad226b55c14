/* A job's RESULT lanes kept once (`JobLanes`): the blocks of the sum that a streamed INA call's
 * workers store (hosts/ina_codec.py's `store`, inasession.c's `codec_store`) and hand to the
 * check (`take`).
 *
 * Every worker of a job receives the same RESULTs, so each kept its own copy of the same
 * bytes: a block's lanes (256 KiB at 64 Ki values) zeroed, written a row at a time as RESULTs
 * came, then compared byte for byte with the first worker's by the check. At 1,024 workers
 * that is a gigabyte of memory traffic per 256 MiB of sum, none of it in cache. Here a block's
 * lanes are kept once (`canon`): a row's first store writes it, and every later store of that
 * row is compared with it while the row is still in cache (the switch multicasts the same
 * RESULT to every worker within a few microseconds of virtual time). A worker all of whose
 * rows were equal is handed the block's one bytes object, which the check then finds equal
 * to the one it judged by identity.
 *
 * What a worker is handed is always the bytes it stored, as if it had kept its own copy:
 * - a store that differs from the row kept makes the worker's block its own (`private`: a
 *   bytearray with the rows it stored so far, zeros elsewhere, as its own copy would be), and
 *   its later stores of the block go there;
 * - a worker handed a block before storing every row of it gets its own copy of the rows it
 *   stored (zeros elsewhere);
 * - a worker that ended (`end`) keeps its own copies from then on.
 * A block's kept lanes are dropped when every worker still sharing it has taken it; a store
 * into a block dropped so goes to the worker's own copy. tests/sim/test_job_lanes.py holds this
 * to a model that keeps every worker's bytes apart.
 */

typedef struct {
    Py_ssize_t rows, row_size, words;  /* words: uint64 per worker's row bits */
    Py_ssize_t live;                   /* workers sharing it that have not taken it */
    PyObject *canon;                   /* bytes of rows * row_size; a row set once written */
    uint64_t *written;                 /* the rows written into canon */
    uint64_t *stored;                  /* per worker (words each): the rows it stored */
    uint64_t *out;                     /* per worker (a bit): no longer sharing the block */
} LanesBlock;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;                      /* workers */
    Py_ssize_t capacity;               /* of `blocks` and `done` (blocks numbered from 0) */
    LanesBlock **blocks;
    unsigned char *done;               /* blocks dropped: every sharing worker took them */
    uint64_t *ended;                   /* per worker (a bit) */
    Py_ssize_t ended_count;
    PyObject *private_;                /* (block * n + worker) -> bytearray: own copies */
    long long shared_rows, private_rows, blocks_made, shared_taken;
} JobLanes;

static PyTypeObject JobLanesType;

/* block numbers below this (a block is 64 Ki values: 2^40 values in all) */
#define MAX_LANES_BLOCKS ((long long)1 << 24)

static inline int bit_get(const uint64_t *bits, Py_ssize_t i) {
    return (int)((bits[i >> 6] >> (i & 63)) & 1);
}

static inline void bit_set(uint64_t *bits, Py_ssize_t i) {
    bits[i >> 6] |= (uint64_t)1 << (i & 63);
}

static void lanes_block_free(LanesBlock *b) {
    if (b == NULL) return;
    Py_XDECREF(b->canon);
    PyMem_Free(b->written);
    PyMem_Free(b->stored);
    PyMem_Free(b->out);
    PyMem_Free(b);
}

/* room for block numbers below `block + 1` */
static int lanes_grow(JobLanes *self, long long block) {
    if (block < self->capacity) return 0;
    Py_ssize_t capacity = self->capacity ? self->capacity : 64;
    while (capacity <= block) capacity *= 2;
    LanesBlock **blocks = PyMem_Realloc(self->blocks, capacity * sizeof(LanesBlock *));
    if (blocks == NULL) { PyErr_NoMemory(); return -1; }
    self->blocks = blocks;
    unsigned char *done = PyMem_Realloc(self->done, capacity);
    if (done == NULL) { PyErr_NoMemory(); return -1; }
    self->done = done;
    memset(self->blocks + self->capacity, 0, (capacity - self->capacity) * sizeof(LanesBlock *));
    memset(self->done + self->capacity, 0, capacity - self->capacity);
    self->capacity = capacity;
    return 0;
}

/* block `block`, made with `rows` rows of `row_size` bytes when new; NULL with an error when it
   holds rows of another shape */
static LanesBlock *lanes_block(JobLanes *self, long long block, Py_ssize_t rows,
                               Py_ssize_t row_size) {
    LanesBlock *b = self->blocks[block];
    if (b != NULL) {
        if (b->rows != rows || b->row_size != row_size) {
            PyErr_Format(PyExc_ValueError, "block %lld holds %zd rows of %zd bytes, not %zd of "
                         "%zd", block, b->rows, b->row_size, rows, row_size);
            return NULL;
        }
        return b;
    }
    b = PyMem_Calloc(1, sizeof(LanesBlock));
    if (b == NULL) { PyErr_NoMemory(); return NULL; }
    b->rows = rows;
    b->row_size = row_size;
    b->words = (rows + 63) / 64;
    b->canon = PyBytes_FromStringAndSize(NULL, rows * row_size);
    b->written = PyMem_Calloc(b->words, sizeof(uint64_t));
    b->stored = PyMem_Calloc((size_t)self->n * b->words, sizeof(uint64_t));
    b->out = PyMem_Calloc((self->n + 63) / 64, sizeof(uint64_t));
    if (b->canon == NULL || b->written == NULL || b->stored == NULL || b->out == NULL) {
        lanes_block_free(b);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    b->live = self->n;
    if (self->ended_count) {           /* (ended workers keep their own copies) */
        for (Py_ssize_t w = 0; w < self->n; w++)
            if (bit_get(self->ended, w)) { bit_set(b->out, w); b->live--; }
    }
    self->blocks[block] = b;
    self->blocks_made++;
    return b;
}

/* the block's kept lanes dropped: every worker sharing it took it */
static void lanes_block_drop(JobLanes *self, long long block) {
    lanes_block_free(self->blocks[block]);
    self->blocks[block] = NULL;
    self->done[block] = 1;
}

static PyObject *private_key(JobLanes *self, long long block, Py_ssize_t worker) {
    return PyLong_FromLongLong(block * (long long)self->n + worker);
}

/* worker's own copy of the block from the kept rows it stored (zeros elsewhere): a new
   bytearray */
static PyObject *lanes_own_copy(LanesBlock *b, Py_ssize_t worker) {
    PyObject *copy = PyByteArray_FromStringAndSize(NULL, b->rows * b->row_size);
    if (copy == NULL) return NULL;
    char *to = PyByteArray_AS_STRING(copy);
    const char *from = PyBytes_AS_STRING(b->canon);
    const uint64_t *mine = b->stored + worker * b->words;
    memset(to, 0, b->rows * b->row_size);
    for (Py_ssize_t r = 0; r < b->rows; r++)
        if (bit_get(mine, r))
            memcpy(to + r * b->row_size, from + r * b->row_size, b->row_size);
    return copy;
}

/* the worker stops sharing the block: its own copy (when it stored rows) under its key, and
   the block dropped when it was the last sharing it. `copy`: make the copy. */
static int lanes_leave(JobLanes *self, long long block, Py_ssize_t worker, int copy) {
    LanesBlock *b = self->blocks[block];
    if (copy) {
        PyObject *own = lanes_own_copy(b, worker), *key = private_key(self, block, worker);
        int failed = own == NULL || key == NULL || PyDict_SetItem(self->private_, key, own) < 0;
        Py_XDECREF(own);
        Py_XDECREF(key);
        if (failed) return -1;
    }
    bit_set(b->out, worker);
    if (--b->live == 0) lanes_block_drop(self, block);
    return 0;
}

/* a store into the worker's own copy of the block (made, zeroed, when it has none) */
static int lanes_store_own(JobLanes *self, long long block, Py_ssize_t worker, Py_ssize_t row,
                           Py_ssize_t rows, const char *data, Py_ssize_t size) {
    PyObject *key = private_key(self, block, worker);
    if (key == NULL) return -1;
    PyObject *own = PyDict_GetItemWithError(self->private_, key);
    if (own == NULL) {
        if (PyErr_Occurred()) { Py_DECREF(key); return -1; }
        own = PyByteArray_FromStringAndSize(NULL, rows * size);
        if (own == NULL) { Py_DECREF(key); return -1; }
        memset(PyByteArray_AS_STRING(own), 0, rows * size);
        int failed = PyDict_SetItem(self->private_, key, own);
        Py_DECREF(own);
        if (failed < 0) { Py_DECREF(key); return -1; }
    }
    Py_DECREF(key);
    if (!PyByteArray_CheckExact(own) || (row + 1) * size > PyByteArray_GET_SIZE(own)) {
        PyErr_Format(PyExc_ValueError, "worker %zd's block %lld does not hold row %zd of %zd "
                     "bytes", worker, block, row, size);
        return -1;
    }
    memcpy(PyByteArray_AS_STRING(own) + row * size, data, size);
    self->private_rows++;
    return 0;
}

static int lanes_check(JobLanes *self, long long worker, long long block) {
    if (worker < 0 || worker >= self->n) {
        PyErr_Format(PyExc_ValueError, "worker %lld of a job of %zd", worker, self->n);
        return -1;
    }
    if (block < 0 || block >= MAX_LANES_BLOCKS) {
        PyErr_Format(PyExc_ValueError, "block %lld out of range", block);
        return -1;
    }
    return lanes_grow(self, block);
}

/* `store(worker, block, row, rows, lanes)`: the worker's RESULT lanes of row `row` of block
   `block` (of `rows` rows, each of `size` bytes) */
static int job_lanes_store(JobLanes *self, long long worker, long long block, long long row,
                           long long rows, const char *data, Py_ssize_t size) {
    if (lanes_check(self, worker, block) < 0) return -1;
    if (rows <= 0 || row < 0 || row >= rows || size <= 0 || rows > PY_SSIZE_T_MAX / size) {
        PyErr_Format(PyExc_ValueError, "row %lld of a block of %lld rows of %zd bytes", row,
                     rows, size);
        return -1;
    }
    if (self->done[block] || bit_get(self->ended, worker))
        return lanes_store_own(self, block, worker, row, rows, data, size);
    LanesBlock *b = lanes_block(self, block, rows, size);
    if (b == NULL) return -1;
    if (bit_get(b->out, worker))
        return lanes_store_own(self, block, worker, row, rows, data, size);
    char *kept = PyBytes_AS_STRING(b->canon) + row * size;
    if (!bit_get(b->written, row)) {
        memcpy(kept, data, size);
        bit_set(b->written, row);
    } else if (memcmp(kept, data, size) != 0) {
        /* its own copy from here: the rows it stored, then this one */
        if (lanes_leave(self, block, worker, 1) < 0) return -1;
        return lanes_store_own(self, block, worker, row, rows, data, size);
    }
    bit_set(b->stored + worker * b->words, row);
    self->shared_rows++;
    return 0;
}

/* `take(worker, block)`: the lanes the worker stored in the block (a new reference): the kept
   bytes when it stored every row and each was the kept one, else its own copy */
static PyObject *job_lanes_take(JobLanes *self, long long worker, long long block) {
    if (lanes_check(self, worker, block) < 0) return NULL;
    LanesBlock *b = self->blocks[block];
    Py_ssize_t count = 0;
    if (b != NULL && !bit_get(b->out, worker)) {
        const uint64_t *mine = b->stored + worker * b->words;
        for (Py_ssize_t i = 0; i < b->words; i++) count += __builtin_popcountll(mine[i]);
    }
    if (count) {                       /* (a worker that stored no row has nothing to take) */
        PyObject *lanes;
        if (count == b->rows) {
            lanes = Py_NewRef(b->canon);   /* (every row written: it changes no more) */
            self->shared_taken++;
        } else {
            lanes = lanes_own_copy(b, worker);
            if (lanes == NULL) return NULL;
        }
        if (lanes_leave(self, block, worker, 0) < 0) { Py_DECREF(lanes); return NULL; }
        return lanes;
    }
    PyObject *key = private_key(self, block, worker);
    if (key == NULL) return NULL;
    PyObject *own = PyDict_GetItemWithError(self->private_, key);
    if (own == NULL) {
        Py_DECREF(key);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "worker %lld has no lanes of block %lld to take",
                         worker, block);
        return NULL;
    }
    Py_INCREF(own);
    int failed = PyDict_DelItem(self->private_, key);
    Py_DECREF(key);
    if (failed < 0) { Py_DECREF(own); return NULL; }
    return own;
}

/* `end(worker)`: the worker takes nothing more as a sharer; what it stored so far of the
   blocks it shares becomes its own copy, as do its later stores */
static int job_lanes_end(JobLanes *self, long long worker) {
    if (lanes_check(self, worker, 0) < 0) return -1;
    if (bit_get(self->ended, worker)) return 0;
    bit_set(self->ended, worker);
    self->ended_count++;
    for (Py_ssize_t block = 0; block < self->capacity; block++) {
        LanesBlock *b = self->blocks[block];
        if (b == NULL || bit_get(b->out, worker)) continue;
        const uint64_t *mine = b->stored + worker * b->words;
        int any = 0;
        for (Py_ssize_t i = 0; i < b->words; i++) any |= mine[i] != 0;
        if (lanes_leave(self, block, worker, any) < 0) return -1;
    }
    return 0;
}

/* ---- the Python type --------------------------------------------------------------------- */

static PyObject *JobLanes_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_ssize_t n;
    static char *names[] = {"n", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", names, &n)) return NULL;
    if (n <= 0 || n > (1 << 24)) {
        PyErr_Format(PyExc_ValueError, "a job of %zd workers", n);
        return NULL;
    }
    JobLanes *self = (JobLanes *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->n = n;
    self->ended = PyMem_Calloc((n + 63) / 64, sizeof(uint64_t));
    self->private_ = PyDict_New();
    if (self->ended == NULL || self->private_ == NULL) {
        Py_DECREF(self);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void JobLanes_dealloc(JobLanes *self) {
    for (Py_ssize_t i = 0; i < self->capacity; i++) lanes_block_free(self->blocks[i]);
    PyMem_Free(self->blocks);
    PyMem_Free(self->done);
    PyMem_Free(self->ended);
    Py_XDECREF(self->private_);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *JobLanes_store(JobLanes *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "store(worker, block, row, rows, lanes)");
        return NULL;
    }
    long long v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = PyLong_AsLongLong(args[i]);
        if (v[i] == -1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[4], &view, PyBUF_SIMPLE) < 0) return NULL;
    int failed = job_lanes_store(self, v[0], v[1], v[2], v[3], view.buf, view.len);
    PyBuffer_Release(&view);
    if (failed < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *JobLanes_take(JobLanes *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take(worker, block)");
        return NULL;
    }
    long long worker = PyLong_AsLongLong(args[0]), block;
    if (worker == -1 && PyErr_Occurred()) return NULL;
    block = PyLong_AsLongLong(args[1]);
    if (block == -1 && PyErr_Occurred()) return NULL;
    return job_lanes_take(self, worker, block);
}

static PyObject *JobLanes_end(JobLanes *self, PyObject *arg) {
    long long worker = PyLong_AsLongLong(arg);
    if (worker == -1 && PyErr_Occurred()) return NULL;
    if (job_lanes_end(self, worker) < 0) return NULL;
    Py_RETURN_NONE;
}

/* what it holds and did, for tests and reports */
static PyObject *JobLanes_counts(JobLanes *self, PyObject *unused) {
    Py_ssize_t held = 0;
    for (Py_ssize_t i = 0; i < self->capacity; i++) held += self->blocks[i] != NULL;
    return Py_BuildValue("{sLsLsLsLsnsn}", "shared_rows", self->shared_rows, "private_rows",
                         self->private_rows, "blocks_made", self->blocks_made, "shared_taken",
                         self->shared_taken, "blocks_held", held, "own_copies",
                         PyDict_GET_SIZE(self->private_));
}

static PyMethodDef JobLanes_methods[] = {
    {"store", (PyCFunction)(void (*)(void))JobLanes_store, METH_FASTCALL,
     "store(worker, block, row, rows, lanes): a worker's RESULT lanes of one row of a block"},
    {"take", (PyCFunction)(void (*)(void))JobLanes_take, METH_FASTCALL,
     "take(worker, block): the lanes the worker stored in the block (once)"},
    {"end", (PyCFunction)JobLanes_end, METH_O,
     "end(worker): the worker shares no more; what it stored stays its own"},
    {"counts", (PyCFunction)JobLanes_counts, METH_NOARGS,
     "counts(): rows shared and kept apart, blocks made and held, own copies"},
    {NULL}
};

static PyTypeObject JobLanesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.JobLanes",
    .tp_basicsize = sizeof(JobLanes),
    .tp_dealloc = (destructor)JobLanes_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JobLanes(n): the RESULT lanes of a streamed INA job's n workers, kept once",
    .tp_methods = JobLanes_methods,
    .tp_new = JobLanes_new,
};
