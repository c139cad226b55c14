/* A block of gradient values quantized into its CONTRIB lanes in one pass (fast_quantize.py).
 *
 * The definition is hosts/quantize.py's `quantize_scaled`: each float32 value times the scale
 * in float64, rounded to the nearest integer (ties to even, as `np.rint`), clamped to
 * +-limit, in the lanes' integer type. NumPy does that in five passes over the block and a
 * sixth that swaps the bytes into the table's big-endian lanes. This file does it in one,
 * writing each lane in its byte order where it sits in the table's rows.
 *
 * It declines what the definition does otherwise than a clamp: a NaN (NumPy's cast of it is
 * undefined), and a value that rounds to more than limit + 1 (the definition raises). Then the
 * caller runs the definition itself. fast_quantize.py checks this file against it before use.
 *
 * Also here, for the same table: its rows' CONTRIB headers (`contribution_headers`), which
 * hosts/ina_wire.py's `contribution_table` otherwise writes with a dozen NumPy operations
 * (~35 us a block of 1,024 rows, on the simulation's thread). The layout is not this file's:
 * the caller gives a header with the position's fields zero and where those fields sit
 * (ina_wire.py `header_plan`, from ina_header.py's LAYOUT), and fast_quantize.py checks the
 * rows against NumPy's before use.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define DONE 0
#define EXCEEDS 1         /* some |round(x * scale)| > limit + 1: the definition raises */
#define NOT_A_NUMBER 2    /* a NaN: the definition's cast of it is left to NumPy */

static int host_big_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 0;
}

/* The lanes' buffer format ("<i", ">h", "b", ...): its item size and whether its bytes are in
   the other order than this machine's; -1 for anything but a signed 1, 2 or 4 byte integer */
static int lane_format(const char *format, Py_ssize_t itemsize, int *swap) {
    int big = host_big_endian();
    if (format == NULL) return -1;
    switch (*format) {
    case '<': *swap = big; format++; break;
    case '>': case '!': *swap = !big; format++; break;
    case '@': case '=': *swap = 0; format++; break;
    default: *swap = 0;
    }
    if (format[0] == '\0' || format[1] != '\0') return -1;
    if ((format[0] == 'b' && itemsize == 1) || (format[0] == 'h' && itemsize == 2)
            || ((format[0] == 'i' || format[0] == 'l') && itemsize == 4))
        return 0;
    return -1;
}

/* Round to the nearest integer in the current rounding mode, ties to even unless a program
   changed it (`np.rint` rounds so too): `rint`, which compilers expand in place, as one
   `roundpd` a vector where the clone has SSE4.1 (AVX2) and as the 2^52 addition elsewhere.
   A NaN stays a NaN and an |x| past the lanes stays past them, flagged by the caller. */
static inline double round_even(double x) {
    return rint(x);
}

/* One row's lanes: `count` values quantized and clamped to +-top, the rest of the row 0;
   `*bad` set when a value is a NaN or rounds past `beyond`. One function per lane type and
   byte order, and no branch in the loop, so that the compiler vectorizes it: with AVX2 where
   the machine has it (a clone chosen at load time), since SSE2 alone has no byte shuffle for
   the swap. Every operation is exact or the one rounding, so each clone writes the same lanes
   (and fast_quantize.py checks the one this machine runs). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CLONED __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define CLONED
#endif
#define ROW_WRITER(NAME, CTYPE, UTYPE, SWAP)                                                    \
CLONED static void NAME(char *row, Py_ssize_t stride, const float *values, Py_ssize_t count,         \
                 Py_ssize_t per_row, double scale, double top, double beyond, int *bad) {      \
    int over = 0;                                                                              \
    if (stride == (Py_ssize_t)sizeof(UTYPE)) {                                                 \
        /* lanes side by side, at any alignment (a CONTRIB's lanes follow 58 bytes of        \
           headers): stores through memcpy, which the vectorizer makes whole-vector ones */    \
        for (Py_ssize_t j = 0; j < count; j++) {                                               \
            double q = round_even((double)values[j] * scale);                                  \
            over |= !(fabs(q) <= beyond);                                                      \
            q = q > top ? top : q;                                                             \
            q = q < -top ? -top : q;                                                           \
            UTYPE bits = SWAP((UTYPE)(CTYPE)q);                                                \
            memcpy(row + j * (Py_ssize_t)sizeof(UTYPE), &bits, sizeof bits);                   \
        }                                                                                      \
        if (per_row > count)                                                                   \
            memset(row + count * (Py_ssize_t)sizeof(UTYPE), 0,                                 \
                   (size_t)(per_row - count) * sizeof(UTYPE));                                 \
    } else {                                                                                   \
        for (Py_ssize_t j = 0; j < per_row; j++) {                                             \
            double q = j < count ? round_even((double)values[j] * scale) : 0.0;                \
            over |= !(fabs(q) <= beyond);                                                      \
            q = q > top ? top : (q < -top ? -top : q);                                         \
            UTYPE bits = SWAP((UTYPE)(CTYPE)q);                                                \
            memcpy(row + j * stride, &bits, sizeof bits);                                      \
        }                                                                                      \
    }                                                                                          \
    *bad |= over;                                                                              \
}
#define KEEP(x) (x)
ROW_WRITER(row32, int32_t, uint32_t, KEEP)
ROW_WRITER(row32_swapped, int32_t, uint32_t, __builtin_bswap32)
ROW_WRITER(row16, int16_t, uint16_t, KEEP)
ROW_WRITER(row16_swapped, int16_t, uint16_t, __builtin_bswap16)
ROW_WRITER(row8, int8_t, uint8_t, KEEP)

