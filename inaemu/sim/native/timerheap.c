/* TimerHeap: the INA sessions' timer heaps in C structures (hosts/timer_heap.py's TimerHeap,
 * the definition, is the contract: push, pop, top, len, iteration in heap order).
 *
 * Every RESULT leaves its chunk's timer stale at the heap's top and every first transmission
 * pushes one, so a session pushes and pops about once a frame. As a list of tuples each
 * comparison followed two tuples to their floats (four cache lines of objects scattered over
 * the heap, at 1,024 workers mostly not in any cache: ~6 % of a run's loop), and each push
 * made a tuple and a float. Here an entry is (deadline, key, tries, kind) as C numbers in
 * one array, with the key's int kept beside it (the flight table's key, handed back as it was
 * pushed), and a comparison reads two entries of that array.
 *
 * The order is Python's order of the tuples: the deadlines first (floats, never NaN: refused
 * at the push, as the Python class refuses it), then key, tries and kind (ints of 64 bits).
 * The algorithms are heapq's (push: append, then `_siftdown`; pop: the last entry to the
 * root, `_siftup`, then `_siftdown`), so the same pushes and pops leave the same entries at
 * the same places as the Python class's list (tests/sim/test_timer_heap.py). */

typedef struct {
    double deadline;
    long long key, tries, kind;
    PyObject *key_obj;              /* the key as pushed (an exact int), a reference */
} TimerEntry;

typedef struct {
    PyObject_HEAD
    TimerEntry *items;
    Py_ssize_t size, capacity;
} TimerHeapObject;

static PyTypeObject TimerHeapType;

static inline int timer_entry_less(const TimerEntry *a, const TimerEntry *b) {
    if (a->deadline != b->deadline) return a->deadline < b->deadline;
    if (a->key != b->key) return a->key < b->key;
    if (a->tries != b->tries) return a->tries < b->tries;
    return a->kind < b->kind;
}

/* heapq's _siftdown: the entry at `pos` moved up towards `start` while less than its parent */
static void timer_siftdown(TimerEntry *items, Py_ssize_t start, Py_ssize_t pos) {
    TimerEntry moving = items[pos];
    while (pos > start) {
        Py_ssize_t parent = (pos - 1) >> 1;
        if (!timer_entry_less(&moving, &items[parent])) break;
        items[pos] = items[parent];
        pos = parent;
    }
    items[pos] = moving;
}

/* heapq's _siftup: the entry at `pos` sent down along the lesser children (the right one
   when the left is not less) to a leaf, then up again to its place */
static void timer_siftup(TimerEntry *items, Py_ssize_t size, Py_ssize_t pos) {
    Py_ssize_t start = pos, child = 2 * pos + 1;
    TimerEntry moving = items[pos];
    while (child < size) {
        Py_ssize_t right = child + 1;
        if (right < size && !timer_entry_less(&items[child], &items[right])) child = right;
        items[pos] = items[child];
        pos = child;
        child = 2 * pos + 1;
    }
    items[pos] = moving;
    timer_siftdown(items, start, pos);
}

/* a timer armed: the key's reference is the heap's own from here (a new one is taken) */
static int timer_heap_push(TimerHeapObject *h, double deadline, PyObject *key, long long tries,
                           long long kind) {
    if (deadline != deadline) {
        PyErr_SetString(PyExc_ValueError, "a timer's deadline must be a number, got nan");
        return -1;
    }
    if (!PyLong_CheckExact(key)) {
        PyErr_Format(PyExc_TypeError, "a timer's key must be an int, got %.80s",
                     Py_TYPE(key)->tp_name);
        return -1;
    }
    long long k = PyLong_AsLongLong(key);
    if (k == -1 && PyErr_Occurred()) return -1;
    if (h->size == h->capacity) {
        Py_ssize_t grown = h->capacity ? 2 * h->capacity : 16;
        TimerEntry *items = PyMem_Realloc(h->items, grown * sizeof(TimerEntry));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        h->items = items;
        h->capacity = grown;
    }
    TimerEntry *e = &h->items[h->size];
    e->deadline = deadline;
    e->key = k;
    e->tries = tries;
    e->kind = kind;
    e->key_obj = Py_NewRef(key);
    h->size++;
    timer_siftdown(h->items, 0, h->size - 1);
    return 0;
}

/* the earliest entry (its key borrowed), or NULL when empty */
static inline const TimerEntry *timer_heap_top(const TimerHeapObject *h) {
    return h->size ? &h->items[0] : NULL;
}

/* the earliest entry removed into `out` (its key's reference moves to the caller); the heap
   must not be empty */
static void timer_heap_pop(TimerHeapObject *h, TimerEntry *out) {
    TimerEntry last = h->items[--h->size];
    if (h->size == 0) {
        *out = last;
        return;
    }
    *out = h->items[0];
    h->items[0] = last;
    timer_siftup(h->items, h->size, 0);
}

