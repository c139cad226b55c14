"""The C every generated module begins with (`PRELUDE`: the PHV's words and flags, table
lookups and their memo, lane vectors and their pool, register banks (nativebanks.py), the
parser's and deparser's field helpers, the controls' calling convention), and a module's whole
source:
the prelude, the program's controls (`nativemodule.py`) and its init (`module_source`).
nativebuild.py compiles and caches what this gives."""

from __future__ import annotations

from .nativebanks import BANKS_SOURCE
from .nativemodule import NativeControls

PRELUDE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
typedef uint64_t u64;

static PyObject *EMPTY;

/* A PHV's words copied whole (~1 KB for ina.p4) by the C library's memcpy, called: as a
   constant size, the compiler inlines it as `rep movsq`, whose start-up alone cost ~5 % of
   the simulator's loop in the fast path's copy of the initial words. */
static void *(*volatile copy_words)(void *, const void *, size_t) = memcpy;
static Py_ssize_t STATE_SIZE, FIELDS, FLAGS;   /* set by the module's init */

static inline PyObject *empty_params(void) { return EMPTY; }

/* Where a deparsed packet's bytes come from: a new bytes object of `n` bytes, or the function
   the process gave (`use_frame_source`, nativebuild.py: the simulator's spare bytes, bytes
   objects nothing else holds). The deparser writes every byte of it either way. */
static PyObject *(*frame_source_fn)(Py_ssize_t);

static inline PyObject *frame_source(Py_ssize_t n) {
    return frame_source_fn != NULL ? frame_source_fn(n) : PyBytes_FromStringAndSize(NULL, n);
}

/* use_frame_source(capsule or None): the capsule's function (named
   "p4switch.frame_source") makes the deparsed packets' bytes from now on; None: new ones */
static PyObject *use_frame_source(PyObject *self, PyObject *capsule) {
    if (capsule == Py_None) {
        frame_source_fn = NULL;
        Py_RETURN_NONE;
    }
    void *fn = PyCapsule_GetPointer(capsule, "p4switch.frame_source");
    if (fn == NULL) return NULL;
    frame_source_fn = (PyObject *(*)(Py_ssize_t))fn;
    Py_RETURN_NONE;
}

/* An exact int's value when it is small and not negative, without a call: the PHV's fields,
   flags, register cells and action data are such ints almost always. Anything else (a bool, a
   negative or wide int, another type) returns 0 and takes CPython's own conversion, which
   raises what it always raised. Always inlined: the module is built with -O1. */
#define HOT static inline __attribute__((always_inline))

HOT int small_value(PyObject *x, u64 *out) {
#if PY_VERSION_HEX < 0x030C0000 && PYLONG_BITS_IN_DIGIT == 30
    if (PyLong_CheckExact(x)) {
        Py_ssize_t n = Py_SIZE(x);
        const digit *d = ((PyLongObject *)x)->ob_digit;
        if (n == 0) { *out = 0; return 1; }
        if (n == 1) { *out = d[0]; return 1; }
        if (n == 2) { *out = (u64)d[0] | ((u64)d[1] << 30); return 1; }
    }
#elif PY_VERSION_HEX >= 0x030C0000
    if (PyLong_CheckExact(x) && _PyLong_IsCompact((PyLongObject *)x)) {
        Py_ssize_t value = _PyLong_CompactValue((PyLongObject *)x);
        if (value >= 0) { *out = (u64)value; return 1; }
    }
#endif
    return 0;
}

HOT int as_u64(PyObject *x, u64 *out) {
    if (small_value(x, out)) return 0;
    u64 r = PyLong_AsUnsignedLongLong(x);
    if (r == (u64)-1 && PyErr_Occurred()) return -1;
    *out = r;
    return 0;
}

static inline PyObject *from_u64(u64 value) {
    return value <= (u64)LONG_MAX ? PyLong_FromLong((long)value)
                                  : PyLong_FromUnsignedLongLong(value);
}

/* a field, validity flag or register cell (an int that fits 64 bits) */
HOT int rd(PyObject *list, Py_ssize_t i, u64 *out) {
    return as_u64(PyList_GET_ITEM(list, i), out);
}

