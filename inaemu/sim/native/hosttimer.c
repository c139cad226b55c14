/* A host's re-armable deadline in C: inaemu/sim/host_node.py's `Timer`, for the native core's
 * hosts (host.py's NativeHostNode makes its timers of this type).
 *
 * The same contract, step for step: `set(deadline)` keeps the pending event when it is due
 * no later than the new deadline, else cancels it and schedules `_fire` at the deadline with
 * the loop's `at`; `_fire` re-arms itself when it comes up before the deadline (which moved
 * later since) and calls the action when it is due; `cancel()` lets go of both. The fields
 * are the Python class's slots under the same names (`loop`, `action`, `_event`, `deadline`),
 * and the event loop holds the same events at the same (time, sequence) places as with the
 * Python class. The INA and ring paths (inaworker.c, ringpath.c) call `host_timer_set`
 * directly. What it saves is the interpreter: a lossy run moves a worker's deadline earlier
 * on most packets, and each move was a Python `set` and, later, a Python `_fire`.
 * tests/sim/test_host_timer.py runs both classes through the same cases.
 */

typedef struct {
    PyObject_HEAD
    PyObject *loop, *action, *event, *deadline;
    PyObject *fire;         /* the bound `_fire` the events call, made once */
} HostTimer;

static PyTypeObject HostTimerType;
static PyObject *timer_str_at, *timer_str_cancel, *timer_str_now, *timer_str_pending, *timer_str_time, *timer_no_args;

/* a field the caller needs, or AttributeError when it was deleted */
static PyObject *timer_field(PyObject *value, const char *name) {
    if (value == NULL) PyErr_Format(PyExc_AttributeError, "Timer has no %s", name);
    return value;
}

/* `event.pending`: events.Event's action at its slot, else the property */
static int event_pending(PyObject *loop, PyObject *event) {
    if (PyObject_TypeCheck(loop, &LoopType)) {
        Loop *l = (Loop *)loop;
        if (l->event_slots && Py_TYPE(event) == (PyTypeObject *)l->event_class
                && EVENT_SLOT(l, event, action) != NULL)
            return EVENT_SLOT(l, event, action) != Py_None;
    }
    PyObject *pending = PyObject_GetAttr(event, timer_str_pending);
    if (pending == NULL) return -1;
    int truth = PyObject_IsTrue(pending);
    Py_DECREF(pending);
    return truth;
}

/* `event.time <= deadline`: events.Event's time at its slot, else the attribute */
static int event_due_by(PyObject *loop, PyObject *event, PyObject *deadline) {
    PyObject *time = NULL;
    if (PyObject_TypeCheck(loop, &LoopType)) {
        Loop *l = (Loop *)loop;
        if (l->event_slots && Py_TYPE(event) == (PyTypeObject *)l->event_class)
            time = Py_XNewRef(EVENT_SLOT(l, event, time));
    }
    if (time == NULL && (time = PyObject_GetAttr(event, timer_str_time)) == NULL) return -1;
    int le;
    if (PyFloat_CheckExact(time) && PyFloat_CheckExact(deadline))
        le = PyFloat_AS_DOUBLE(time) <= PyFloat_AS_DOUBLE(deadline);
    else
        le = PyObject_RichCompareBool(time, deadline, Py_LE);
    Py_DECREF(time);
    return le;
}

