/* A host's interface in C: inaemu/sim/host_node.py's HostNode.receive and send_frame.
 *
 * `receive` counts the frame, parses it (frames.c), ignores what is not addressed to the
 * host's IPv4 address or has no listener, and calls the listener of (protocol, port) with the
 * Datagram, as the Python one does; `send_frame` counts and hands the frame to the uplink (a
 * C link directly). The counters are a `HostCounts`, whose fields the workers may add to as
 * they do to host_node.py's HostCounters. Timers, listeners and kill are the Python
 * HostNode's (the subclass in inaemu/sim/native/host.py).
 */

typedef struct {
    PyObject_HEAD
    long long frames_sent, bytes_sent, frames_received, bytes_received, ignored;
} HostCounts;

#define COUNT_MEMBER(field) {#field, T_LONGLONG, offsetof(HostCounts, field), 0, NULL}
static PyMemberDef HostCounts_members[] = {
    COUNT_MEMBER(frames_sent), COUNT_MEMBER(bytes_sent), COUNT_MEMBER(frames_received),
    COUNT_MEMBER(bytes_received), COUNT_MEMBER(ignored), {NULL}
};

static PyObject *HostCounts_as_dict(HostCounts *self, PyObject *unused) {
    return Py_BuildValue("{sLsLsLsLsL}", "frames_sent", self->frames_sent, "bytes_sent",
                         self->bytes_sent, "frames_received", self->frames_received,
                         "bytes_received", self->bytes_received, "ignored", self->ignored);
}

static PyMethodDef HostCounts_methods[] = {
    {"as_dict", (PyCFunction)HostCounts_as_dict, METH_NOARGS, "the counts by name"},
    {NULL}
};

static PyTypeObject HostCountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.HostCounts",
    .tp_basicsize = sizeof(HostCounts),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_members = HostCounts_members,
    .tp_methods = HostCounts_methods,
    .tp_doc = "frame-level traffic of a host (host_node.py's HostCounters)",
};

typedef struct {
    PyObject_HEAD
    PyObject *ip;           /* the host's IPv4 address (4 bytes) */
    PyObject *handlers;     /* (proto, port) -> handler(datagram) */
    PyObject *uplink;
    HostCounts *counters;
    char alive;
    /* HostNode's `loop` and `_ident` (set by its __init__): fields of this struct, not of the
     * subclass's instance dict, so the C parts read them at their offsets (attrs.c) */
    PyObject *loop, *ident;
    /* the last two (proto, port)s' handlers, borrowed: valid while `handlers` is the same
     * dict at the same PEP 509 version (then the dict still holds them); two, for a ring
     * rank's data and ACK ports, whose frames alternate. CPython 3.14 has no version. */
    PyObject *memo_dict;
    uint64_t memo_version;
    struct { long proto, port; PyObject *handler; } memo[2];
    int memo_next;
} HostPort;

static int HostPort_init(HostPort *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"ip", NULL};
    PyObject *ip;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", names, &ip)) return -1;
    if (exact_bytes(ip, 4, "the host's IPv4 address") < 0) return -1;
    PyObject *handlers = PyDict_New();
    if (handlers == NULL) return -1;
    HostCounts *counters = PyObject_New(HostCounts, &HostCountsType);
    if (counters == NULL) { Py_DECREF(handlers); return -1; }
    counters->frames_sent = counters->bytes_sent = counters->frames_received = 0;
    counters->bytes_received = counters->ignored = 0;
    Py_INCREF(ip); Py_XSETREF(self->ip, ip);
    Py_XSETREF(self->handlers, handlers);
    self->memo_dict = NULL;
    Py_XSETREF(self->counters, counters);
    Py_INCREF(Py_None); Py_XSETREF(self->uplink, Py_None);
    self->alive = 1;
    return 0;
}

static int HostPort_traverse(HostPort *self, visitproc visit, void *arg) {
    Py_VISIT(self->ip); Py_VISIT(self->handlers); Py_VISIT(self->uplink);
    Py_VISIT(self->counters); Py_VISIT(self->loop); Py_VISIT(self->ident);
    return 0;
}

static int HostPort_clear(HostPort *self) {
    Py_CLEAR(self->ip); Py_CLEAR(self->handlers); Py_CLEAR(self->uplink);
    Py_CLEAR(self->counters); Py_CLEAR(self->loop); Py_CLEAR(self->ident);
    return 0;
}

static void HostPort_dealloc(HostPort *self) {
    PyObject_GC_UnTrack(self);
    HostPort_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* d[i] (a new reference): parse_frame's Datagram read as the tuple it is (indexing a tuple
 * subclass through the sequence protocol calls its `__getitem__` wrapper, ~700 instructions
 * where this is one load); the Python parse's Datagram may be any sequence, indexed as one */
