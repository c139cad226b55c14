/* Seeded gradients drawn and summed without the GIL: a ring check's exact sums of a block
 * (inaemu/sim/streamed_check.py), computed on a drawing thread in one call.
 *
 * `add_drawn(capsules, count, magnitude, total, abs_total)`: for each generator, in order
 * (the ranks 0..n-1: float64 addition is not associative), its next `count` standard normals
 * by NumPy's own routine (`random_standard_normal_fill`, what `Generator.standard_normal`
 * fills with; libnpyrandom.a, which NumPy ships for C users), times `magnitude`, rounded to
 * float32 (`hosts.gradient_stream.draw`), added to `total` and their magnitudes to
 * `abs_total` (float64, `hosts.agent.add_exact`). The generators are the caller's own,
 * already at the block's first value, and nobody else's meanwhile. tests/sim/
 * test_exact_sums.py holds the sums equal to drawing and adding in NumPy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include "numpy/random/distributions.h"

static int sums_buffer(PyObject *o, Py_buffer *view, Py_ssize_t count) {
    if (PyObject_GetBuffer(o, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL || strcmp(view->format, "d") != 0
            || view->len < count * 8) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "sums: float64 arrays of at least count values");
        return -1;
    }
    return 0;
}

static PyObject *add_drawn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "add_drawn(capsules, count, magnitude, total, abs_total or None)");
        return NULL;
    }
    if (!PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "add_drawn: the generators' capsules, a tuple");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    double magnitude = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "add_drawn: count must be >= 0");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args[0]);
    bitgen_t **generators = PyMem_Malloc(sizeof(bitgen_t *) * (n ? n : 1));
    double *drawn = PyMem_Malloc(sizeof(double) * (count ? count : 1));
    Py_buffer total_view, abs_view;
    int has_total = 0, has_abs = 0;
    PyObject *result = NULL;
    if (generators == NULL || drawn == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        generators[r] = PyCapsule_GetPointer(PyTuple_GET_ITEM(args[0], r), "BitGenerator");
        if (generators[r] == NULL) goto done;
    }
    if (sums_buffer(args[3], &total_view, count) < 0) goto done;
    has_total = 1;
    if (args[4] != Py_None) {
        if (sums_buffer(args[4], &abs_view, count) < 0) goto done;
        has_abs = 1;
    }
    double *total = total_view.buf, *abs_total = has_abs ? abs_view.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        random_standard_normal_fill(generators[r], count, drawn);
        for (Py_ssize_t i = 0; i < count; i++) {
            float value = magnitude == 1.0 ? (float)drawn[i] : (float)(drawn[i] * magnitude);
            total[i] += (double)value;
            if (abs_total != NULL) abs_total[i] += (double)fabsf(value);
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (has_total) PyBuffer_Release(&total_view);
    if (has_abs) PyBuffer_Release(&abs_view);
    PyMem_Free(generators);
    PyMem_Free(drawn);
    return result;
}

static PyMethodDef functions[] = {
    {"add_drawn", (PyCFunction)(void (*)(void))add_drawn, METH_FASTCALL,
     "add_drawn(capsules, count, magnitude, total, abs_total): the generators' next values "
     "added to the exact sums, without the GIL"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "MODULE_NAME", "seeded draws summed without the GIL", -1, functions,
};

PyMODINIT_FUNC PyInit_MODULE_NAME(void) {
    return PyModule_Create(&module_def);
}
