/* Attribute helpers for the C parts that keep their state in Python objects (ringpath.c,
 * inasession.c, inaworker.c: the sans-I/O Python cores stay the definition, so the C reads
 * and writes their fields by name). A missing attribute or a wrong type is an error, which
 * the caller passes on (a bug in the C, never a protocol event). */

static int get_ll(PyObject *o, PyObject *name, long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int set_ll(PyObject *o, PyObject *name, long long value) {
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL) return -1;
    int r = PyObject_SetAttr(o, name, v);
    Py_DECREF(v);
    return r;
}

static int get_double(PyObject *o, PyObject *name, double *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static int set_double(PyObject *o, PyObject *name, double value) {
    PyObject *v = PyFloat_FromDouble(value);
    if (v == NULL) return -1;
    int r = PyObject_SetAttr(o, name, v);
    Py_DECREF(v);
    return r;
}

/* 1 if the attribute is truthy, 0 if not, -1 on error */
static int get_truth(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* 1 if the attribute is None, 0 if not, -1 on error */
static int attr_is_none(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

static int add_ll(PyObject *o, PyObject *name, long long delta) {
    long long v;
    if (get_ll(o, name, &v) < 0) return -1;
    return set_ll(o, name, v + delta);
}
