/* heapq's heappush and heappop on a Python list, for the INA sessions' timer heaps
 * (hosts/ina_recovery.py: entries (deadline, key, tries, kind)), with their deadlines'
 * floats compared here.
 *
 * Every RESULT leaves its chunk's timer stale at the heap's top, and the session pops it with
 * heapq before it reads the next deadline: ~6 levels of tuple comparisons a pop, each through
 * Python's tuple order (an equality test, then `<`, item by item). These are heapq's own
 * algorithms (its C module's: the same swaps, so the same list as the Python core's heapq
 * leaves), with `<` of two entries decided by their first items when both are floats that
 * differ, and by Python's `<` of the whole items otherwise: the order Python's tuples have.
 */

/* a < b as Python's tuples order them: the first items' floats when they differ */
static int timer_less(PyObject *a, PyObject *b) {
    if (PyTuple_CheckExact(a) && PyTuple_CheckExact(b) && PyTuple_GET_SIZE(a) > 0
            && PyTuple_GET_SIZE(b) > 0) {
        PyObject *x = PyTuple_GET_ITEM(a, 0), *y = PyTuple_GET_ITEM(b, 0);
        if (PyFloat_CheckExact(x) && PyFloat_CheckExact(y)) {
            double u = PyFloat_AS_DOUBLE(x), v = PyFloat_AS_DOUBLE(y);
            if (u < v) return 1;
            if (u > v) return 0;
        }
    }
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* heap[a] < heap[b], held while compared (Python's `<` may run code), as heapq asks it: -1
   when the comparison raised or changed the list's size from `size` */
static int timer_less_at(PyObject *heap, Py_ssize_t size, Py_ssize_t a, Py_ssize_t b) {
    PyObject *x = Py_NewRef(PyList_GET_ITEM(heap, a)), *y = Py_NewRef(PyList_GET_ITEM(heap, b));
    int less = timer_less(x, y);
    Py_DECREF(x);
    Py_DECREF(y);
    if (less >= 0 && size != PyList_GET_SIZE(heap)) {
        PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
        return -1;
    }
    return less;
}

/* heapq's _siftdown: the item at `pos` moved up towards `start` while it is less than its
   parent. -1 on an error (a comparison raised, or it changed the list). */
static int timer_siftdown(PyObject *heap, Py_ssize_t start, Py_ssize_t pos) {
    Py_ssize_t size = PyList_GET_SIZE(heap);
    while (pos > start) {
        Py_ssize_t parent = (pos - 1) >> 1;
        int less = timer_less_at(heap, size, pos, parent);
        if (less < 0) return -1;
        if (!less) break;
        PyObject **items = ((PyListObject *)heap)->ob_item, *item = items[pos];
        items[pos] = items[parent];
        items[parent] = item;
        pos = parent;
    }
    return 0;
}

/* heapq's _siftup: the item at `pos` sent down to a leaf along the lesser children, then up
   again (_siftdown) to its place */
static int timer_siftup(PyObject *heap, Py_ssize_t pos) {
    Py_ssize_t end = PyList_GET_SIZE(heap), start = pos, limit = end >> 1;
    while (pos < limit) {
        Py_ssize_t child = 2 * pos + 1;
        if (child + 1 < end) {
            int less = timer_less_at(heap, end, child, child + 1);
            if (less < 0) return -1;
            child += !less;
        }
        PyObject **items = ((PyListObject *)heap)->ob_item, *moved = items[child];
        items[child] = items[pos];
        items[pos] = moved;
        pos = child;
    }
    return timer_siftdown(heap, start, pos);
}

/* heapq.heappush(heap, item) */
static int timers_push(PyObject *heap, PyObject *item) {
    if (!PyList_Check(heap)) {
        PyErr_SetString(PyExc_TypeError, "heap argument must be a list");
        return -1;
    }
    if (PyList_Append(heap, item) < 0) return -1;
    return timer_siftdown(heap, 0, PyList_GET_SIZE(heap) - 1);
}

/* heapq.heappop(heap): the least item (a new reference), or NULL */
static PyObject *timers_pop(PyObject *heap) {
    if (!PyList_Check(heap)) {
        PyErr_SetString(PyExc_TypeError, "heap argument must be a list");
        return NULL;
    }
    Py_ssize_t size = PyList_GET_SIZE(heap);
    if (size == 0) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return NULL;
    }
    PyObject *last = Py_NewRef(PyList_GET_ITEM(heap, size - 1));
    if (PyList_SetSlice(heap, size - 1, size, NULL) < 0) {
        Py_DECREF(last);
        return NULL;
    }
    if (size == 1) return last;
    PyObject *least = PyList_GET_ITEM(heap, 0);         /* the list's reference, now ours */
    PyList_SET_ITEM(heap, 0, last);                     /* (takes ours of `last`) */
    if (timer_siftup(heap, 0) < 0) {
        Py_DECREF(least);
        return NULL;
    }
    return least;
}

/* the module's heap_push(heap, item) and heap_pop(heap), for tests against heapq */
static PyObject *TimerHeap_push(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "heap_push(heap, item)");
        return NULL;
    }
    if (timers_push(args[0], args[1]) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *TimerHeap_pop(PyObject *unused, PyObject *heap) {
    return timers_pop(heap);
}
