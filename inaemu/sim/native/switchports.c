/* A switch's ports in C: the per-frame part of inaemu/sim/switch_node.py's SwitchNode.
 *
 * `receive` (the single-server queue: busy, the input queue of `queue_packets` frames, its
 * drops), the service (the runtime's Python `receive` once per frame, then per_packet +
 * per_byte * len + per_copy * copies), the service end as a native loop entry, and `_emit`
 * (each copy to its egress link, sent in C when the output stage is empty and the link's
 * socket takes it, else appended to the output stage) follow the Python ones step for step.
 * The output stage's flush, the socket wake-ups, the egress queues' drain events, crash and
 * restart are the Python SwitchNode's own methods (the subclass in
 * inaemu/sim/native/switch.py), called from here only when the output stage holds frames or
 * the runtime was told its room, exactly when the Python node calls them.
 *
 * `Ingress(node, port)` is the `deliver` of a link arriving at `port`: a link entering it
 * goes straight to `ports_receive`, any other caller calls it.
 */

#include <time.h>

typedef struct { PyObject *port; PyObject *frame; } Waiting;

typedef struct {
    PyObject_HEAD
    Loop *loop;
    PyObject *name, *switch_, *receive, *queue_next_due, *egress, *output, *recorder,
        *drain_event, *room_told;
    double per_packet, per_byte, per_copy;
    long long queue_packets;
    Waiting *waiting;           /* a ring of the frames waiting for service */
    Py_ssize_t waiting_head, waiting_count, waiting_capacity;
    char busy, down, time_runtime;
    long long stale_finishes, in_service;
    double runtime_wall_s, busy_s;
    long long received, processed, emitted, dropped_input_queue, unrouted, dropped_down;
    /* the runtime's direct entry (Switch.direct_entry), looked up again when `receive` or
     * the runtime's engine changes: the receive it was found for, its switch's lock methods,
     * the engine and its fast path and egress queues (entry_fast NULL: none, use receive) */
    PyObject *entry_receive, *entry_acquire, *entry_release, *entry_engine, *entry_fast,
        *entry_queues;
    SwitchLock *entry_lock;     /* the switch's lock when it is a SwitchLock (taken in C) */
    long long max_port;
    long long direct_packets;
    /* the links of the ports emitted to lately (borrowed from `egress`), valid while the dict
     * keeps the version they were looked up at (no memo where CPython has no such version) */
    struct { long long port; PyObject *link; } egress_memo[8];
    uint64_t egress_version;
} Ports;

static PyTypeObject PortsType;
static PyObject *str_waiting, *str_flush_output, *str_schedule_drain, *str_arrived, *str_append,
    *str_writable, *str_send, *str_direct_entry, *str_engine_attr, *str_active, *str_lock,
    *str_acquire, *str_release, *str_packet_count;

static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int waiting_push(Ports *self, PyObject *port, PyObject *frame) {
    if (self->waiting_count == self->waiting_capacity) {
        Py_ssize_t capacity = self->waiting_capacity ? self->waiting_capacity * 2 : 64;
        Waiting *grown = PyMem_Malloc(capacity * sizeof(Waiting));
        if (grown == NULL) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < self->waiting_count; i++)
            grown[i] = self->waiting[(self->waiting_head + i) % self->waiting_capacity];
        PyMem_Free(self->waiting);
        self->waiting = grown;
        self->waiting_head = 0;
        self->waiting_capacity = capacity;
    }
    Py_INCREF(port);
    Py_INCREF(frame);
    self->waiting[(self->waiting_head + self->waiting_count) % self->waiting_capacity] =
        (Waiting){port, frame};
    self->waiting_count++;
    return 0;
}

/* the oldest waiting frame; the caller owns its references */
static Waiting waiting_pop(Ports *self) {
    Waiting w = self->waiting[self->waiting_head];
    self->waiting_head = (self->waiting_head + 1) % self->waiting_capacity;
    self->waiting_count--;
    return w;
}