static PyObject *datagram_item(PyObject *d, Py_ssize_t i) {
    if ((PyObject *)Py_TYPE(d) == datagram_class && i < PyTuple_GET_SIZE(d))
        return Py_NewRef(PyTuple_GET_ITEM(d, i));
    return PySequence_GetItem(d, i);
}

/* (proto, dport) as C longs when both are exact ints that fit: 1, else 0 (no memo) */
static int port_key(PyObject *proto, PyObject *dport, long *p, long *port) {
    if (!PyLong_CheckExact(proto) || !PyLong_CheckExact(dport)) return 0;
    *p = PyLong_AsLong(proto);
    *port = PyLong_AsLong(dport);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    return 1;
}

/* whether the memo's dict is still `handlers` at the version it was taken at */
static int memo_valid(HostPort *self) {
    uint64_t version;
    return self->memo_dict != NULL && self->memo_dict == self->handlers
        && dict_version(self->handlers, &version) && version == self->memo_version;
}

/* the remembered handler of (p, port) (borrowed), or NULL */
static PyObject *memo_find(HostPort *self, long p, long port) {
    if (!memo_valid(self)) return NULL;
    for (int i = 0; i < 2; i++)
        if (self->memo[i].handler != NULL && self->memo[i].proto == p
                && self->memo[i].port == port)
            return self->memo[i].handler;
    return NULL;
}

/* the remembered handler of (proto, dport) when still valid (borrowed), else NULL */
static PyObject *handler_memo(HostPort *self, PyObject *proto, PyObject *dport) {
    long p, port;
    if (!memo_valid(self) || !port_key(proto, dport, &p, &port)) return NULL;
    return memo_find(self, p, port);
}

/* remember (proto, dport)'s handler, just looked up in the handlers' dict (borrowed); a dict
 * changed since the memo was taken forgets both entries */
static void handler_remember(HostPort *self, PyObject *proto, PyObject *dport,
                             PyObject *handler) {
    long p, port;
    uint64_t version;
    if (!dict_version(self->handlers, &version) || !port_key(proto, dport, &p, &port)) return;
    if (!memo_valid(self)) {
        self->memo[0].handler = self->memo[1].handler = NULL;
        self->memo_next = 0;
        self->memo_dict = self->handlers;
        self->memo_version = version;
    }
    int i = self->memo_next;
    self->memo[i].proto = p;
    self->memo[i].port = port;
    self->memo[i].handler = handler;
    self->memo_next = 1 - i;
}

/* (inaworker.c, after this file) an INA worker's listener, and its entry for a UDP frame read
 * in place */
static PyTypeObject InaFastType;
static int ina_fast_deliver_view(PyObject *self, PyObject *frame, const FrameView *v);
/* (ringpath.c, after this file) a ring rank's listeners, and their entry for a TCP frame */
static int ring_path_reads_in_place(PyObject *handler);
static PyObject *ring_path_receive_frame(PyObject *handler, PyObject *frame, const FrameView *v);

/* A frame for this host whose remembered listener is C that reads a frame in place (an INA
 * worker's UDP path, a ring rank's TCP data or ACK path): given the frame itself, so the
 * common RESULT or segment makes no Datagram and no payload copy. 1: delivered; 0: anything
 * else (the general path below takes it, nothing done); -1. The same checks in the same order
 * as the general path: for this host, then the listener. */
static int receive_in_place(HostPort *self, PyObject *frame) {
    FrameView v;
    if (!PyBytes_CheckExact(frame) || !frame_view(frame, &v)
            || !PyBytes_CheckExact(self->ip) || PyBytes_GET_SIZE(self->ip) != 4)
        return 0;
    PyObject *handler = memo_find(self, (long)v.proto, (long)be16(v.f + v.l4 + 2));
    if (handler == NULL) return 0;
    int ina = v.proto == 17 && Py_TYPE(handler) == &InaFastType;
    if (!ina && !(v.proto == 6 && ring_path_reads_in_place(handler))) return 0;
    if (memcmp(v.f + 30, PyBytes_AS_STRING(self->ip), 4) != 0) {
        self->counters->ignored++;      /* (the general path's verdict, without its objects) */
        return 1;
    }
    Py_INCREF(handler);                 /* it may unlisten itself */
    int r;
    if (ina) {
        r = ina_fast_deliver_view(handler, frame, &v);
    } else {
        PyObject *result = ring_path_receive_frame(handler, frame, &v);
        r = result == NULL ? -1 : 0;
        Py_XDECREF(result);
    }
    Py_DECREF(handler);
    return r < 0 ? -1 : 1;
}

