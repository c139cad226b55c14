/* A reentrant lock for the switches the native core makes (`SwitchLock`), in place of the
 * runtime Switch's `threading.RLock`: the switch ports take it around every packet, and an
 * RLock's `acquire` is a Python call that parses its (absent) arguments, ~350 instructions
 * for each of ~100,000 packets a 64-worker megabyte run. The ports take this one with two C
 * calls (`switch_lock_enter`/`switch_lock_exit`); Python takes it as an RLock
 * (`with switch.lock:`, acquire(blocking, timeout), release()), so a P4Runtime server's threads
 * and the loop share it as they share an RLock. Its semantics are _thread.RLock's: an owner
 * thread and a count; another thread waits (without the GIL); releasing a lock one does not
 * hold is a RuntimeError. Its fields are read and written with the GIL held, as an RLock's
 * are; a free-threaded build, which has no GIL, is given no SwitchLock (its switches keep
 * their RLock).
 *
 * Taking it when it is free is two stores, with no system lock: the GIL already orders every
 * taker. A system lock (`wake`) serves only threads that wait: held while none is signalled,
 * it is released by the last release of the switch lock when a thread waits, and the waiter
 * that gets it takes the switch lock if it is still free, or waits again (a thread holding
 * the GIL may have taken it first, as with an RLock, which hands nothing over either). Taking
 * the system lock on every packet cost ~175 instructions (a semaphore's try-wait), ~2 % of
 * the loop's thread at 64 workers. tests/sim/test_switch_lock.py. */

typedef struct {
    PyObject_HEAD
    PyThread_type_lock wake;    /* held, but while a release has signalled the waiters */
    unsigned long owner;        /* the holding thread's ident (valid while count > 0) */
    unsigned long count;        /* the holder's nested acquisitions; 0: free */
    unsigned long waiters;      /* threads waiting for `wake` */
    int signalled;              /* `wake` released for the waiters and not yet taken again */
} SwitchLock;

static PyTypeObject SwitchLockType;

static long long monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* the lock taken by this thread, waiting up to `timeout_us` (-1: for ever; 0: not at all);
 * 1 taken, 0 not (timed out), -1 an error (a signal handler raised while waiting) */
static int switch_lock_take(SwitchLock *self, PY_TIMEOUT_T timeout_us) {
    unsigned long me = PyThread_get_thread_ident();
    if (self->count > 0 && self->owner == me) {
        if (self->count == ULONG_MAX) {
            PyErr_SetString(PyExc_OverflowError, "internal lock count overflowed");
            return -1;
        }
        self->count++;
        return 1;
    }
    if (self->count == 0) {
        self->owner = me;
        self->count = 1;
        return 1;
    }
    if (timeout_us == 0) return 0;
    /* held by another thread: wait without the GIL for a release to signal `wake`; a signal
     * interrupts the wait: its handlers run here, as for an RLock, and the wait goes on for
     * what is left of the timeout */
    long long deadline = timeout_us > 0 ? monotonic_us() + timeout_us : 0;
    int r = 0;
    self->waiters++;
    for (;;) {
        PyLockStatus got;
        Py_BEGIN_ALLOW_THREADS
        got = PyThread_acquire_lock_timed(self->wake, timeout_us, 1);
        Py_END_ALLOW_THREADS
        if (got == PY_LOCK_ACQUIRED) self->signalled = 0;
        if (got == PY_LOCK_INTR && Py_MakePendingCalls() < 0) { r = -1; break; }
        if (self->count == 0) {
            self->owner = me;
            self->count = 1;
            r = 1;
            break;
        }
        if (timeout_us > 0) {
            long long left = deadline - monotonic_us();
            if (left <= 0) break;
            timeout_us = left;
        }
    }
    self->waiters--;
    return r;
}