/* The int last made for a write at each index (of any list), kept: packets repeat most of
   their values (addresses, ports, ids), and a write of the same value takes the same object
   again instead of a new one. Only a cache: an entry is used when its value is the one
   written. */
#define INT_MEMO_SIZE 1024
static PyObject *INT_MEMO[INT_MEMO_SIZE];

/* a slot that already holds an exact int of this value keeps it (ints are immutable: no code
   can tell the two apart), so writing back an unchanged field allocates nothing */
HOT int wr(PyObject *list, Py_ssize_t i, u64 value) {
    PyObject *old = PyList_GET_ITEM(list, i), **memo = &INT_MEMO[i & (INT_MEMO_SIZE - 1)];
    PyObject *x;
    u64 now;
    if (small_value(old, &now) && now == value) return 0;
    if (*memo != NULL && small_value(*memo, &now) && now == value) {
        x = *memo;
        Py_INCREF(x);
    } else {
        x = from_u64(value);
        if (x == NULL) return -1;
        if (value > 256) {                       /* smaller ones are CPython's own */
            Py_XDECREF(*memo);
            Py_INCREF(x);
            *memo = x;
        }
    }
    PyList_SET_ITEM(list, i, x);
    Py_DECREF(old);
    return 0;
}

/* setValid's zeroing of a slot that only the list holds (a lane vector's first slot, a
   signed, varbit or wide field): the int 0, as the Python primitive writes it (the name tells
   nativemodule.py that the code writes the lists) */
static inline int list_zero(PyObject *list, Py_ssize_t i) { return wr(list, i, 0); }

static inline int rdp(PyObject *params, Py_ssize_t i, u64 *out) {
    if (!PyTuple_Check(params) || i >= PyTuple_GET_SIZE(params)) {
        PyErr_SetString(PyExc_IndexError, "action data index out of range");
        return -1;
    }
    return as_u64(PyTuple_GET_ITEM(params, i), out);
}

/* action data `i`: from `PD`, the first `PN` of `params` as C numbers (a table's answer,
   decoded when it was first looked up: `table_answer`), else read from the tuple */
HOT int rdpn(PyObject *params, const u64 *PD, int PN, Py_ssize_t i, u64 *out) {
    if (i < PN) {
        *out = PD[i];
        return 0;
    }
    return rdp(params, i, out);
}

static inline u64 shl(u64 a, u64 s) { return s >= 64 ? 0 : a << s; }
static inline u64 shr(u64 a, u64 s) { return s >= 64 ? 0 : a >> s; }

/* (action, params, entry) -> a (-1 for None) and p (a new reference replacing the old) */
static int result(PyObject *res, long *a, PyObject **p) {
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 3) {
        PyErr_SetString(PyExc_TypeError, "a table result must be (action, params, entry)");
        return -1;
    }
    PyObject *action = PyTuple_GET_ITEM(res, 0), *params = PyTuple_GET_ITEM(res, 1);
    if (action == Py_None) {
        *a = -1;
    } else {
        u64 index;
        if (small_value(action, &index) && index <= (u64)LONG_MAX) {
            *a = (long)index;
        } else {
            *a = PyLong_AsLong(action);
            if (*a == -1 && PyErr_Occurred()) return -1;
        }
    }
    if (!PyTuple_Check(params)) {
        params = PySequence_Tuple(params);
        if (params == NULL) return -1;
    } else {
        Py_INCREF(params);
    }
    Py_SETREF(*p, params);
    return 0;
}

/* The int last made for a table key, by the key's low bits, kept as INT_MEMO keeps written
   values: a switch looks up few distinct keys (addresses, ids, ports), and an int of the same
   value from here costs no allocation and no free. Used when it holds the value asked for. */
#define KEY_MEMO_SIZE 1024
static PyObject *KEY_MEMO[KEY_MEMO_SIZE];

static inline PyObject *key_int(u64 key) {
    PyObject **memo = &KEY_MEMO[(key ^ (key >> 10) ^ (key >> 20)) & (KEY_MEMO_SIZE - 1)];
    u64 now;
    if (*memo != NULL && small_value(*memo, &now) && now == key) return Py_NewRef(*memo);
    PyObject *k = from_u64(key);
    if (k != NULL && key > 256)                  /* (smaller ones are CPython's own) */
        Py_XSETREF(*memo, Py_NewRef(k));
    return k;
}