/* `event.cancel()`: events.Event's slots set as its method sets them, else the method */
static int event_cancel(PyObject *loop, PyObject *event) {
    if (PyObject_TypeCheck(loop, &LoopType)) {
        Loop *l = (Loop *)loop;
        if (l->event_slots && Py_TYPE(event) == (PyTypeObject *)l->event_class) {
            Py_XSETREF(EVENT_SLOT(l, event, action), Py_NewRef(Py_None));
            Py_XSETREF(EVENT_SLOT(l, event, args), Py_NewRef(timer_no_args));
            return 0;
        }
    }
    PyObject *r = PyObject_CallMethodNoArgs(event, timer_str_cancel);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* `self.loop.at(deadline, self._fire)` (a new reference to its event) */
static PyObject *schedule_fire(HostTimer *self, PyObject *deadline) {
    if (PyObject_TypeCheck(self->loop, &LoopType)) {
        double time = PyFloat_AsDouble(deadline);
        if (time == -1.0 && PyErr_Occurred()) return NULL;
        return schedule_at((Loop *)self->loop, time, self->fire, timer_no_args);
    }
    return PyObject_CallMethodObjArgs(self->loop, timer_str_at, deadline, self->fire, NULL);
}

/* Timer.set(deadline) */
static int host_timer_set(HostTimer *self, PyObject *deadline) {
    Py_INCREF(deadline);
    Py_XSETREF(self->deadline, deadline);
    if (deadline == Py_None) return 0;
    if (timer_field(self->loop, "loop") == NULL || timer_field(self->event, "_event") == NULL)
        return -1;
    PyObject *event = Py_NewRef(self->event);
    if (event != Py_None) {
        int pending = event_pending(self->loop, event);
        int kept = pending > 0 ? event_due_by(self->loop, event, deadline) : pending;
        if (kept != 0 || event_cancel(self->loop, event) < 0) {
            Py_DECREF(event);
            return kept > 0 ? 0 : -1;
        }
    }
    Py_DECREF(event);
    PyObject *scheduled = schedule_fire(self, deadline);
    if (scheduled == NULL) return -1;
    Py_XSETREF(self->event, scheduled);
    return 0;
}

static PyObject *HostTimer_set(HostTimer *self, PyObject *deadline) {
    if (host_timer_set(self, deadline) < 0) return NULL;
    Py_RETURN_NONE;
}

/* `self.loop.now < deadline` */
static int before_deadline(HostTimer *self, PyObject *deadline) {
    if (PyObject_TypeCheck(self->loop, &LoopType) && PyFloat_CheckExact(deadline))
        return ((Loop *)self->loop)->now < PyFloat_AS_DOUBLE(deadline);
    PyObject *now = PyObject_GetAttr(self->loop, timer_str_now);
    if (now == NULL) return -1;
    int lt = PyObject_RichCompareBool(now, deadline, Py_LT);
    Py_DECREF(now);
    return lt;
}

static PyObject *HostTimer_fire(HostTimer *self, PyObject *unused) {
    Py_XSETREF(self->event, Py_NewRef(Py_None));
    if (timer_field(self->deadline, "deadline") == NULL) return NULL;
    PyObject *deadline = Py_NewRef(self->deadline);
    if (deadline == Py_None) { Py_DECREF(deadline); Py_RETURN_NONE; }
    int early = timer_field(self->loop, "loop") == NULL ? -1 : before_deadline(self, deadline);
    if (early) {
        PyObject *scheduled = early < 0 ? NULL : schedule_fire(self, deadline);
        Py_DECREF(deadline);
        if (scheduled == NULL) return NULL;
        Py_XSETREF(self->event, scheduled);
        Py_RETURN_NONE;
    }
    Py_DECREF(deadline);
    Py_XSETREF(self->deadline, Py_NewRef(Py_None));
    if (timer_field(self->action, "action") == NULL) return NULL;
    PyObject *r = PyObject_CallNoArgs(self->action);
    if (r == NULL) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *HostTimer_cancel(HostTimer *self, PyObject *unused) {
    if (timer_field(self->event, "_event") == NULL) return NULL;
    if (self->event != Py_None) {
        if (timer_field(self->loop, "loop") == NULL
                || event_cancel(self->loop, self->event) < 0)
            return NULL;
        Py_XSETREF(self->event, Py_NewRef(Py_None));
    }
    Py_XSETREF(self->deadline, Py_NewRef(Py_None));
    Py_RETURN_NONE;
}

static int HostTimer_init(HostTimer *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"loop", "action", NULL};
    PyObject *loop, *action;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", names, &loop, &action)) return -1;
    PyObject *fire = PyObject_GetAttrString((PyObject *)self, "_fire");
    if (fire == NULL) return -1;
    Py_XSETREF(self->loop, Py_NewRef(loop));
    Py_XSETREF(self->action, Py_NewRef(action));
    Py_XSETREF(self->event, Py_NewRef(Py_None));
    Py_XSETREF(self->deadline, Py_NewRef(Py_None));
    Py_XSETREF(self->fire, fire);
    return 0;
}

/* the loop's events hold `fire`, which holds the timer: the collector must see the cycle */
static int HostTimer_traverse(HostTimer *self, visitproc visit, void *arg) {
    Py_VISIT(self->loop); Py_VISIT(self->action); Py_VISIT(self->event);
    Py_VISIT(self->deadline); Py_VISIT(self->fire);
    return 0;
}

static int HostTimer_clear(HostTimer *self) {
    Py_CLEAR(self->loop); Py_CLEAR(self->action); Py_CLEAR(self->event);
    Py_CLEAR(self->deadline); Py_CLEAR(self->fire);
    return 0;
}

static void HostTimer_dealloc(HostTimer *self) {
    PyObject_GC_UnTrack(self);
    HostTimer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef HostTimer_methods[] = {
    {"set", (PyCFunction)HostTimer_set, METH_O,
     "set(deadline): the action at `deadline` (None: none); a later one keeps the pending "
     "event"},
    {"cancel", (PyCFunction)HostTimer_cancel, METH_NOARGS, "cancel(): no deadline, no event"},
    {"_fire", (PyCFunction)HostTimer_fire, METH_NOARGS,
     "_fire(): the pending event's call: re-armed before the deadline, else the action"},
    {NULL}
};

static PyMemberDef HostTimer_members[] = {
    {"loop", T_OBJECT_EX, offsetof(HostTimer, loop), 0, "the event loop"},
    {"action", T_OBJECT_EX, offsetof(HostTimer, action), 0, "what runs at the deadline"},
    {"_event", T_OBJECT_EX, offsetof(HostTimer, event), 0, "the pending event, or None"},
    {"deadline", T_OBJECT_EX, offsetof(HostTimer, deadline), 0, "the deadline, or None"},
    {NULL}
};

static PyTypeObject HostTimerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.Timer",
    .tp_basicsize = sizeof(HostTimer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)HostTimer_init,
    .tp_dealloc = (destructor)HostTimer_dealloc,
    .tp_traverse = (traverseproc)HostTimer_traverse,
    .tp_clear = (inquiry)HostTimer_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = HostTimer_methods,
    .tp_members = HostTimer_members,
    .tp_doc = "Timer(loop, action): host_node.Timer's contract in C (hosttimer.c)",
};

static int host_timer_module_init(void) {
    if ((timer_str_at = PyUnicode_InternFromString("at")) == NULL
            || (timer_str_cancel = PyUnicode_InternFromString("cancel")) == NULL
            || (timer_str_now = PyUnicode_InternFromString("now")) == NULL
            || (timer_str_pending = PyUnicode_InternFromString("pending")) == NULL
            || (timer_str_time = PyUnicode_InternFromString("time")) == NULL
            || (timer_no_args = PyTuple_New(0)) == NULL)
        return -1;
    return PyType_Ready(&HostTimerType);
}
