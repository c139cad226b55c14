"""A switch's register banks as its generated C reads them (part of nativeprelude.py's
`PRELUDE`): `bank_view` checks one bank array (C-contiguous, writable, of the shape and type the
module was compiled for), and a `Banks` holds every bank's data pointer, checked once when the
switch's state is bound (nativebuild.py `bound_state`, the module's `bank_table`) and read by
the controls at `BANKS(S)[index]`, the state tuple's last item."""

BANKS_SOURCE = r"""/* Register banks: a C-contiguous (size, lanes) array, written in place. */
static int bank_view(PyObject *bank, npy_intp rows, npy_intp cols, int typenum, void **data) {
    if (!PyArray_Check(bank)) {
        PyErr_SetString(PyExc_TypeError, "a register bank that is not an array");
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)bank;
    if (PyArray_TYPE(a) != typenum || PyArray_NDIM(a) != 2 || PyArray_DIM(a, 0) != rows ||
            PyArray_DIM(a, 1) != cols || !PyArray_IS_C_CONTIGUOUS(a) ||
            !PyArray_ISWRITEABLE(a) || !PyArray_ISNOTSWAPPED(a) || !PyArray_ISALIGNED(a)) {
        PyErr_SetString(PyExc_TypeError, "a register bank of another shape, type or layout");
        return -1;
    }
    *data = PyArray_DATA(a);
    return 0;
}

/* A switch's register banks as data pointers, checked once when the state is bound
   (`bank_table`, which the generated part of the module defines over its banks) rather than
   at every packet: the controls read a bank's cells at `BANKS(S)[index]`, the state tuple's
   last item, without touching the array objects. A bank keeps its buffer while this holds
   it (numpy moves an array's data only on a resize, which it refuses to an array another
   object refers to), and nothing but `bank_table` makes one. */
typedef struct {
    PyObject_VAR_HEAD
    PyObject *state;        /* the tuple of state objects the pointers are into */
    PyObject *maker;        /* the module's bank_table, which made it (and remakes it) */
    void *data[1];          /* per state index: its bank's cells, or NULL */
} Banks;

/* Seen by the collector (the state it holds may lead back to it), but never cleared by it:
   a cycle through it is broken at its other objects, so its cells stay held while it is. */
static int Banks_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Banks *)self)->state);
    Py_VISIT(((Banks *)self)->maker);
    return 0;
}

static void Banks_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_XDECREF(((Banks *)self)->state);
    Py_XDECREF(((Banks *)self)->maker);
    Py_TYPE(self)->tp_free(self);
}

/* pickled as the call that makes it again over the (pickled) state: a shared program's
   template keeps its bound functions (share/template_store.py) */
static PyObject *Banks_reduce(PyObject *self, PyObject *unused) {
    return Py_BuildValue("O(O)", ((Banks *)self)->maker, ((Banks *)self)->state);
}

static PyMethodDef Banks_methods[] = {
    {"__reduce__", Banks_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject BanksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "p4switch.native.Banks",
    .tp_basicsize = offsetof(Banks, data),
    .tp_itemsize = sizeof(void *),
    .tp_dealloc = Banks_dealloc,
    .tp_traverse = Banks_traverse,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "a switch's register banks, checked once: bank_table(state)",
    .tp_methods = Banks_methods,
};

typedef struct { Py_ssize_t index; npy_intp rows, cols; int typenum; } BankSpec;

/* the Banks of `state` (the state tuple without its Banks) for the banks `specs` names,
   each checked as bank_view checks it; NULL with TypeError where one is not as compiled.
   `maker`: the module's bank_table function. */
static PyObject *banks_of(PyObject *maker, PyObject *state, const BankSpec *specs,
                          Py_ssize_t n) {
    if (!PyTuple_CheckExact(state) || PyTuple_GET_SIZE(state) != STATE_SIZE) {
        PyErr_SetString(PyExc_TypeError, "bank_table: expected the state tuple");
        return NULL;
    }
    Banks *banks = PyObject_GC_NewVar(Banks, &BanksType, STATE_SIZE);
    if (banks == NULL) return NULL;
    memset(banks->data, 0, STATE_SIZE * sizeof(void *));
    banks->state = Py_NewRef(state);
    banks->maker = Py_NewRef(maker);
    PyObject_GC_Track((PyObject *)banks);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bank_view(PyTuple_GET_ITEM(state, specs[i].index), specs[i].rows, specs[i].cols,
                      specs[i].typenum, &banks->data[specs[i].index])) {
            Py_DECREF(banks);
            return NULL;
        }
    }
    return (PyObject *)banks;
}

#define BANKS(S) (((Banks *)PyTuple_GET_ITEM((S), STATE_SIZE))->data)
"""