/* a table's result for key `k` (a new reference, or NULL on a miss): the exact table's dict,
   or the table's own lookup method */
static int lookup_key(PyObject *table, const char *method, PyObject *k, PyObject **r) {
    PyObject *got;
    if (method == NULL) {
        got = PyDict_GetItemWithError(table, k);
        if (got == NULL && PyErr_Occurred()) return -1;
        Py_XINCREF(got);
    } else {
        got = PyObject_CallMethod(table, method, "O", k);
        if (got == NULL) return -1;
    }
    *r = got;
    return 0;
}

/* a table's result for `key` (a new reference, or NULL on a miss): the exact dict's item
   (`method` NULL) or the table's own lookup method (ternary, range, or an LPM table whose
   key only Python builds) */
static int lookup(PyObject *table, const char *method, u64 key, PyObject **r) {
    PyObject *k = key_int(key);
    if (k == NULL) return -1;
    int failed = lookup_key(table, method, k, r);
    Py_DECREF(k);
    return failed;
}

/* A table's answer as the generated code takes it: hit or miss (`got`), and on a hit the
   action's index `a`, its data `params` (the tuple, which Python code the action calls is
   given) and the first `n` of them as C numbers `d` (an int too wide or not an int is left to
   `rdp`, which converts or refuses it as it always did). The generated code copies what it
   needs at once: an answer handed out lives until the next lookup. (It is returned, not
   written through pointers to the caller's locals: a local whose address escapes may be
   written by any store through a pointer, and the lane loops beside it then stay scalar.) */
#define ANSWER_PARAMS 6
typedef struct { int got, n; long a; PyObject *params; u64 d[ANSWER_PARAMS]; } Answer;

static const Answer MISS = {0, 0, -1, NULL, {0}};
static Answer SCRATCH;          /* the latest answer not remembered (its params held) */

/* `into` takes the answer `r` (None or NULL: a miss), checked by `result` */
static int answer_decode(PyObject *r, Answer *into) {
    into->got = 0;
    into->n = 0;
    if (r == NULL || r == Py_None) {
        Py_CLEAR(into->params);
        return 0;
    }
    if (into->params == NULL) into->params = Py_NewRef(EMPTY);
    if (result(r, &into->a, &into->params)) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(into->params);
    int i = 0;
    while (i < n && i < ANSWER_PARAMS && small_value(PyTuple_GET_ITEM(into->params, i),
                                                     &into->d[i]))
        i++;
    into->n = i;
    into->got = 1;
    return 0;
}

/* An exact dict's answer (a table's entries, or an LPM level's) for an int key, NULL on an
   error. Answers are remembered decoded, by (dict, key) with the dict's version (PEP 509: a
   number no two states of any dict share, changed by every insertion, replacement, deletion
   and clear), so a key the switch saw since the dict last changed takes its action and data
   without making the key's int, probing the dict (~250 instructions) or reading the answer's
   tuple and the data's ints (each a cache line of its own, cold among a thousand switches'
   entries). Only an exact tuple answer with an exact tuple of data is remembered: nothing in
   those can change while the dict's version stays. A dict freed and another made at its
   address has another version. The memo holds the data tuples it hands out. CPython 3.14
   dropped the version: there every lookup probes the dict. */
#if PY_VERSION_HEX < 0x030E0000
#define ANSWER_MEMO_SIZE 16384
typedef struct { PyObject *dict; u64 key; uint64_t version; Answer answer; } AnswerMemo;
static AnswerMemo ANSWER_MEMO[ANSWER_MEMO_SIZE];
#endif