static Py_ssize_t waiting_discard(Ports *self) {
    Py_ssize_t count = self->waiting_count;
    while (self->waiting_count) {
        Waiting w = waiting_pop(self);
        Py_DECREF(w.port);
        Py_DECREF(w.frame);
    }
    return count;
}

static int call_method_none(PyObject *self, PyObject *name) {
    PyObject *r = PyObject_CallMethodNoArgs(self, name);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int ports_finish(PyObject *target, PyObject *outputs);

static void entry_forget_engine(Ports *self) {
    Py_CLEAR(self->entry_engine); Py_CLEAR(self->entry_fast); Py_CLEAR(self->entry_queues);
}

static void entry_forget(Ports *self) {
    entry_forget_engine(self);
    Py_CLEAR(self->entry_receive); Py_CLEAR(self->entry_acquire); Py_CLEAR(self->entry_release);
    Py_CLEAR(self->entry_lock);
}

/* `receive` is new: if it is a runtime Switch's own bound `receive` (it has `direct_entry`),
 * remember its lock's methods; otherwise frames go through `receive` */
static int entry_for_receive(Ports *self) {
    entry_forget(self);
    Py_INCREF(self->receive);
    self->entry_receive = self->receive;
    if (!PyMethod_Check(self->receive)) return 0;
    PyObject *sw = PyMethod_GET_SELF(self->receive);
    if (!PyObject_HasAttr(sw, str_direct_entry)) return 0;
    PyObject *lock = PyObject_GetAttr(sw, str_lock);
    if (lock == NULL) return -1;
    if (Py_TYPE(lock) == &SwitchLockType) self->entry_lock = (SwitchLock *)Py_NewRef(lock);
    self->entry_acquire = PyObject_GetAttr(lock, str_acquire);
    self->entry_release = PyObject_GetAttr(lock, str_release);
    Py_DECREF(lock);
    if (self->entry_acquire == NULL || self->entry_release == NULL) return -1;
    if (self->max_port < 0) {
        PyObject *pre = PyImport_ImportModule("p4switch.runtime.state.pre");
        if (pre == NULL) return -1;
        PyObject *max_port = PyObject_GetAttrString(pre, "MAX_PORT");
        Py_DECREF(pre);
        if (max_port == NULL) return -1;
        self->max_port = PyLong_AsLongLong(max_port);
        Py_DECREF(max_port);
        if (self->max_port == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* with the lock held: the engine is `engine` now; ask the runtime for its entry */
static int entry_for_engine(Ports *self, PyObject *engine) {
    entry_forget_engine(self);
    Py_INCREF(engine);
    self->entry_engine = engine;
    PyObject *entry = PyObject_CallMethodNoArgs(PyMethod_GET_SELF(self->entry_receive),
                                                str_direct_entry);
    if (entry == NULL) return -1;
    if (entry == Py_None) { Py_DECREF(entry); return 0; }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3
            || PyTuple_GET_ITEM(entry, 0) != engine) {
        Py_DECREF(entry);
        PyErr_SetString(PyExc_TypeError,
                        "Switch.direct_entry() must give (its current engine, fast, queues)");
        return -1;
    }
    self->entry_fast = Py_NewRef(PyTuple_GET_ITEM(entry, 1));
    self->entry_queues = Py_NewRef(PyTuple_GET_ITEM(entry, 2));
    Py_DECREF(entry);
    return 0;
}

/* The runtime's outputs for one frame. The common path (Switch.direct_entry: a program, no
 * trace, the egress queues not in use) calls the engine's fast path directly, under the
 * switch's lock (P4Runtime writes may come from gRPC threads), as Switch.receive_batch does;
 * `*ask_due` is then whether the queues are in use after it (else queue_next_due is None).
 * Anything else goes through `receive`, and `*ask_due` is 1. NULL on an error. */
static PyObject *ports_pipeline(Ports *self, PyObject *port, PyObject *frame, int *ask_due) {
    PyObject *call_args[2] = {port, frame};
    *ask_due = 1;
    if (self->receive == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the switch ports have no runtime (_receive)");
        return NULL;
    }
    if (self->receive != self->entry_receive && entry_for_receive(self) < 0) return NULL;
    if (self->entry_acquire == NULL || !PyBytes_CheckExact(frame) || !PyLong_CheckExact(port))
        return PyObject_Vectorcall(self->receive, call_args, 2, NULL);
    long long number = PyLong_AsLongLong(port);
    if (number == -1 && PyErr_Occurred()) PyErr_Clear();    /* too large: receive says so */
    else if (number >= 0 && number <= self->max_port) {
        SwitchLock *lock = self->entry_lock;     /* (held over the packet: the entry may go) */
        if (lock != NULL) {
            Py_INCREF(lock);
            if (switch_lock_enter(lock) < 0) { Py_DECREF(lock); return NULL; }
        } else {
            PyObject *locked = PyObject_CallNoArgs(self->entry_acquire);
            if (locked == NULL) return NULL;
            Py_DECREF(locked);
        }
        PyObject *outputs = NULL;
        int direct = 0;
        PyObject *engine = attr_get(PyMethod_GET_SELF(self->entry_receive), str_engine_attr);
        if (engine == NULL) goto unlock;
        if (engine != self->entry_engine && entry_for_engine(self, engine) < 0) {
            Py_DECREF(engine);
            goto unlock;
        }
        Py_DECREF(engine);
        if (self->entry_fast == NULL) goto unlock;
        int active = get_truth(self->entry_queues, str_active);
        if (active < 0) goto unlock;
        if (active) goto unlock;
        direct = 1;
        if (add_ll(self->entry_engine, str_packet_count, 1) < 0) goto unlock;
        outputs = PyObject_Vectorcall(self->entry_fast, call_args, 2, NULL);
        if (outputs == NULL) goto unlock;
        active = get_truth(self->entry_queues, str_active);
        if (active < 0) Py_CLEAR(outputs);
        else *ask_due = active;
    unlock:;
        int raised = PyErr_Occurred() != NULL;
        if (lock != NULL) {
            /* (RLock's release by its holder cannot fail; the packet's error stays set) */
            int given = switch_lock_exit(lock);
            Py_DECREF(lock);
            if (given < 0) {
                Py_XDECREF(outputs);
                return NULL;
            }
        } else {
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyObject *unlocked = PyObject_CallNoArgs(self->entry_release);
            if (unlocked == NULL) {
                Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(traceback);
                Py_XDECREF(outputs);
                return NULL;
            }
            Py_DECREF(unlocked);
            PyErr_Restore(type, value, traceback);
        }
        if (direct || raised) {
            if (direct && outputs != NULL) self->direct_packets++;
            return outputs;
        }
    }
    return PyObject_Vectorcall(self->receive, call_args, 2, NULL);
}

/* SwitchNode._serve */
static int ports_serve(Ports *self, PyObject *port, PyObject *frame) {
    self->busy = 1;
    double started = self->time_runtime ? wall_seconds() : 0.0;
    int ask_due;
    PyObject *outputs = ports_pipeline(self, port, frame, &ask_due);
    if (self->time_runtime) self->runtime_wall_s += wall_seconds() - started;
    if (outputs == NULL) return -1;
    Py_ssize_t size = frame_length(frame),
        copies = PyList_CheckExact(outputs) ? PyList_GET_SIZE(outputs) : PyObject_Length(outputs);
    if (size < 0 || copies < 0) { Py_DECREF(outputs); return -1; }
    double service = self->per_packet + self->per_byte * (double)size
        + self->per_copy * (double)copies;
    self->processed++;
    self->busy_s += service;
    self->in_service = copies;
    Loop *loop = self->loop;
    int failed = loop_post_native(loop, loop->now + service, ports_finish, (PyObject *)self,
                                  outputs);
    Py_DECREF(outputs);
    if (failed) return -1;
    if (!ask_due) return 0;
    PyObject *due = PyObject_CallNoArgs(self->queue_next_due);
    if (due == NULL) return -1;
    int pending = due != Py_None;
    Py_DECREF(due);
    if (pending) return call_method_none((PyObject *)self, str_schedule_drain);
    return 0;
}

/* SwitchNode.receive */
static int ports_receive(Ports *self, PyObject *port, PyObject *frame) {
    self->received++;
    if (self->down) {
        self->dropped_down++;
        return 0;
    }
    if (is_set(self->recorder)) {
        PyObject *r = PyObject_CallMethodObjArgs(self->recorder, str_arrived, port, frame, NULL);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    if (self->busy) {
        if (self->waiting_count >= self->queue_packets) {
            self->dropped_input_queue++;
            if (is_set(self->loop->trace)) {
                Py_ssize_t size = frame_length(frame);
                if (size < 0) return -1;
                PyObject *line = PyUnicode_FromFormat("%U input-drop %zd", self->name, size);
                if (line == NULL) return -1;
                int failed = loop_record(self->loop, line);
                Py_DECREF(line);
                return failed;
            }
            return 0;
        }
        return waiting_push(self, port, frame);
    }
    return ports_serve(self, port, frame);
}

/* `egress[port]` (borrowed), or NULL: a port with no link (no error set) or an error. A port
 * that is a one-digit int is remembered with its link until the dict changes (`attach_egress`
 * writes into it from Python: its version moves, and the memo is forgotten). */
static PyObject *egress_link(Ports *self, PyObject *port) {
    long long number;
    uint64_t version;
    if (dict_version(self->egress, &version) && small_long(port, &number)) {
        if (version != self->egress_version) {
            memset(self->egress_memo, 0, sizeof self->egress_memo);
            self->egress_version = version;
        }
        size_t at = (size_t)number & (sizeof self->egress_memo / sizeof self->egress_memo[0] - 1);
        if (self->egress_memo[at].link != NULL && self->egress_memo[at].port == number)
            return self->egress_memo[at].link;
        PyObject *link = PyDict_GetItemWithError(self->egress, port);
        if (link != NULL) {
            self->egress_memo[at].port = number;
            self->egress_memo[at].link = link;
        }
        return link;
    }
    return PyDict_GetItemWithError(self->egress, port);
}

/* SwitchNode._emit */
static int ports_emit(Ports *self, PyObject *outputs) {
    PyObject *waiting = attr_get(self->output, str_waiting);
    if (waiting == NULL) return -1;
    PyObject *seq = PySequence_Fast(outputs, "the runtime's outputs must be a sequence");
    if (seq == NULL) { Py_DECREF(waiting); return -1; }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int failed = 0;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "the runtime's outputs must be (port, frame) pairs");
            failed = 1;
            break;
        }
        PyObject *port = PyTuple_GET_ITEM(item, 0), *out = PyTuple_GET_ITEM(item, 1);
        PyObject *link = egress_link(self, port);
        if (link == NULL) {
            if (PyErr_Occurred()) { failed = 1; break; }
            self->unrouted++;
            continue;
        }
        self->emitted++;
        Py_ssize_t held = PyObject_Length(waiting);
        if (held < 0) { failed = 1; break; }
        int writable = 0;
        if (held == 0) {
            if (PyObject_TypeCheck(link, &LinkType)) {
                writable = link_writable((Link *)link);
            } else {
                PyObject *r = PyObject_CallMethodNoArgs(link, str_writable);
                if (r == NULL) { failed = 1; break; }
                writable = PyObject_IsTrue(r);
                Py_DECREF(r);
                if (writable < 0) { failed = 1; break; }
            }
        }
        if (writable) {
            if (PyObject_TypeCheck(link, &LinkType)) {
                failed = link_send((Link *)link, out, Py_None) < 0;
            } else {
                PyObject *r = PyObject_CallMethodOneArg(link, str_send, out);
                failed = r == NULL;
                Py_XDECREF(r);
            }
        } else {
            PyObject *frames = PyList_New(1);
            if (frames == NULL) { failed = 1; break; }
            Py_INCREF(out);
            PyList_SET_ITEM(frames, 0, out);
            PyObject *r = PyObject_CallMethodObjArgs(self->output, str_append, port, frames, NULL);
            Py_DECREF(frames);
            failed = r == NULL;
            Py_XDECREF(r);
        }
    }
    Py_DECREF(seq);
    Py_ssize_t held = failed ? 0 : PyObject_Length(waiting);
    Py_DECREF(waiting);
    if (failed || held < 0) return -1;
    if (held || self->room_told != Py_None)
        return call_method_none((PyObject *)self, str_flush_output);
    return 0;
}

/* SwitchNode._finish: the service of the frame that made `outputs` ends */
static int ports_finish(PyObject *target, PyObject *outputs) {
    Ports *self = (Ports *)target;
    if (self->stale_finishes) {     /* the frame in service when the switch crashed */
        self->stale_finishes--;
        self->dropped_down++;
        return 0;
    }
    self->in_service = 0;
    if (ports_emit(self, outputs) < 0) return -1;
    if (self->waiting_count) {
        Waiting w = waiting_pop(self);
        int failed = ports_serve(self, w.port, w.frame);
        Py_DECREF(w.port);
        Py_DECREF(w.frame);
        return failed;
    }
    self->busy = 0;
    return 0;
}

static int Ports_init(Ports *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"loop", "name", "per_packet_s", "per_byte_s", "per_copy_s",
                            "queue_packets", NULL};
    PyObject *loop, *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!UdddL", names, &LoopType, &loop, &name,
                                     &self->per_packet, &self->per_byte, &self->per_copy,
                                     &self->queue_packets))
        return -1;
    Py_INCREF(loop); Py_XSETREF(self->loop, (Loop *)loop);
    Py_INCREF(name); Py_XSETREF(self->name, name);
    Py_INCREF(Py_None); Py_XSETREF(self->room_told, Py_None);
    self->max_port = -1;
    PyObject *egress = PyDict_New();
    if (egress == NULL) return -1;
    Py_XSETREF(self->egress, egress);
    return 0;
}