typedef void (*RowWriter)(char *, Py_ssize_t, const float *, Py_ssize_t, Py_ssize_t, double,
                          double, double, int *);

/* the status of values that `*bad` flagged: a NaN, or one past the limit by more than one */
static int flagged(const float *values, Py_ssize_t count, double scale) {
    for (Py_ssize_t i = 0; i < count; i++) {
        double q = (double)values[i] * scale;
        if (q != q) return NOT_A_NUMBER;
    }
    return EXCEEDS;
}

/* quantize(values, scale, limit, lanes) -> 0 done, 1 exceeds, 2 a NaN.
   `values`: float32, C-contiguous, at most as many as `lanes` holds; `lanes`: a writable 2-D
   integer array (rows, values per row), any strides (a field of the CONTRIB table). Lane i
   (row-major) gets values[i] quantized; lanes past the values get 0 (the zero padding of the
   last chunk). After 1 or 2 the lanes hold what this pass wrote, clamped. */
static PyObject *quantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "quantize(values, scale, limit, lanes)");
        return NULL;
    }
    double scale = PyFloat_AsDouble(args[1]);
    long long limit = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (limit < 0 || limit > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "quantize: limit must be in 0..2^31-1");
        return NULL;
    }
    Py_buffer in, out;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (in.itemsize != 4 || in.format == NULL || strcmp(in.format, "f") != 0) {
        PyBuffer_Release(&in);
        PyErr_SetString(PyExc_ValueError, "quantize: values must be float32");
        return NULL;
    }
    if (PyObject_GetBuffer(args[3], &out, PyBUF_RECORDS) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    int swap = 0;
    Py_ssize_t count = in.len / 4;
    if (out.ndim != 2 || lane_format(out.format, out.itemsize, &swap) < 0
            || count > out.shape[0] * out.shape[1]
            || (out.itemsize < 4 && limit >= ((long long)1 << (8 * out.itemsize - 1)))) {
        PyBuffer_Release(&in);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "quantize: lanes must be a 2-D array of int8, int16 "
                        "or int32 that holds the values and the limit");
        return NULL;
    }
    const float *values = in.buf;
    Py_ssize_t rows = out.shape[0], per_row = out.shape[1];
    RowWriter write = out.itemsize == 4 ? (swap ? row32_swapped : row32)
                    : out.itemsize == 2 ? (swap ? row16_swapped : row16) : row8;
    const double top = (double)limit, beyond = (double)limit + 1.0;
    int bad = 0, status = DONE;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        Py_ssize_t first = r * per_row;
        Py_ssize_t here = count > first ? (count - first < per_row ? count - first : per_row) : 0;
        write((char *)out.buf + r * out.strides[0], out.strides[1], values + first, here,
              per_row, scale, top, beyond, &bad);
    }
    if (bad) status = flagged(values, count, scale);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    return PyLong_FromLong(status);
}