static const Answer *table_answer(PyObject *dict, u64 key) {
    PyObject *r;
#if PY_VERSION_HEX < 0x030E0000
    if (PyDict_CheckExact(dict)) {
        size_t h = (size_t)(((uint64_t)(size_t)dict >> 4) * 0x9E3779B97F4A7C15ull
                            ^ key * 0xC2B2AE3D27D4EB4Full);
        AnswerMemo *m = &ANSWER_MEMO[(h ^ (h >> 29)) & (ANSWER_MEMO_SIZE - 1)];
        uint64_t version = ((PyDictObject *)dict)->ma_version_tag;
        if (m->dict == dict && m->key == key && m->version == version) return &m->answer;
        if (lookup(dict, NULL, key, &r)) return NULL;
        int failed = answer_decode(r, &SCRATCH);
        int keep = !failed && ((PyDictObject *)dict)->ma_version_tag == version &&
            (r == NULL || r == Py_None ||
             (PyTuple_CheckExact(r) && PyTuple_CheckExact(PyTuple_GET_ITEM(r, 1))));
        Py_XDECREF(r);
        if (failed) return NULL;
        if (!keep) return &SCRATCH;
        PyObject *old = m->answer.params;
        m->dict = dict;
        m->key = key;
        m->version = version;
        m->answer = SCRATCH;
        Py_XINCREF(m->answer.params);
        Py_XDECREF(old);
        return &m->answer;
    }
#endif
    if (lookup(dict, NULL, key, &r)) return NULL;
    int failed = answer_decode(r, &SCRATCH);
    Py_XDECREF(r);
    return failed ? NULL : &SCRATCH;
}

/* an LPM table's answer for `key` (NULL on an error): Table.lookup_lpm in C, over the table's
   own levels, a list of (prefix length, mask, {masked key: result}) longest first, each
   level's answer by `table_answer`. No Python code runs here (int keys), so no other thread
   changes the list meanwhile. */
static const Answer *levels_answer(PyObject *levels, u64 key) {
    Py_ssize_t i;
    for (i = 0; i < PyList_GET_SIZE(levels); i++) {
        PyObject *level = PyList_GET_ITEM(levels, i);
        u64 mask;
        if (!PyTuple_CheckExact(level) || PyTuple_GET_SIZE(level) != 3 ||
                !PyDict_CheckExact(PyTuple_GET_ITEM(level, 2))) {
            PyErr_SetString(PyExc_TypeError, "an LPM level must be (length, mask, dict)");
            return NULL;
        }
        if (as_u64(PyTuple_GET_ITEM(level, 1), &mask)) return NULL;
        const Answer *got = table_answer(PyTuple_GET_ITEM(level, 2), key & mask);
        if (got == NULL || got->got) return got;
    }
    return &MISS;
}

/* A packet's PHV as the C code holds it (phv/layout.py `word_slots`): its words (unsigned
   fields of at most 64 bits, the hidden request slots) as C integers `F[slot]` and its validity
   flags as `V[index]`, beside the Python lists `f` and `v`, which hold everything else (lane
   vectors, wide, signed and varbit fields) and are the PHV Python code sees. `fs`/`vs` are the
   words and flags the lists take before Python code runs (`phv_out`) and that are read back
   after it (`phv_in`): every word for the common flow (nativefast.py), the function's own
   for a control called from Python. */
typedef struct {
    PyObject *f, *v;
    u64 *F, *V;
    const int32_t *fs, *vs;
    Py_ssize_t nfs, nvs;
} Phv;

/* the lists take the C words and flags (before Python code reads the PHV) */
static int phv_out(Phv *P) {
    Py_ssize_t i;
    for (i = 0; i < P->nfs; i++)
        if (wr(P->f, P->fs[i], P->F[P->fs[i]])) return -1;
    for (i = 0; i < P->nvs; i++)
        if (wr(P->v, P->vs[i], P->V[P->vs[i]])) return -1;
    return 0;
}

/* the C words and flags take the lists' values (after Python code may have written them) */
static int phv_in(Phv *P) {
    Py_ssize_t i;
    for (i = 0; i < P->nfs; i++)
        if (rd(P->f, P->fs[i], &P->F[P->fs[i]])) return -1;
    for (i = 0; i < P->nvs; i++)
        if (rd(P->v, P->vs[i], &P->V[P->vs[i]])) return -1;
    return 0;
}

/* the key computed by a Python callback (wider than 64 bits, signed fields, ...): it reads
   the PHV and writes nothing */