static int Ports_traverse(Ports *self, visitproc visit, void *arg) {
    Py_VISIT(self->loop); Py_VISIT(self->name); Py_VISIT(self->switch_); Py_VISIT(self->receive);
    Py_VISIT(self->queue_next_due); Py_VISIT(self->egress); Py_VISIT(self->output);
    Py_VISIT(self->recorder); Py_VISIT(self->drain_event); Py_VISIT(self->room_told);
    Py_VISIT(self->entry_receive); Py_VISIT(self->entry_acquire); Py_VISIT(self->entry_release);
    Py_VISIT(self->entry_engine); Py_VISIT(self->entry_fast); Py_VISIT(self->entry_queues);
    for (Py_ssize_t i = 0; i < self->waiting_count; i++) {
        Waiting *w = &self->waiting[(self->waiting_head + i) % self->waiting_capacity];
        Py_VISIT(w->port);
        Py_VISIT(w->frame);
    }
    return 0;
}

static int Ports_clear(Ports *self) {
    Py_CLEAR(self->loop); Py_CLEAR(self->name); Py_CLEAR(self->switch_); Py_CLEAR(self->receive);
    Py_CLEAR(self->queue_next_due); Py_CLEAR(self->egress); Py_CLEAR(self->output);
    Py_CLEAR(self->recorder); Py_CLEAR(self->drain_event); Py_CLEAR(self->room_told);
    entry_forget(self);
    waiting_discard(self);
    return 0;
}

