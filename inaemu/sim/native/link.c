/* One direction of a link in C: the contract of inaemu/sim/link.py's LinkDirection.
 *
 * `send` does the whole per-frame work of the Python one (the drop-tail byte limit over the
 * frames not yet serialised, serialisation after `busy_until`, one loss draw per frame from the
 * direction's own Python `random.Random` in send order, the sender socket's charge) and posts
 * the frame's arrival on the C loop as a native entry: no Python call per frame inside the
 * link. The arrival counts the frame and hands it to `deliver`: a switch port's `Ingress`
 * (switchports.c) is entered in C, anything else is called. `on_left`, `on_departed`,
 * `on_lost`, the socket's wake-up and the trace lines are Python, as in link.py, in the same
 * order. The rare paths (attach_sender, wait_writable, the counters' object) are the Python
 * subclass's (inaemu/sim/native/link.py).
 */

#define FRAME_CHARGE_BYTES 709     /* link.py's FRAME_CHARGE_BYTES */

typedef struct { double at; long long size; } Stamp;

/* a FIFO of (time, size): the frames not yet serialised, or their charges to the socket */
typedef struct { Stamp *items; Py_ssize_t head, count, capacity; } StampFifo;

static int fifo_push(StampFifo *f, double at, long long size) {
    if (f->count == f->capacity) {
        Py_ssize_t capacity = f->capacity ? f->capacity * 2 : 64;
        Stamp *grown = PyMem_Malloc(capacity * sizeof(Stamp));
        if (grown == NULL) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < f->count; i++)
            grown[i] = f->items[(f->head + i) % f->capacity];
        PyMem_Free(f->items);
        f->items = grown;
        f->head = 0;
        f->capacity = capacity;
    }
    f->items[(f->head + f->count) % f->capacity] = (Stamp){at, size};
    f->count++;
    return 0;
}

static Stamp *fifo_at(StampFifo *f, Py_ssize_t i) { return &f->items[(f->head + i) % f->capacity]; }

static long long fifo_pop(StampFifo *f) {
    long long size = f->items[f->head].size;
    f->head = (f->head + 1) % f->capacity;
    f->count--;
    return size;
}

static PyObject *fifo_list(StampFifo *f) {
    PyObject *list = PyList_New(f->count);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < f->count; i++) {
        Stamp *s = fifo_at(f, i);
        PyObject *item = Py_BuildValue("(dL)", s->at, s->size);
        if (item == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

typedef struct {
    PyObject_HEAD
    /* what a frame's arrival reads, first: within the bytes the loop prefetches of the next
     * event's target (eventloop.c, NEXT_TARGET_BYTES) */
    PyObject *deliver;
    long long delivered_packets, delivered_bytes;
    Loop *loop;
    PyObject *src, *dst, *name;
    double seconds_per_byte, delay_s, loss;
    char up;
    PyObject *rng, *on_departed, *on_lost, *on_writable, *wake_event;
    long long queue_bytes;
    double busy_until;
    StampFifo backlog;          /* (serialised at, size) */
    long long backlog_bytes;
    long long send_buffer;      /* a sender socket's buffer; -1: none */
    long long charged;
    StampFifo charges;          /* (serialised at, charge) */
    long long sent_packets, sent_bytes, lost_packets, dropped_queue;
} Link;
_Static_assert(offsetof(Link, delivered_bytes) + sizeof(long long) <= NEXT_TARGET_BYTES,
               "a frame's arrival reads a Link past what the loop prefetches");

static PyTypeObject LinkType;
static PyTypeObject IngressType;                      /* switchports.c */
static int ingress_deliver(PyObject *ingress, PyObject *frame);   /* switchports.c */

static PyObject *str_random, *zlib_crc32;

static int is_set(PyObject *o) { return o != NULL && o != Py_None; }

static int Link_init(Link *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"loop", "src", "dst", "seconds_per_byte", "delay_s", "loss", "rng",
                            "deliver", "queue_bytes", NULL};
    PyObject *loop, *src, *dst, *rng, *deliver;
    double per_byte, delay, loss;
    long long queue_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!UUdddOOL", names, &LoopType, &loop, &src,
                                     &dst, &per_byte, &delay, &loss, &rng, &deliver,
                                     &queue_bytes))
        return -1;
    PyObject *name = PyUnicode_FromFormat("%U->%U", src, dst);
    if (name == NULL) return -1;
    Py_INCREF(loop); Py_XSETREF(self->loop, (Loop *)loop);
    Py_INCREF(src); Py_XSETREF(self->src, src);
    Py_INCREF(dst); Py_XSETREF(self->dst, dst);
    Py_XSETREF(self->name, name);
    Py_INCREF(rng); Py_XSETREF(self->rng, rng);
    Py_INCREF(deliver); Py_XSETREF(self->deliver, deliver);
    self->seconds_per_byte = per_byte;
    self->delay_s = delay;
    self->loss = loss;
    self->queue_bytes = queue_bytes;
    self->up = 1;
    self->send_buffer = -1;
    return 0;
}