static int lookup_by(PyObject *table, const char *method, PyObject *cb, Phv *P, PyObject **r) {
    if (phv_out(P)) return -1;
    PyObject *args[2] = {P->f, P->v};
    PyObject *k = PyObject_Vectorcall(cb, args, 2, NULL);
    if (k == NULL) return -1;
    int failed = lookup_key(table, method, k, r);
    Py_DECREF(k);
    return failed;
}

/* a statement as Python (a callback): the lists take the words first, the words take the
   lists' values after */
static inline int call3(PyObject *cb, Phv *P, PyObject *p) {
    if (phv_out(P)) return -1;
    PyObject *args[3] = {P->f, P->v, p};
    PyObject *got = PyObject_Vectorcall(cb, args, 3, NULL);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return phv_in(P);
}

static int call_truth(PyObject *cb, Phv *P, int *out) {
    if (phv_out(P)) return -1;
    PyObject *args[2] = {P->f, P->v};
    PyObject *got = PyObject_Vectorcall(cb, args, 2, NULL);
    if (got == NULL) return -1;
    int t = PyObject_IsTrue(got);
    Py_DECREF(got);
    if (t < 0) return -1;
    *out = t;
    return phv_in(P);
}

/* Lane vectors: the PHV slot holds a 1-D array (or the int 0: all lanes zero). */
static int64_t ZEROS[4096];

static int run_view(PyObject *f, Py_ssize_t slot, npy_intp count, int typenum, void **data) {
    PyObject *held = PyList_GET_ITEM(f, slot);
    if (PyLong_CheckExact(held)) {
        if (PyLong_AsLong(held) != 0 || count * 8 > (npy_intp)sizeof(ZEROS)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a lane vector slot holds an int other than 0");
            return -1;
        }
        *data = ZEROS;
        return 0;
    }
    if (!PyArray_Check(held)) {
        PyErr_SetString(PyExc_TypeError, "a lane vector slot holds neither an array nor 0");
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)held;
    if (PyArray_TYPE(a) != typenum || PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) < count ||
            !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISNOTSWAPPED(a) || !PyArray_ISALIGNED(a)) {
        PyErr_SetString(PyExc_TypeError, "a lane vector of another type, length or layout");
        return -1;
    }
    *data = PyArray_DATA(a);
    return 0;
}

/* Lane arrays recycled: a packet's lane vectors are new arrays (the parser's, and each
   written copy), and the last packet's die as the PHV is reset (~1,200 instructions for
   NumPy to make and free one, ~1.5 a packet). An array whose last reference the PHV lets go,
   which nothing else can reach (no view, buffer or weak reference: they would hold or see
   it), an exact 1-D array of its own aligned, writable, native-order data with the type's
   own descriptor, is kept in a small pool and given out again as a new array of that type
   and length, its contents to be written whole. */
#define LANE_POOL_SIZE 8
static PyObject *lane_pool[LANE_POOL_SIZE];
static int lane_pool_count;

/* a new reference to an array of `count` items of `typenum`, new or recycled: its contents
   undefined (the caller writes all of them) */
static PyObject *lane_array(npy_intp count, int typenum) {
    if (lane_pool_count) {
        PyArrayObject *a = (PyArrayObject *)lane_pool[lane_pool_count - 1];
        if (PyArray_TYPE(a) == typenum && PyArray_DIM(a, 0) == count) {
            lane_pool_count--;
            return (PyObject *)a;
        }
    }
    return PyArray_SimpleNew(1, &count, typenum);
}

/* whether the array nothing else holds may be given out again (above) */
static int lane_recyclable(PyObject *o) {
    if (!PyArray_CheckExact(o)) return 0;
    PyArrayObject *a = (PyArrayObject *)o;
    int need = NPY_ARRAY_OWNDATA | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE
               | NPY_ARRAY_ALIGNED;
    if (PyArray_NDIM(a) != 1 || (PyArray_FLAGS(a) & need) != need || PyArray_BASE(a) != NULL
            || ((PyArrayObject_fields *)a)->weakreflist != NULL || !PyArray_ISNOTSWAPPED(a))
        return 0;
    PyArray_Descr *own = PyArray_DescrFromType(PyArray_TYPE(a));
    if (own == NULL) { PyErr_Clear(); return 0; }
    int same = own == PyArray_DESCR(a);
    Py_DECREF(own);
    return same;
}

