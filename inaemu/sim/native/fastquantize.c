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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
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

/* Round to the nearest integer, ties to even (`np.rint` in the default rounding mode), for
   |x| < 2^51: adding 2^52 leaves no bit below the units, so the sum is the magnitude rounded
   so, plus 2^52; both operations are exact but that rounding. A larger |x| (or a NaN) comes
   out as something that is not a lane value, and is flagged past the limit by the caller. */
static inline double round_even(double x) {
    const double two52 = 4503599627370496.0;
    return copysign((fabs(x) + two52) - two52, x);
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
    if (stride == (Py_ssize_t)sizeof(UTYPE) && (uintptr_t)row % sizeof(UTYPE) == 0) {         \
        UTYPE *lane = (UTYPE *)row;                                                            \
        for (Py_ssize_t j = 0; j < count; j++) {                                               \
            double q = round_even((double)values[j] * scale);                                  \
            over |= !(fabs(q) <= beyond);                                                      \
            q = q > top ? top : q;                                                             \
            q = q < -top ? -top : q;                                                           \
            lane[j] = SWAP((UTYPE)(CTYPE)q);                                                   \
        }                                                                                      \
        for (Py_ssize_t j = count; j < per_row; j++) lane[j] = 0;                              \
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

static PyMethodDef functions[] = {
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
