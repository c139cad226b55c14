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

/* The offsets of class `cls`'s slots, which must be `names` (`count` of them) in that order:
 * for C that makes or reads such objects by offset (inaworker.c's Flights, ringpath.c's
 * outstanding segments); a class changed under the C fails loudly, naming `what`. */
static int slot_offsets(PyObject *cls, const char *const *names, int count,
                        Py_ssize_t *offsets, const char *what) {
    PyObject *slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL) return -1;
    int same = PyTuple_Check(slots) && PyTuple_GET_SIZE(slots) == count;
    for (int i = 0; same && i < count; i++)
        same = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(slots, i), names[i]) == 0;
    Py_DECREF(slots);
    if (!same) {
        PyErr_Format(PyExc_TypeError, "%s's slots are not the ones the native core writes",
                     what);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        PyObject *descr = PyObject_GetAttrString(cls, names[i]);
        if (descr == NULL) return -1;
        int member = Py_TYPE(descr) == &PyMemberDescr_Type;
        if (member) offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!member) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", what, names[i]);
            return -1;
        }
    }
    return 0;
}