/* an entry as Python's tuple (deadline, key, tries, kind) */
static PyObject *timer_entry_tuple(const TimerEntry *e) {
    PyObject *d = PyFloat_FromDouble(e->deadline), *t = PyLong_FromLongLong(e->tries);
    PyObject *k = PyLong_FromLongLong(e->kind), *tuple = NULL;
    if (d != NULL && t != NULL && k != NULL) tuple = PyTuple_Pack(4, d, e->key_obj, t, k);
    Py_XDECREF(d);
    Py_XDECREF(t);
    Py_XDECREF(k);
    return tuple;
}

/* a number of 64 bits for a timer's tries or kind */
static int timer_int(PyObject *value, const char *what, long long *out) {
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a timer's %s must be an int, got %.80s", what,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    *out = PyLong_AsLongLong(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* ---- the Python type ----------------------------------------------------------------------- */

static PyObject *TimerHeap_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "TimerHeap() takes no arguments");
        return NULL;
    }
    TimerHeapObject *h = (TimerHeapObject *)type->tp_alloc(type, 0);
    if (h != NULL) {
        h->items = NULL;
        h->size = h->capacity = 0;
    }
    return (PyObject *)h;
}

static void TimerHeap_dealloc(TimerHeapObject *h) {
    for (Py_ssize_t i = 0; i < h->size; i++) Py_DECREF(h->items[i].key_obj);
    PyMem_Free(h->items);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *TimerHeap_push_method(TimerHeapObject *h, PyObject *const *args,
                                       Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "push(deadline, key, tries, kind)");
        return NULL;
    }
    double deadline = PyFloat_AsDouble(args[0]);
    long long tries, kind;
    if ((deadline == -1.0 && PyErr_Occurred()) || timer_int(args[2], "tries", &tries) < 0
            || timer_int(args[3], "kind", &kind) < 0
            || timer_heap_push(h, deadline, args[1], tries, kind) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *TimerHeap_pop_method(TimerHeapObject *h, PyObject *unused) {
    if (h->size == 0) {
        PyErr_SetString(PyExc_IndexError, "pop from an empty timer heap");
        return NULL;
    }
    TimerEntry e;
    timer_heap_pop(h, &e);
    PyObject *tuple = timer_entry_tuple(&e);
    Py_DECREF(e.key_obj);
    return tuple;
}

static PyObject *TimerHeap_top_method(TimerHeapObject *h, PyObject *unused) {
    const TimerEntry *e = timer_heap_top(h);
    if (e == NULL) {
        PyErr_SetString(PyExc_IndexError, "top of an empty timer heap");
        return NULL;
    }
    return timer_entry_tuple(e);
}

static Py_ssize_t TimerHeap_len(TimerHeapObject *h) {
    return h->size;
}

/* the entries in heap order, as tuples: a snapshot */
static PyObject *TimerHeap_iter(TimerHeapObject *h) {
    PyObject *entries = PyTuple_New(h->size);
    if (entries == NULL) return NULL;
    for (Py_ssize_t i = 0; i < h->size; i++) {
        PyObject *tuple = timer_entry_tuple(&h->items[i]);
        if (tuple == NULL) {
            Py_DECREF(entries);
            return NULL;
        }
        PyTuple_SET_ITEM(entries, i, tuple);
    }
    PyObject *it = PyObject_GetIter(entries);
    Py_DECREF(entries);
    return it;
}

static PyMethodDef TimerHeap_methods[] = {
    {"push", (PyCFunction)(void (*)(void))TimerHeap_push_method, METH_FASTCALL,
     "push(deadline, key, tries, kind): arm a timer (NaN deadlines refused)"},
    {"pop", (PyCFunction)TimerHeap_pop_method, METH_NOARGS,
     "pop(): the earliest entry, removed (IndexError when empty)"},
    {"top", (PyCFunction)TimerHeap_top_method, METH_NOARGS,
     "top(): the earliest entry, left in place (IndexError when empty)"},
    {NULL}
};

static PySequenceMethods TimerHeap_as_sequence = {
    .sq_length = (lenfunc)TimerHeap_len,
};

static PyTypeObject TimerHeapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.TimerHeap",
    .tp_basicsize = sizeof(TimerHeapObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An INA session's timers (hosts/timer_heap.py's TimerHeap) in C structures.",
    .tp_new = TimerHeap_new,
    .tp_dealloc = (destructor)TimerHeap_dealloc,
    .tp_methods = TimerHeap_methods,
    .tp_as_sequence = &TimerHeap_as_sequence,
    .tp_iter = (getiterfunc)TimerHeap_iter,
};