static int Link_traverse(Link *self, visitproc visit, void *arg) {
    Py_VISIT(self->loop); Py_VISIT(self->src); Py_VISIT(self->dst); Py_VISIT(self->name);
    Py_VISIT(self->rng); Py_VISIT(self->deliver); Py_VISIT(self->on_departed);
    Py_VISIT(self->on_lost); Py_VISIT(self->on_writable); Py_VISIT(self->wake_event);
    return 0;
}

static int Link_clear(Link *self) {
    Py_CLEAR(self->loop); Py_CLEAR(self->src); Py_CLEAR(self->dst); Py_CLEAR(self->name);
    Py_CLEAR(self->rng); Py_CLEAR(self->deliver); Py_CLEAR(self->on_departed);
    Py_CLEAR(self->on_lost); Py_CLEAR(self->on_writable); Py_CLEAR(self->wake_event);
    return 0;
}

static void Link_dealloc(Link *self) {
    PyObject_GC_UnTrack(self);
    Link_clear(self);
    PyMem_Free(self->backlog.items);
    PyMem_Free(self->charges.items);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int call_one(PyObject *callable, PyObject *arg) {
    PyObject *r = PyObject_CallOneArg(callable, arg);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static void link_settle(Link *self, double now) {
    while (self->charges.count && fifo_at(&self->charges, 0)->at <= now)
        self->charged -= fifo_pop(&self->charges);
}

/* link.py's _drop: `why` is "lost" (at random, or down) or "queue-drop" */
static int link_drop(Link *self, PyObject *frame, Py_ssize_t size, const char *why) {
    if (why[0] == 'l') self->lost_packets++;
    else self->dropped_queue++;
    if (is_set(self->loop->trace)) {
        PyObject *line = PyUnicode_FromFormat("%U %s %zd", self->name, why, size);
        if (line == NULL) return -1;
        int failed = loop_record(self->loop, line);
        Py_DECREF(line);
        if (failed) return -1;
    }
    if (is_set(self->on_lost)) return call_one(self->on_lost, frame);
    return 0;
}

static int link_record_send(Link *self, PyObject *frame, Py_ssize_t size) {
    PyObject *crc = PyObject_CallOneArg(zlib_crc32, frame);
    if (crc == NULL) return -1;
    unsigned long value = PyLong_AsUnsignedLong(crc);
    Py_DECREF(crc);
    if (value == (unsigned long)-1 && PyErr_Occurred()) return -1;
    char text[16];
    snprintf(text, sizeof text, "%08lx", value);
    PyObject *line = PyUnicode_FromFormat("%U send %zd %s", self->name, size, text);
    if (line == NULL) return -1;
    int failed = loop_record(self->loop, line);
    Py_DECREF(line);
    return failed;
}

static int link_arrive(PyObject *target, PyObject *frame);

/* LinkDirection.send, step for step */
static int link_send(Link *self, PyObject *frame, PyObject *on_left) {
    Loop *loop = self->loop;
    double now = loop->now;
    Py_ssize_t size = frame_length(frame);
    if (size < 0) return -1;
    self->sent_packets++;
    self->sent_bytes += size;
    double per_byte = self->seconds_per_byte, leaves;
    if (per_byte) {
        while (self->backlog.count && fifo_at(&self->backlog, 0)->at <= now)
            self->backlog_bytes -= fifo_pop(&self->backlog);
        if (self->backlog_bytes + size > self->queue_bytes) {
            if (link_drop(self, frame, size, "queue-drop") < 0) return -1;
            if (is_set(on_left)) return loop_post(loop, now, on_left, frame);
            return 0;
        }
        double busy = self->busy_until;
        leaves = (busy > now ? busy : now) + (double)size * per_byte;
        self->busy_until = leaves;
        if (fifo_push(&self->backlog, leaves, size) < 0) return -1;
        self->backlog_bytes += size;
        if (self->send_buffer >= 0) {
            link_settle(self, now);
            long long charge = size + FRAME_CHARGE_BYTES;
            if (fifo_push(&self->charges, leaves, charge) < 0) return -1;
            self->charged += charge;
        }
    } else {
        double busy = self->busy_until;
        leaves = busy > now ? busy : now;
    }
    if (is_set(on_left) && loop_post(loop, leaves, on_left, frame) < 0) return -1;
    int lost = !self->up;
    if (!lost && self->loss) {
        PyObject *draw = PyObject_CallMethodNoArgs(self->rng, str_random);
        if (draw == NULL) return -1;
        double value = PyFloat_AsDouble(draw);
        Py_DECREF(draw);
        if (value == -1.0 && PyErr_Occurred()) return -1;
        lost = value < self->loss;
    }
    if (lost) return link_drop(self, frame, size, "lost");
    if (is_set(self->on_departed) && call_one(self->on_departed, frame) < 0) return -1;
    if (is_set(loop->trace) && link_record_send(self, frame, size) < 0) return -1;
    return loop_post_native(loop, leaves + self->delay_s, link_arrive, (PyObject *)self, frame);
}

static int link_arrive(PyObject *target, PyObject *frame) {
    Link *self = (Link *)target;
    Py_ssize_t size = frame_length(frame);
    if (size < 0) return -1;
    self->delivered_packets++;
    self->delivered_bytes += size;
    if (Py_IS_TYPE(self->deliver, &IngressType)) return ingress_deliver(self->deliver, frame);
    return call_one(self->deliver, frame);
}

/* LinkDirection.writable */
static int link_writable(Link *self) {
    if (self->send_buffer < 0 || !self->seconds_per_byte) return 1;
    link_settle(self, self->loop->now);
    return self->charged < self->send_buffer;
}

/* send(frame, on_left=None) */
static PyObject *Link_send(Link *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "send(frame, on_left=None)");
        return NULL;
    }
    if (link_send(self, args[0], nargs == 2 ? args[1] : Py_None) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Link_writable(Link *self, PyObject *unused) {
    return PyBool_FromLong(link_writable(self));
}

static PyObject *Link_settle(Link *self, PyObject *now) {
    double t = PyFloat_AsDouble(now);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    link_settle(self, t);
    Py_RETURN_NONE;
}

static PyObject *Link_arrive(Link *self, PyObject *frame) {
    if (link_arrive((PyObject *)self, frame) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Link_get_backlog(Link *self, void *closure) { return fifo_list(&self->backlog); }
static PyObject *Link_get_charges(Link *self, void *closure) { return fifo_list(&self->charges); }

static PyMethodDef Link_methods[] = {
    {"send", (PyCFunction)(void (*)(void))Link_send, METH_FASTCALL, "send(frame, on_left=None)"},
    {"writable", (PyCFunction)Link_writable, METH_NOARGS,
     "whether the sender's socket takes a frame now"},
    {"_settle", (PyCFunction)Link_settle, METH_O,
     "_settle(now): charges of frames serialised by now"},
    {"_arrive", (PyCFunction)Link_arrive, METH_O, "_arrive(frame): the frame reaches the far end"},
    {NULL}
};

#define LINK_MEMBER(field, type, flags, doc) {#field, type, offsetof(Link, field), flags, doc}
static PyMemberDef Link_members[] = {
    LINK_MEMBER(loop, T_OBJECT, READONLY, "the event loop"),
    LINK_MEMBER(src, T_OBJECT, READONLY, "node:port it leaves"),
    LINK_MEMBER(dst, T_OBJECT, READONLY, "node:port it reaches"),
    LINK_MEMBER(name, T_OBJECT, READONLY, "src->dst"),
    LINK_MEMBER(seconds_per_byte, T_DOUBLE, 0, "serialisation time of a byte (0: unshaped)"),
    LINK_MEMBER(delay_s, T_DOUBLE, 0, "propagation delay"),
    LINK_MEMBER(loss, T_DOUBLE, 0, "loss probability"),
    LINK_MEMBER(up, T_BOOL, 0, "False: loses everything"),
    LINK_MEMBER(rng, T_OBJECT_EX, 0, "this direction's random.Random"),
    LINK_MEMBER(deliver, T_OBJECT_EX, 0, "deliver(frame) at the far end"),
    LINK_MEMBER(on_departed, T_OBJECT, 0, "capture hook: a frame that will be delivered"),
    LINK_MEMBER(on_lost, T_OBJECT, 0, "capture hook: a frame lost or dropped"),
    {"_on_writable", T_OBJECT, offsetof(Link, on_writable), 0, "the sender socket's wake-up"},
    {"_wake_event", T_OBJECT, offsetof(Link, wake_event), 0, "the pending wake-up Event"},
    LINK_MEMBER(queue_bytes, T_LONGLONG, 0, "drop-tail byte limit"),
    {"_busy_until", T_DOUBLE, offsetof(Link, busy_until), READONLY, "when the wire is free"},
    {"_send_buffer_bytes", T_LONGLONG, offsetof(Link, send_buffer), 0,
     "the sender socket's buffer (-1: no socket)"},
    {"_charged", T_LONGLONG, offsetof(Link, charged), READONLY, "bytes charged to the socket now"},
    LINK_MEMBER(sent_packets, T_LONGLONG, READONLY, NULL),
    LINK_MEMBER(sent_bytes, T_LONGLONG, READONLY, NULL),
    LINK_MEMBER(delivered_packets, T_LONGLONG, READONLY, NULL),
    LINK_MEMBER(delivered_bytes, T_LONGLONG, READONLY, NULL),
    LINK_MEMBER(lost_packets, T_LONGLONG, READONLY, NULL),
    LINK_MEMBER(dropped_queue, T_LONGLONG, READONLY, NULL),
    {NULL}
};

static PyGetSetDef Link_getset[] = {
    {"_backlog", (getter)Link_get_backlog, NULL, "(serialised at, size) not yet serialised", NULL},
    {"_charges", (getter)Link_get_charges, NULL, "(serialised at, charge) on the socket", NULL},
    {NULL}
};

static PyTypeObject LinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.Link",
    .tp_basicsize = sizeof(Link),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Link_init,
    .tp_dealloc = (destructor)Link_dealloc,
    .tp_traverse = (traverseproc)Link_traverse,
    .tp_clear = (inquiry)Link_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = Link_methods,
    .tp_members = Link_members,
    .tp_getset = Link_getset,
    .tp_doc = "one direction of a link, in C (inaemu/sim/link.py's contract)",
};

static int link_module_init(void) {
    str_random = PyUnicode_InternFromString("random");
    PyObject *zlib = PyImport_ImportModule("zlib");
    if (zlib == NULL) return -1;
    zlib_crc32 = PyObject_GetAttrString(zlib, "crc32");
    Py_DECREF(zlib);
    if (zlib_crc32 == NULL || str_random == NULL) return -1;
    return PyType_Ready(&LinkType);
}
