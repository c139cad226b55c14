/* A block's digest for the streamed check's "the same values as a worker already judged"
 * (block_digest.py), at memory speed, with a collision bound of its own.
 *
 * The definition is block_digest.py's `reference_digest`: the bytes as 32-bit little-endian
 * words (zero-padded to a whole, even number of words) w_0 .. w_2n-1 and, for each of three
 * random key strings K of 32-bit words, NH (UMAC's inner hash, Black, Halevi, Krawczyk,
 * Krovetz and Rogaway 1999):
 *
 *     NH_K(w) = sum over i < n of ((w_2i + K_2i) mod 2^32) * ((w_2i+1 + K_2i+1) mod 2^32)
 *               mod 2^64,
 *
 * then the byte count. For two different strings of one word count, NH with a uniformly
 * random key agrees with probability at most 2^-32 (it is 2^-32-almost-universal); the three
 * keys are independent, so two different blocks of one length share a digest with
 * probability at most 2^-96 (and blocks of different lengths never do: the count). The keys
 * are drawn per process after the values are fixed (they depend on the seed alone).
 *
 * One pass reads each pair of words once and adds its three products; it is the same sum in
 * any order (mod 2^64), so the compiler may split it across vector lanes. The polynomial sum
 * mod 2^61 - 1 this replaces took ~42 instructions a word, for a bound of ~2^-98.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define KEYS 3

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONED __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define CLONED
#endif

/* the three NH sums over `pairs` whole pairs of words at `w`; key j's words at keys[j] */
CLONED static void nh_pairs(const uint32_t *w, Py_ssize_t pairs, const uint32_t *keys[KEYS],
                            uint64_t sums[KEYS]) {
    const uint32_t *k0 = keys[0], *k1 = keys[1], *k2 = keys[2];
    uint64_t h0 = 0, h1 = 0, h2 = 0;
    for (Py_ssize_t i = 0; i < 2 * pairs; i += 2) {
        uint32_t a = w[i], b = w[i + 1];
        h0 += (uint64_t)(uint32_t)(a + k0[i]) * (uint32_t)(b + k0[i + 1]);
        h1 += (uint64_t)(uint32_t)(a + k1[i]) * (uint32_t)(b + k1[i + 1]);
        h2 += (uint64_t)(uint32_t)(a + k2[i]) * (uint32_t)(b + k2[i + 1]);
    }
    sums[0] += h0;
    sums[1] += h1;
    sums[2] += h2;
}

/* the digest of `length` bytes at `bytes` (little-endian machines: checked at load) */
static void nh_digest(const unsigned char *bytes, Py_ssize_t length, const uint32_t *keys[KEYS],
                      unsigned char out[8 * (KEYS + 1)]) {
    uint64_t sums[KEYS] = {0, 0, 0};
    Py_ssize_t pairs = length / 8;
    nh_pairs((const uint32_t *)bytes, pairs, keys, sums);
    if (length % 8) {                       /* the last pair, zero-padded */
        uint32_t last[2] = {0, 0};
        memcpy(last, bytes + 8 * pairs, (size_t)(length % 8));
        const uint32_t *tail[KEYS];
        for (int j = 0; j < KEYS; j++) tail[j] = keys[j] + 2 * pairs;
        nh_pairs(last, 1, tail, sums);
    }
    for (int j = 0; j <= KEYS; j++) {
        uint64_t value = j < KEYS ? sums[j] : (uint64_t)length;
        for (int b = 0; b < 8; b++) out[8 * j + b] = (unsigned char)(value >> (8 * b));
    }
}

/* digest(buffer, keys) -> bytes: `keys` holds three key strings of equal length, one after
   the other, each at least as many words as the buffer's padded to an even count */
static PyObject *digest(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "digest(buffer, keys: bytes)");
        return NULL;
    }
    Py_ssize_t key_bytes = PyBytes_GET_SIZE(args[1]);
    if (key_bytes % (8 * KEYS)) {
        PyErr_SetString(PyExc_ValueError,
                        "digest: the keys are three strings of whole pairs of 32-bit words");
        return NULL;
    }
    Py_ssize_t key_words = key_bytes / 4 / KEYS;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if ((view.len + 7) / 8 * 2 > key_words) {
        PyErr_Format(PyExc_ValueError, "digest: %zd bytes need keys of %zd words, not %zd",
                     view.len, (view.len + 7) / 8 * 2, key_words);
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint32_t *base = (const uint32_t *)PyBytes_AS_STRING(args[1]), *keys[KEYS];
    for (int j = 0; j < KEYS; j++) keys[j] = base + j * key_words;
    unsigned char out[8 * (KEYS + 1)];
    if (((uintptr_t)view.buf & 3) == 0) {
        nh_digest(view.buf, view.len, keys, out);
    } else {                                /* unaligned words: read through a copy */
        unsigned char *copy = PyMem_Malloc((size_t)view.len + 1);
        if (copy == NULL) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        memcpy(copy, view.buf, (size_t)view.len);
        nh_digest(copy, view.len, keys, out);
        PyMem_Free(copy);
    }
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)out, sizeof out);
}

static PyMethodDef functions[] = {
    {"digest", (PyCFunction)(void (*)(void))digest, METH_FASTCALL,
     "digest(buffer, keys): three NH sums of its 32-bit words with three keys, and its length"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "MODULE_NAME", "A block's keyed digest", -1, functions,
};

PyMODINIT_FUNC PyInit_MODULE_NAME(void) {
    return PyModule_Create(&module_def);
}