/* a reference to a slot's old value let go: a lane array it was the last of is pooled (not
   in a free-threaded build, whose reference counts are not one number) */
static inline void lane_release(PyObject *old) {
#ifndef Py_GIL_DISABLED
    if (Py_REFCNT(old) == 1 && lane_pool_count < LANE_POOL_SIZE && lane_recyclable(old)) {
        lane_pool[lane_pool_count++] = old;         /* (the reference moves to the pool) */
        return;
    }
#endif
    Py_DECREF(old);
}

/* a new array holding the slot's lanes, to be written and then stored (run_store) */
static int run_copy(PyObject *f, Py_ssize_t slot, npy_intp count, int typenum,
                    Py_ssize_t itemsize, PyObject **fresh, void **data) {
    void *old;
    if (run_view(f, slot, count, typenum, &old)) return -1;
    PyObject *array = lane_array(count, typenum);
    if (array == NULL) return -1;
    memcpy(PyArray_DATA((PyArrayObject *)array), old, count * itemsize);
    *fresh = array;
    *data = PyArray_DATA((PyArrayObject *)array);
    return 0;
}

/* the slot takes the written array (the reference is stolen) */
static inline void run_store(PyObject *f, Py_ssize_t slot, PyObject *array) {
    PyObject *old = PyList_GET_ITEM(f, slot);
    PyList_SET_ITEM(f, slot, array);
    lane_release(old);
}

""" + BANKS_SOURCE + r"""
/* The parser's helpers. */
/* A field of whole bytes at a byte boundary (addresses, ports, ids: most fields), read
   big-endian; `nbytes` is a constant at every call, so each call folds to its case. */
static inline __attribute__((always_inline)) u64 be_field(const uint8_t *p, unsigned nbytes) {
    uint32_t w32;
    u64 w64, x = 0;
    switch (nbytes) {
    case 1: return p[0];
    case 2: return ((u64)p[0] << 8) | p[1];
    case 4: memcpy(&w32, p, 4); return __builtin_bswap32(w32);
    case 6: memcpy(&w32, p + 2, 4); return ((u64)p[0] << 40) | ((u64)p[1] << 32)
                                           | __builtin_bswap32(w32);
    case 8: memcpy(&w64, p, 8); return __builtin_bswap64(w64);
    }
    for (unsigned i = 0; i < nbytes; i++) x = (x << 8) | p[i];
    return x;
}

static inline u64 field_bits(const uint8_t *p, unsigned bit, unsigned width) {
    const uint8_t *q = p + bit / 8;
    unsigned skip = bit % 8, nbytes = (skip + width + 7) / 8, i;
    unsigned __int128 x = 0;
    for (i = 0; i < nbytes; i++) x = (x << 8) | q[i];
    x >>= nbytes * 8 - skip - width;
    return (u64)(x & (((unsigned __int128)1 << width) - 1));
}

/* A control holding lane groups rolled into loops (nativereroll.py) is built at -O3, which
   unswitches their loop-invariant index tests and vectorizes them (ina.p4's: ~2-4 % of a
   simulated run), twice: for AVX2, eight 32-bit lanes an instruction, where the CPU has it
   (chosen once, at load), and for the baseline's four; the rest of the module stays at -O1
   for its build time. */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define LANE_LOOPS __attribute__((target_clones("avx2", "default"), optimize("O3")))
#elif defined(__GNUC__) && !defined(__clang__)
#define LANE_LOOPS __attribute__((optimize("O3")))
#else
#define LANE_LOOPS
#endif