/* a big-endian unsigned of `size` bytes (1, 2, 4 or 8) at `at` */
static inline void put_big(unsigned char *at, int size, uint64_t value) {
    for (int i = size - 1; i >= 0; i--) {
        at[i] = (unsigned char)value;
        value >>= 8;
    }
}

/* contribution_headers(rows, template, flags_at, version_bit, slot_at, slot_size, chunk_at,
   chunk_size, first_position, pool_size, first_chunk): row r of `rows` (a writable, C-contiguous
   2-D uint8 array: one row a chunk's payload) begins with `template`, its flags byte with
   `version_bit` set where (first_position + r) div pool_size is odd, its slot (first_position + r)
   mod pool_size and its chunk first_chunk + r, each big-endian. The rest of the row is not
   touched. ValueError where a field does not fit its place. */
static PyObject *contribution_headers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "contribution_headers(rows, template, flags_at, "
                        "version_bit, slot_at, slot_size, chunk_at, chunk_size, first_position, "
                        "pool_size, first_chunk)");
        return NULL;
    }
    long long n[9];
    for (int i = 0; i < 9; i++) {
        n[i] = PyLong_AsLongLong(args[i + 2]);
        if (n[i] == -1 && PyErr_Occurred()) return NULL;
    }
    long long flags_at = n[0], version_bit = n[1], slot_at = n[2], slot_size = n[3],
              chunk_at = n[4], chunk_size = n[5], position = n[6], pool = n[7], chunk = n[8];
    if (!PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "contribution_headers: the template must be bytes");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    const unsigned char *template = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_buffer out;
    if (PyObject_GetBuffer(args[0], &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return NULL;
    Py_ssize_t rows = out.ndim == 2 ? out.shape[0] : 0;
    Py_ssize_t row_bytes = out.ndim == 2 ? out.shape[1] : 0;
    int sizes_ok = (slot_size == 1 || slot_size == 2 || slot_size == 4 || slot_size == 8)
        && (chunk_size == 1 || chunk_size == 2 || chunk_size == 4 || chunk_size == 8);
    if (out.ndim != 2 || out.itemsize != 1 || out.format == NULL || strcmp(out.format, "B") != 0
            || size > row_bytes || !sizes_ok || flags_at < 0 || flags_at >= size
            || version_bit < 0 || version_bit > 0xFF || slot_at < 0 || slot_at + slot_size > size
            || chunk_at < 0 || chunk_at + chunk_size > size || position < 0 || pool < 1
            || chunk < 0 || chunk > LLONG_MAX - rows
            || (slot_size < 8 && ((pool - 1) >> (8 * slot_size)) != 0)
            || (chunk_size < 8 && (chunk + (rows ? rows - 1 : 0)) >> (8 * chunk_size) != 0)) {
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "contribution_headers: a field does not fit its place "
                        "(rows: 2-D uint8, each as long as the header or longer)");
        return NULL;
    }
    long long slot = position % pool, odd = (position / pool) & 1;
    unsigned char *row = out.buf;
    for (Py_ssize_t r = 0; r < rows; r++, row += row_bytes) {
        memcpy(row, template, (size_t)size);
        if (odd) row[flags_at] |= (unsigned char)version_bit;
        put_big(row + slot_at, (int)slot_size, (uint64_t)slot);
        put_big(row + chunk_at, (int)chunk_size, (uint64_t)(chunk + r));
        if (++slot == pool) {
            slot = 0;
            odd ^= 1;
        }
    }
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
    {"contribution_headers", (PyCFunction)(void (*)(void))contribution_headers, METH_FASTCALL,
     "contribution_headers(rows, template, flags_at, version_bit, slot_at, slot_size, chunk_at, "
     "chunk_size, first_position, pool_size, first_chunk): each row's CONTRIB header"},
    {"quantize", (PyCFunction)(void (*)(void))quantize, METH_FASTCALL,
     "quantize(values, scale, limit, lanes): 0 when the lanes hold quantize_scaled's values, "
     "1 when a value exceeds the limit by more than one, 2 at a NaN"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "MODULE_NAME", "A block quantized into its lanes in one pass", -1,
    functions,
};

PyMODINIT_FUNC PyInit_MODULE_NAME(void) {
    return PyModule_Create(&module_def);
}