/* one acquisition given back by its holder; -1 (a RuntimeError) if this thread holds none */
static int switch_lock_give(SwitchLock *self) {
    if (self->count == 0 || self->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return -1;
    }
    if (--self->count == 0) {
        self->owner = 0;
        if (self->waiters && !self->signalled) {
            self->signalled = 1;
            PyThread_release_lock(self->wake);
        }
    }
    return 0;
}

/* the ports' entry and exit around a packet: 0, or -1 with the error set */
static inline int switch_lock_enter(SwitchLock *self) {
    return switch_lock_take(self, -1) == 1 ? 0 : -1;
}

static inline int switch_lock_exit(SwitchLock *self) {
    return switch_lock_give(self);
}

static PyObject *SwitchLock_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "SwitchLock() takes no arguments");
        return NULL;
    }
    SwitchLock *self = (SwitchLock *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->wake = PyThread_allocate_lock();
    if (self->wake == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    PyThread_acquire_lock(self->wake, WAIT_LOCK);      /* (held: waiters wait for it) */
    return (PyObject *)self;
}

static void SwitchLock_dealloc(SwitchLock *self) {
    if (self->wake != NULL) {
        if (!self->signalled) PyThread_release_lock(self->wake);
        PyThread_free_lock(self->wake);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* acquire(blocking=True, timeout=-1), as RLock.acquire */
static PyObject *SwitchLock_acquire(SwitchLock *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd:acquire", names, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != -1.0) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1.0) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    PY_TIMEOUT_T us = -1;
    if (!blocking) {
        us = 0;
    } else if (timeout >= 0) {
        double limit = (double)PY_TIMEOUT_MAX / 1e6;
        if (timeout > limit) {
            PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
            return NULL;
        }
        us = (PY_TIMEOUT_T)(timeout * 1e6 + 0.999);      /* (rounded up, as an RLock does) */
    }
    int r = switch_lock_take(self, us);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static PyObject *SwitchLock_release(SwitchLock *self, PyObject *unused) {
    if (switch_lock_give(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *SwitchLock_enter(SwitchLock *self, PyObject *unused) {
    if (switch_lock_enter(self) < 0) return NULL;
    Py_RETURN_TRUE;
}

static PyObject *SwitchLock_exit(SwitchLock *self, PyObject *const *args, Py_ssize_t nargs) {
    if (switch_lock_give(self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* whether this thread holds it (RLock._is_owned) */
static PyObject *SwitchLock_is_owned(SwitchLock *self, PyObject *unused) {
    return PyBool_FromLong(self->count > 0 && self->owner == PyThread_get_thread_ident());
}

static PyObject *SwitchLock_repr(SwitchLock *self) {
    return PyUnicode_FromFormat("<%s %s object owner=%lu count=%lu at %p>",
                                self->count ? "locked" : "unlocked", Py_TYPE(self)->tp_name,
                                self->owner, self->count, self);
}

static PyMethodDef SwitchLock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))SwitchLock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1): as RLock.acquire"},
    {"release", (PyCFunction)SwitchLock_release, METH_NOARGS, "as RLock.release"},
    {"__enter__", (PyCFunction)SwitchLock_enter, METH_NOARGS, "acquire()"},
    {"__exit__", (PyCFunction)(void (*)(void))SwitchLock_exit, METH_FASTCALL, "release()"},
    {"_is_owned", (PyCFunction)SwitchLock_is_owned, METH_NOARGS,
     "whether the calling thread holds the lock"},
    {NULL}
};

static PyTypeObject SwitchLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.SwitchLock",
    .tp_basicsize = sizeof(SwitchLock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = SwitchLock_new,
    .tp_dealloc = (destructor)SwitchLock_dealloc,
    .tp_repr = (reprfunc)SwitchLock_repr,
    .tp_methods = SwitchLock_methods,
    .tp_doc = "a reentrant lock with RLock's semantics that the native switch ports take "
              "without a Python call (inaemu/sim/native/switchlock.c)",
};