/* Lanes of 32-bit words between the wire (big-endian) and a vector: every lane of every INA
   packet crosses here twice a switch. The module is built at -O1, which leaves these loops a
   word at a time (~200 ns for 364 lanes); vectorized, in a clone for AVX2 chosen at load time,
   ~16 ns. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define LANES_CLONED __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define LANES_CLONED
#endif
LANES_CLONED static void lanes_from_wire32(uint32_t *restrict d32, const uint8_t *restrict p,
                                           npy_intp count) {
    for (npy_intp i = 0; i < count; i++) {
        uint32_t w;
        memcpy(&w, p + 4 * i, 4);
        d32[i] = __builtin_bswap32(w);
    }
}

LANES_CLONED static void lanes_to_wire32(uint8_t *restrict o, const uint32_t *restrict d32,
                                         npy_intp count) {
    for (npy_intp i = 0; i < count; i++) {
        uint32_t w = __builtin_bswap32(d32[i]);
        memcpy(o + 4 * i, &w, 4);
    }
}

/* a lane vector from big-endian words of `wbytes` bytes, as an array of `typenum` */
static int run_from_wire(PyObject *f, Py_ssize_t slot, const uint8_t *p, npy_intp count,
                         int typenum, int wbytes) {
    PyObject *array = lane_array(count, typenum);
    if (array == NULL) return -1;
    void *data = PyArray_DATA((PyArrayObject *)array);
    npy_intp i;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (typenum == NPY_UINT32 && wbytes == 4) {   /* the common lanes: one swap a word */
        lanes_from_wire32((uint32_t *)data, p, count);
        run_store(f, slot, array);
        return 0;
    }
#endif
    for (i = 0; i < count; i++) {
        u64 x = 0;
        int j;
        for (j = 0; j < wbytes; j++) x = (x << 8) | p[i * wbytes + j];
        switch (typenum) {
            case NPY_UINT8: ((uint8_t *)data)[i] = (uint8_t)x; break;
            case NPY_UINT16: ((uint16_t *)data)[i] = (uint16_t)x; break;
            case NPY_UINT32: ((uint32_t *)data)[i] = (uint32_t)x; break;
            default: ((int64_t *)data)[i] = (int64_t)x; break;
        }
    }
    run_store(f, slot, array);
    return 0;
}

/* a hash's input: bits pushed MSB-first into zeroed bytes (the last byte zero-padded) */
static inline void hb_push(unsigned char *buf, unsigned *n, u64 value, unsigned width) {
    while (width > 0) {
        unsigned used = *n & 7, take = 8 - used;
        if (take > width) take = width;
        unsigned bits = (unsigned)((value >> (width - take)) & ((1u << take) - 1));
        buf[*n >> 3] |= (unsigned char)(bits << (8 - used - take));
        *n += take;
        width -= take;
    }
}

/* csum16 as a sum of terms, one a field (nativeparse.py `checksum_c`): the sum of the inputs'
   16-bit words modulo 0xFFFF, since 2^16 = 1 there. A field's term is its low `width` bits,
   folded to a sum of 16-bit pieces when wider than a word, shifted to where its last bit sits
   in its word (`end`: the bits up to and through the field, of which only end mod 16 counts).
   A term is zero only for a zero field, so the sum is zero exactly when every word is. With
   `width` and `end` constants the term is a mask, a few adds and a shift: no loop per bit. */
static inline __attribute__((always_inline)) u64 cs_term(u64 value, unsigned width,
                                                         unsigned end) {
    if (width < 64) value &= ((u64)1 << width) - 1;
    if (width > 16)
        value = (value & 0xFFFF) + ((value >> 16) & 0xFFFF) + ((value >> 32) & 0xFFFF)
                + (value >> 48);
    return value << ((16 - (end & 15)) & 15);
}

/* the Internet checksum of the words whose sum modulo 0xFFFF is `sum`: 0xFFFF for all-zero
   input (a sum of exactly 0), else the complement of the one's-complement sum */
static inline u64 cs_result(u64 sum) {
    if (sum == 0) return 65535;
    u64 r = sum % 65535;
    return ~(r ? r : 65535) & 65535;
}