static void Ports_dealloc(Ports *self) {
    PyObject_GC_UnTrack(self);
    Ports_clear(self);
    PyMem_Free(self->waiting);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Ports_receive(Ports *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "receive(port, frame)"); return NULL; }
    if (ports_receive(self, args[0], args[1]) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Ports_emit(Ports *self, PyObject *outputs) {
    if (ports_emit(self, outputs) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Ports_finish(Ports *self, PyObject *outputs) {
    if (ports_finish((PyObject *)self, outputs) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Ports_discard_waiting(Ports *self, PyObject *unused) {
    return PyLong_FromSsize_t(waiting_discard(self));
}

static PyObject *Ports_get_waiting(Ports *self, void *closure) {
    PyObject *list = PyList_New(self->waiting_count);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->waiting_count; i++) {
        Waiting *w = &self->waiting[(self->waiting_head + i) % self->waiting_capacity];
        PyObject *item = PyTuple_Pack(2, w->port, w->frame);
        if (item == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyMethodDef Ports_methods[] = {
    {"receive", (PyCFunction)(void (*)(void))Ports_receive, METH_FASTCALL, "receive(port, frame)"},
    {"_emit", (PyCFunction)Ports_emit, METH_O, "_emit(outputs): copies to their links"},
    {"_finish", (PyCFunction)Ports_finish, METH_O, "_finish(outputs): the service ends"},
    {"_discard_waiting", (PyCFunction)Ports_discard_waiting, METH_NOARGS,
     "forget the frames waiting for service (a crash); how many"},
    {NULL}
};

#define PORTS_MEMBER(name, field, type, flags) {name, type, offsetof(Ports, field), flags, NULL}
static PyMemberDef Ports_members[] = {
    PORTS_MEMBER("loop", loop, T_OBJECT, READONLY),
    PORTS_MEMBER("name", name, T_OBJECT, READONLY),
    PORTS_MEMBER("switch", switch_, T_OBJECT, 0),
    PORTS_MEMBER("_receive", receive, T_OBJECT_EX, 0),
    PORTS_MEMBER("_queue_next_due", queue_next_due, T_OBJECT_EX, 0),
    PORTS_MEMBER("egress", egress, T_OBJECT, READONLY),
    PORTS_MEMBER("output", output, T_OBJECT_EX, 0),
    PORTS_MEMBER("recorder", recorder, T_OBJECT, 0),
    PORTS_MEMBER("_drain_event", drain_event, T_OBJECT, 0),
    PORTS_MEMBER("_room_told", room_told, T_OBJECT, 0),
    PORTS_MEMBER("queue_packets", queue_packets, T_LONGLONG, READONLY),
    PORTS_MEMBER("_busy", busy, T_BOOL, 0),
    PORTS_MEMBER("down", down, T_BOOL, 0),
    PORTS_MEMBER("_stale_finishes", stale_finishes, T_LONGLONG, 0),
    PORTS_MEMBER("_in_service", in_service, T_LONGLONG, 0),
    PORTS_MEMBER("runtime_wall_s", runtime_wall_s, T_DOUBLE, 0),
    PORTS_MEMBER("time_runtime", time_runtime, T_BOOL, 0),
    PORTS_MEMBER("busy_s", busy_s, T_DOUBLE, 0),
    PORTS_MEMBER("received", received, T_LONGLONG, 0),
    PORTS_MEMBER("processed", processed, T_LONGLONG, 0),
    PORTS_MEMBER("emitted", emitted, T_LONGLONG, 0),
    PORTS_MEMBER("dropped_input_queue", dropped_input_queue, T_LONGLONG, 0),
    PORTS_MEMBER("unrouted", unrouted, T_LONGLONG, 0),
    PORTS_MEMBER("dropped_down", dropped_down, T_LONGLONG, 0),
    PORTS_MEMBER("direct_packets", direct_packets, T_LONGLONG, READONLY),
    {NULL}
};

static PyGetSetDef Ports_getset[] = {
    {"_waiting", (getter)Ports_get_waiting, NULL, "(port, frame) waiting for service", NULL},
    {NULL}
};

static PyTypeObject PortsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.SwitchPorts",
    .tp_basicsize = sizeof(Ports),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Ports_init,
    .tp_dealloc = (destructor)Ports_dealloc,
    .tp_traverse = (traverseproc)Ports_traverse,
    .tp_clear = (inquiry)Ports_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = Ports_methods,
    .tp_members = Ports_members,
    .tp_getset = Ports_getset,
    .tp_doc = "a switch's ports and service queue, in C (inaemu/sim/switch_node.py's contract)",
};

/* Ingress(node, port): the `deliver` of the link arriving at `port` */
typedef struct {
    PyObject_HEAD
    Ports *node;
    PyObject *port;
} Ingress;

static int ingress_deliver(PyObject *ingress, PyObject *frame) {
    Ingress *self = (Ingress *)ingress;
    return ports_receive(self->node, self->port, frame);
}

static PyObject *Ingress_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *node, *port;
    if (!PyArg_ParseTuple(args, "O!O:Ingress", &PortsType, &node, &port)) return NULL;
    Ingress *self = (Ingress *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(node);
    self->node = (Ports *)node;
    Py_INCREF(port);
    self->port = port;
    return (PyObject *)self;
}

static PyObject *Ingress_call(Ingress *self, PyObject *args, PyObject *kwds) {
    PyObject *frame;
    if (!PyArg_ParseTuple(args, "O:ingress", &frame)) return NULL;
    if (ports_receive(self->node, self->port, frame) < 0) return NULL;
    Py_RETURN_NONE;
}

static int Ingress_traverse(Ingress *self, visitproc visit, void *arg) {
    Py_VISIT(self->node);
    Py_VISIT(self->port);
    return 0;
}

static int Ingress_clear(Ingress *self) {
    Py_CLEAR(self->node);
    Py_CLEAR(self->port);
    return 0;
}

static void Ingress_dealloc(Ingress *self) {
    PyObject_GC_UnTrack(self);
    Ingress_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef Ingress_members[] = {
    {"node", T_OBJECT, offsetof(Ingress, node), READONLY, "the switch"},
    {"port", T_OBJECT, offsetof(Ingress, port), READONLY, "its port"},
    {NULL}
};

static PyTypeObject IngressType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.Ingress",
    .tp_basicsize = sizeof(Ingress),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Ingress_new,
    .tp_call = (ternaryfunc)Ingress_call,
    .tp_dealloc = (destructor)Ingress_dealloc,
    .tp_traverse = (traverseproc)Ingress_traverse,
    .tp_clear = (inquiry)Ingress_clear,
    .tp_free = PyObject_GC_Del,
    .tp_members = Ingress_members,
    .tp_doc = "Ingress(node, port)(frame): a frame arrives on the switch's port",
};

static int ports_module_init(void) {
    str_waiting = PyUnicode_InternFromString("waiting");
    str_flush_output = PyUnicode_InternFromString("_flush_output");
    str_schedule_drain = PyUnicode_InternFromString("_schedule_drain");
    str_arrived = PyUnicode_InternFromString("arrived");
    str_append = PyUnicode_InternFromString("append");
    str_writable = PyUnicode_InternFromString("writable");
    str_send = PyUnicode_InternFromString("send");
    str_direct_entry = PyUnicode_InternFromString("direct_entry");
    str_engine_attr = PyUnicode_InternFromString("_engine");
    str_active = PyUnicode_InternFromString("active");
    str_lock = PyUnicode_InternFromString("lock");
    str_acquire = PyUnicode_InternFromString("acquire");
    str_release = PyUnicode_InternFromString("release");
    str_packet_count = PyUnicode_InternFromString("packet_count");
    if (PyType_Ready(&PortsType) < 0) return -1;
    return PyType_Ready(&IngressType);
}