/* HostNode.receive */
static PyObject *HostPort_receive(HostPort *self, PyObject *frame) {
    if (!self->alive) Py_RETURN_NONE;
    Py_ssize_t size = frame_length(frame);
    if (size < 0) return NULL;
    self->counters->frames_received++;
    self->counters->bytes_received += size;
    int in_place = receive_in_place(self, frame);
    if (in_place) {
        if (in_place < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *d = parse_frame(frame);
    if (d == NULL) return NULL;
    if (d == Py_None) {
        Py_DECREF(d);
        self->counters->ignored++;
        Py_RETURN_NONE;
    }
    PyObject *dst = datagram_item(d, 2);
    if (dst == NULL) { Py_DECREF(d); return NULL; }
    int mine = PyObject_RichCompareBool(dst, self->ip, Py_EQ);
    Py_DECREF(dst);
    if (mine <= 0) {
        Py_DECREF(d);
        if (mine < 0) return NULL;
        self->counters->ignored++;
        Py_RETURN_NONE;
    }
    PyObject *proto = datagram_item(d, 0), *dport = datagram_item(d, 4);
    if (proto == NULL || dport == NULL) {
        Py_XDECREF(proto); Py_XDECREF(dport); Py_DECREF(d);
        return NULL;
    }
    PyObject *handler = handler_memo(self, proto, dport);
    if (handler == NULL) {
        PyObject *key = PyTuple_Pack(2, proto, dport);
        if (key == NULL) { Py_DECREF(proto); Py_DECREF(dport); Py_DECREF(d); return NULL; }
        handler = PyDict_GetItemWithError(self->handlers, key);
        Py_DECREF(key);
        if (handler != NULL) handler_remember(self, proto, dport, handler);
    }
    Py_DECREF(proto);
    Py_DECREF(dport);
    if (handler == NULL) {
        Py_DECREF(d);
        if (PyErr_Occurred()) return NULL;
        self->counters->ignored++;
        Py_RETURN_NONE;
    }
    Py_INCREF(handler);     /* the handler may unlisten itself */
    PyObject *r = PyObject_CallOneArg(handler, d);
    Py_DECREF(handler);
    Py_DECREF(d);
    if (r == NULL) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* send_frame's work, also the INA fast path's (inaworker.c): 0, or -1 with an exception */
static int host_port_send(HostPort *self, PyObject *frame, PyObject *on_left) {
    if (!self->alive || self->uplink == Py_None) return 0;
    Py_ssize_t size = frame_length(frame);
    if (size < 0) return -1;
    self->counters->frames_sent++;
    self->counters->bytes_sent += size;
    if (PyObject_TypeCheck(self->uplink, &LinkType))
        return link_send((Link *)self->uplink, frame, on_left);
    PyObject *r = PyObject_CallMethodObjArgs(self->uplink, str_send, frame, on_left, NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* HostNode.send_frame(frame, on_left=None) */
static PyObject *HostPort_send_frame(HostPort *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "send_frame(frame, on_left=None)");
        return NULL;
    }
    if (host_port_send(self, args[0], nargs == 2 ? args[1] : Py_None) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef HostPort_methods[] = {
    {"receive", (PyCFunction)HostPort_receive, METH_O, "the deliver of the link arriving here"},
    {"send_frame", (PyCFunction)(void (*)(void))HostPort_send_frame, METH_FASTCALL,
     "send_frame(frame, on_left=None): to the uplink's queue"},
    {NULL}
};

static PyMemberDef HostPort_members[] = {
    {"handlers", T_OBJECT, offsetof(HostPort, handlers), READONLY, "(proto, port) -> handler"},
    {"uplink", T_OBJECT, offsetof(HostPort, uplink), 0, "the link towards the switch"},
    {"counters", T_OBJECT, offsetof(HostPort, counters), READONLY, "a HostCounts"},
    {"alive", T_BOOL, offsetof(HostPort, alive), 0, "False once killed"},
    {"loop", T_OBJECT_EX, offsetof(HostPort, loop), 0, "the event loop (HostNode's)"},
    {"_ident", T_OBJECT_EX, offsetof(HostPort, ident), 0, "the last IPv4 ident (HostNode's)"},
    {NULL}
};

static PyTypeObject HostPortType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.HostPort",
    .tp_basicsize = sizeof(HostPort),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)HostPort_init,
    .tp_dealloc = (destructor)HostPort_dealloc,
    .tp_traverse = (traverseproc)HostPort_traverse,
    .tp_clear = (inquiry)HostPort_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = HostPort_methods,
    .tp_members = HostPort_members,
    .tp_doc = "a host's interface, in C (inaemu/sim/host_node.py's contract)",
};

static int host_module_init(void) {
    if (PyType_Ready(&HostCountsType) < 0) return -1;
    return PyType_Ready(&HostPortType);
}