/* the deparser's helpers */
/* be_field's writer: the value's low `nbytes` bytes, big-endian, over whatever was there */
static inline __attribute__((always_inline)) void put_be(uint8_t *p, unsigned nbytes,
                                                         u64 value) {
    uint32_t w32;
    u64 w64;
    switch (nbytes) {
    case 1: p[0] = (uint8_t)value; return;
    case 2: p[0] = (uint8_t)(value >> 8); p[1] = (uint8_t)value; return;
    case 4: w32 = __builtin_bswap32((uint32_t)value); memcpy(p, &w32, 4); return;
    case 6: p[0] = (uint8_t)(value >> 40); p[1] = (uint8_t)(value >> 32);
            w32 = __builtin_bswap32((uint32_t)value); memcpy(p + 2, &w32, 4); return;
    case 8: w64 = __builtin_bswap64(value); memcpy(p, &w64, 8); return;
    }
    for (unsigned i = nbytes; i-- > 0; value >>= 8) p[i] = (uint8_t)value;
}

static inline void put_bits(uint8_t *p, unsigned bit, unsigned width, u64 value) {
    if (width < 64) value &= (((u64)1 << width) - 1);
    unsigned end = bit + width;
    while (width > 0) {
        unsigned last = end - 1, shift = 7 - last % 8, take = 8 - shift;
        if (take > width) take = width;
        p[last / 8] |= (uint8_t)((value & ((1u << take) - 1)) << shift);
        value >>= take;
        width -= take;
        end -= take;
    }
}

static int run_to_wire(PyObject *f, Py_ssize_t slot, uint8_t *o, npy_intp count, int typenum,
                       int wbytes) {
    void *data;
    if (run_view(f, slot, count, typenum, &data)) return -1;
    npy_intp i;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (typenum == NPY_UINT32 && wbytes == 4) {   /* the common lanes: one swap a word */
        lanes_to_wire32(o, (const uint32_t *)data, count);
        return 0;
    }
#endif
    for (i = 0; i < count; i++) {
        u64 x;
        switch (typenum) {
            case NPY_UINT8: x = ((uint8_t *)data)[i]; break;
            case NPY_UINT16: x = ((uint16_t *)data)[i]; break;
            case NPY_UINT32: x = ((uint32_t *)data)[i]; break;
            default: x = (u64)((int64_t *)data)[i]; break;
        }
        int j;
        for (j = wbytes - 1; j >= 0; j--) { o[i * wbytes + j] = (uint8_t)x; x >>= 8; }
    }
    return 0;
}

static int call_verify(PyObject *cb, Phv *P, PyObject *d, Py_ssize_t pos) {
    if (phv_out(P)) return -1;
    PyObject *at = PyLong_FromSsize_t(pos);
    if (at == NULL) return -1;
    PyObject *args[4] = {P->f, P->v, d, at};
    PyObject *got = PyObject_Vectorcall(cb, args, 4, NULL);
    Py_DECREF(at);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return phv_in(P);
}

/* whether `S` is a state tuple as bound (nativebuild.py): the state objects, then their Banks */
static inline int state_ok(PyObject *S) {
    return PyTuple_CheckExact(S) && PyTuple_GET_SIZE(S) == STATE_SIZE + 1
        && Py_TYPE(PyTuple_GET_ITEM(S, STATE_SIZE)) == &BanksType;
}

static int enter(PyObject *const *args, Py_ssize_t nargs, PyObject **S, PyObject **f,
                 PyObject **v) {
    if (nargs != 3 || !state_ok(args[0]) || !PyList_CheckExact(args[1]) ||
            PyList_GET_SIZE(args[1]) < FIELDS || !PyList_CheckExact(args[2]) ||
            PyList_GET_SIZE(args[2]) < FLAGS) {
        PyErr_SetString(PyExc_TypeError, "native control: expected (state, fields, flags)");
        return -1;
    }
    *S = args[0]; *f = args[1]; *v = args[2];
    return 0;
}
"""


def module_source(controls: NativeControls, name: str) -> str:
    return PRELUDE + "\n" + controls.c_source + f"""
static struct PyModuleDef MODULE = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, METHODS}};

PyMODINIT_FUNC PyInit_{name}(void) {{
    STATE_SIZE = {len(controls.state_names)};
    FIELDS = {controls.fields};
    FLAGS = {controls.flags};
    import_array();
    if (PyType_Ready(&BanksType) < 0) return NULL;
    EMPTY = PyTuple_New(0);
    if (EMPTY == NULL) return NULL;
    return PyModule_Create(&MODULE);
}}
"""
