/* The simulator's event loop in C: the same contract as inaemu/sim/events.py's EventLoop.
 *
 * A 4-ary heap of (time, sequence, kind, two objects) entries ordered by (time, sequence),
 * so events at equal times run in the order they were scheduled, as the Python heap of tuples
 * orders them. `at` makes a Python `Event` (the class is given to the constructor) that
 * `cancel()` empties, and the entry holds only that event; `post` holds the action and its one
 * argument and makes no object. `run(until=, done=)` returns "done", "idle" or "time limit"
 * exactly when the Python loop does. The other C parts of the core (link.c, switchports.c)
 * schedule their per-frame events with `loop_post_native`: an entry that names a C function
 * and its target, run without a Python call, in the same (time, sequence) order as any other.
 * Built and loaded by inaemu/sim/native/__init__.py (this file first, then the other parts,
 * then module.c) through the switch runtime's C build route
 * (p4switch/runtime/cgen/nativebuild.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* a C action: `target` and `arg` as posted; 0, or -1 with a Python exception set */
typedef int (*NativeAction)(PyObject *target, PyObject *arg);

/* An entry is 32 bytes, so that the heap's moves are two 16-byte ones: `order` is the
 * sequence number shifted left past the entry's kind (at, post, or the index of a native
 * action among those the loop has been given), so (time, order) orders as (time, sequence). */
typedef struct {
    double time;
    unsigned long long order;
    PyObject *a;        /* at: the Event; post: the action; native: its target */
    PyObject *b;        /* post and native: the one argument; at: NULL */
} Entry;

#define KIND_BITS 4
#define KIND_AT 0
#define KIND_POST 1
#define KIND_NATIVE 2         /* and up: native_actions[kind - KIND_NATIVE] */
#define NATIVE_ACTIONS ((1 << KIND_BITS) - KIND_NATIVE)
static NativeAction native_actions[NATIVE_ACTIONS];

static inline unsigned kind_of(const Entry *e) {
    return (unsigned)(e->order & ((1u << KIND_BITS) - 1));
}

/* the kind that stands for native action `action` (registered at its first post), or -1 with
 * an error when more distinct actions than the kinds hold were posted (a bug in the C) */
static int native_kind(NativeAction action) {
    for (int i = 0; i < NATIVE_ACTIONS; i++) {
        if (native_actions[i] == action) return KIND_NATIVE + i;
        if (native_actions[i] == NULL) {
            native_actions[i] = action;
            return KIND_NATIVE + i;
        }
    }
    PyErr_SetString(PyExc_SystemError, "the event loop holds no more kinds of native action");
    return -1;
}

typedef struct {
    PyObject_HEAD
    double now;
    long long events_run;
    PyObject *trace;
    PyObject *event_class;
    Entry *heap;
    Py_ssize_t size, capacity;
    unsigned long long seq;
    int stopped;
    /* the event class is events.Event itself: its slots (time, action, args) at these
     * offsets, so that `at` fills a new one and `run` reads it without attribute calls */
    int event_slots;
    Py_ssize_t event_time, event_action, event_args;
} Loop;

static PyObject *str_action, *str_args, *str_done, *str_idle, *str_limit;

/* the offset of `cls`'s plain object slot `name` (a T_OBJECT_EX member), or -1 */
static Py_ssize_t object_slot(PyTypeObject *cls, const char *name) {
    PyObject *descr = PyObject_GetAttrString((PyObject *)cls, name);
    if (descr == NULL) { PyErr_Clear(); return -1; }
    Py_ssize_t offset = -1;
    if (Py_TYPE(descr) == &PyMemberDescr_Type) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) offset = member->offset;
    }
    Py_DECREF(descr);
    return offset;
}

/* whether `cls` is inaemu.sim.events.Event, whose __init__ only sets its three slots (then
 * the loop may make and read its events at the slots' offsets) */
static int is_events_event(Loop *self, PyObject *cls) {
    PyObject *events = PyImport_ImportModule("inaemu.sim.events");
    if (events == NULL) return -1;
    PyObject *event = PyObject_GetAttrString(events, "Event");
    Py_DECREF(events);
    if (event == NULL) return -1;
    int same = event == cls && PyType_Check(cls)
               && ((PyTypeObject *)cls)->tp_dictoffset == 0;
    Py_DECREF(event);
    if (same) {
        self->event_time = object_slot((PyTypeObject *)cls, "time");
        self->event_action = object_slot((PyTypeObject *)cls, "action");
        self->event_args = object_slot((PyTypeObject *)cls, "args");
        same = self->event_time >= 0 && self->event_action >= 0 && self->event_args >= 0;
    }
    return same;
}

#define EVENT_SLOT(self, event, field) \
    (*(PyObject **)((char *)(event) + (self)->event_##field))

/* `event`'s action (a new reference: None when cancelled), or NULL: read at its slot for
   events.Event, by name for anything else */
static PyObject *event_action(Loop *self, PyObject *event) {
    if (self->event_slots && Py_TYPE(event) == (PyTypeObject *)self->event_class
            && EVENT_SLOT(self, event, action) != NULL)
        return Py_NewRef(EVENT_SLOT(self, event, action));
    return PyObject_GetAttr(event, str_action);
}

/* `event`'s action and args (new references; the action None when cancelled, and then no
   args), or -1 */
static int event_call(Loop *self, PyObject *event, PyObject **action, PyObject **args) {
    *args = NULL;
    if ((*action = event_action(self, event)) == NULL) return -1;
    if (*action == Py_None) return 0;
    if (self->event_slots && Py_TYPE(event) == (PyTypeObject *)self->event_class
            && EVENT_SLOT(self, event, args) != NULL)
        *args = Py_NewRef(EVENT_SLOT(self, event, args));
    else if ((*args = PyObject_GetAttr(event, str_args)) == NULL)
        Py_CLEAR(*action);
    return *action == NULL ? -1 : 0;
}

/* a new Event(time, action, rest): filled at its slots when it is events.Event */
static PyObject *new_event(Loop *self, double time, PyObject *action, PyObject *rest) {
    if (!self->event_slots)
        return PyObject_CallFunction(self->event_class, "dOO", time, action, rest);
    PyTypeObject *cls = (PyTypeObject *)self->event_class;
    PyObject *when = PyFloat_FromDouble(time);
    if (when == NULL) return NULL;
    PyObject *event = cls->tp_alloc(cls, 0);
    if (event == NULL) { Py_DECREF(when); return NULL; }
    EVENT_SLOT(self, event, time) = when;
    EVENT_SLOT(self, event, action) = Py_NewRef(action);
    EVENT_SLOT(self, event, args) = Py_NewRef(rest);
    return event;
}

/* Entries order by (time, order) as one unsigned 128-bit number: a time is never negative,
 * -0.0 or a NaN here (`checked_time`), and the bits of a non-negative double order as the
 * double does, so one compare without a branch does what two compares of doubles and a tie's
 * third did, each a branch the heap's sifts mispredict about half the time. */
#if defined(__SIZEOF_INT128__)
static inline unsigned __int128 entry_key(const Entry *e) {
    unsigned long long bits;
    memcpy(&bits, &e->time, sizeof bits);
    return ((unsigned __int128)bits << 64) | e->order;
}
static inline int before(const Entry *a, const Entry *b) {
    return entry_key(a) < entry_key(b);
}
#else
static inline int before(const Entry *a, const Entry *b) {
    return a->time < b->time || (a->time == b->time && a->order < b->order);
}
#endif

/* `time` as the heap keeps it: not earlier than `now` (as both loops clamp it) and +0.0 for
 * -0.0; -1 with ValueError for a NaN, which has no place in the order */
static inline int checked_time(double now, double *time) {
    double t = *time;
    if (t != t) {
        PyErr_SetString(PyExc_ValueError, "an event's time must be a number, got nan");
        return -1;
    }
    *time = (t < now ? now : t) + 0.0;
    return 0;
}

/* The heap is 4-ary: entry i's children are 4i+1 .. 4i+4, its parent (i-1)/4. A pop walks
 * half the levels of a binary heap's, each level's four children side by side (two or three
 * cache lines) and compared as two independent pairs and then their winners, so a pop waits
 * on half as many dependent loads; between events the simulation's frames push the heap's
 * lower levels out of the first-level cache, where those loads cost most (session 55: the
 * loop's own share of a ring run's samples fell by a fifth; in cache, a pop and a push of
 * ~800 entries take ~39 ns against ~42). Keys are unique (the sequence), so any heap gives
 * the entries out in the same order. */
#define HEAP_ARITY_BITS 2

static inline Py_ssize_t heap_parent(Py_ssize_t i) { return (i - 1) >> HEAP_ARITY_BITS; }
static inline Py_ssize_t heap_first_child(Py_ssize_t i) { return (i << HEAP_ARITY_BITS) + 1; }

static int push(Loop *self, Entry entry) {
    if (self->size == self->capacity) {
        Py_ssize_t capacity = self->capacity ? self->capacity * 2 : 1024;
        Entry *grown = PyMem_Realloc(self->heap, capacity * sizeof(Entry));
        if (grown == NULL) { PyErr_NoMemory(); return -1; }
        self->heap = grown;
        self->capacity = capacity;
    }
    Py_ssize_t i = self->size++;
    while (i > 0) {
        Py_ssize_t parent = heap_parent(i);
        if (!before(&entry, &self->heap[parent])) break;
        self->heap[i] = self->heap[parent];
        i = parent;
    }
    self->heap[i] = entry;
    return 0;
}

/* The first entry out. The hole it leaves goes down to a leaf, the earliest child moving up
 * at each level (the compares made conditional moves), and the last entry then climbs from
 * there: it came from the bottom, so it seldom climbs far. That is fewer compares than
 * sifting the last entry down from the top. */
static Entry pop(Loop *self) {
    Entry *heap = self->heap;
    Entry top = heap[0];
    Py_ssize_t n = --self->size;
    if (n == 0) return top;
    Entry last = heap[n];
    Py_ssize_t i = 0, c;
    while ((c = heap_first_child(i)) + 3 < n) {      /* all four children are in the heap */
        Py_ssize_t x = c + before(&heap[c + 1], &heap[c]);
        Py_ssize_t y = c + 2 + before(&heap[c + 3], &heap[c + 2]);
        Py_ssize_t m = before(&heap[y], &heap[x]) ? y : x;
        heap[i] = heap[m];
        i = m;
    }
    if (c < n) {                     /* one to three children, the last of the heap */
        Py_ssize_t m = c;
        for (Py_ssize_t j = c + 1; j < n; j++)
            if (before(&heap[j], &heap[m])) m = j;
        heap[i] = heap[m];
        i = m;
    }
    while (i > 0) {
        Py_ssize_t parent = heap_parent(i);
        if (!before(&last, &heap[parent])) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = last;
    return top;
}

static void clear_entry(Entry *e) {
    Py_XDECREF(e->a);
    Py_XDECREF(e->b);
}

/* ---- spare bytes -------------------------------------------------------------------------
 * A frame or a chunk's payload is a bytes object of ~1 KB, past pymalloc's small objects:
 * each new one is a malloc and its end a free, whose bins (not the small-object pools) cost
 * several hundred instructions and, with a thousand hosts' frames in flight, cache misses.
 * One the native parts let go of when nothing else holds it is kept here (`bytes_let_go`:
 * the loop's frame after a link's arrival, the receiver having read it; inasession.c's
 * payload of a Flight it recycles), and the next frame or payload of that size is written
 * into it (`bytes_of_size`: frames.c, inasession.c, and a switch's generated deparser, to
 * which the module gives it as the capsule `frame_source`): an object nothing else holds
 * cannot be told from a new one (its cached hash is reset). A few sizes (a data frame and a
 * RESULT are the same size), a few dozen of each. Only under the GIL (the switches' threads
 * hold it too); not for a layout this does not know (3.15 on). */
#define SPARE_SIZES 4
#define SPARE_EACH 32
typedef struct { Py_ssize_t size; int count; PyObject *items[SPARE_EACH]; } SpareBytes;
static SpareBytes spare_bytes[SPARE_SIZES];
static int spare_victim;            /* the size class a new size takes when none is empty */
static long long spare_reused;      /* objects written into a spare one (tests) */

#if PY_VERSION_HEX < 0x030F0000 && !defined(Py_GIL_DISABLED)
#define BYTES_REUSED 1
#else
#define BYTES_REUSED 0
#endif

/* a frame's length: a bytes object's own, else its len() (-1 with an error) */
static inline Py_ssize_t frame_length(PyObject *frame) {
    return PyBytes_CheckExact(frame) ? PyBytes_GET_SIZE(frame) : PyObject_Length(frame);
}

/* a reference to `o` let go of: `o` kept when it was the last one to an exact bytes object of
 * 256 bytes or more. A size with no class takes an empty one, else the classes in turn (their
 * objects freed), so that the sizes kept follow the traffic. */
static void bytes_let_go(PyObject *o) {
    if (!BYTES_REUSED || o == NULL || !PyBytes_CheckExact(o) || Py_REFCNT(o) != 1
            || PyBytes_GET_SIZE(o) < 256) {
        Py_XDECREF(o);
        return;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(o);
    SpareBytes *class = NULL;
    for (int i = 0; i < SPARE_SIZES; i++) {
        SpareBytes *c = &spare_bytes[i];
        if (c->count && c->size == size) { class = c; break; }
        if (!c->count && class == NULL) class = c;
    }
    if (class == NULL) {                    /* every class holds another size */
        class = &spare_bytes[spare_victim];
        spare_victim = (spare_victim + 1) % SPARE_SIZES;
        while (class->count) Py_DECREF(class->items[--class->count]);
    }
    if (class->count == SPARE_EACH) { Py_DECREF(o); return; }
    class->size = size;
    class->items[class->count++] = o;       /* (the reference moves here) */
}

/* a bytes object of `size` bytes to fill (a new reference): a spare one, else a new one */
static PyObject *bytes_of_size(Py_ssize_t size) {
#if BYTES_REUSED
    for (int i = 0; i < SPARE_SIZES; i++) {
        SpareBytes *c = &spare_bytes[i];
        if (c->count && c->size == size) {
            PyObject *o = c->items[--c->count];
            spare_reused++;
            _Py_COMP_DIAG_PUSH
            _Py_COMP_DIAG_IGNORE_DEPR_DECLS
            ((PyBytesObject *)o)->ob_shash = -1;
            _Py_COMP_DIAG_POP
            return o;
        }
    }
#endif
    return PyBytes_FromStringAndSize(NULL, size);
}

static int Loop_init(Loop *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"trace", "event_class", NULL};
    PyObject *trace = Py_None, *event_class = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", names, &trace, &event_class)) return -1;
    Py_INCREF(trace);
    Py_XSETREF(self->trace, trace);
    Py_INCREF(event_class);
    Py_XSETREF(self->event_class, event_class);
    int slots = is_events_event(self, event_class);
    if (slots < 0) return -1;
    self->event_slots = slots;
    return 0;
}

/* the heap's entries hold the nodes that hold the loop: the collector must see them */
static int Loop_traverse(Loop *self, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < self->size; i++) {
        Py_VISIT(self->heap[i].a);
        Py_VISIT(self->heap[i].b);
    }
    Py_VISIT(self->trace);
    Py_VISIT(self->event_class);
    return 0;
}

static int Loop_clear(Loop *self) {
    Py_ssize_t size = self->size;
    self->size = 0;
    for (Py_ssize_t i = 0; i < size; i++) clear_entry(&self->heap[i]);
    Py_CLEAR(self->trace);
    Py_CLEAR(self->event_class);
    return 0;
}

static void Loop_dealloc(Loop *self) {
    PyObject_GC_UnTrack(self);
    Loop_clear(self);
    PyMem_Free(self->heap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Loop_clock(Loop *self, PyObject *unused) {
    return PyFloat_FromDouble(self->now);
}

static PyObject *schedule_at(Loop *self, double time, PyObject *action, PyObject *rest) {
    if (checked_time(self->now, &time) < 0) return NULL;
    PyObject *event = new_event(self, time, action, rest);
    if (event == NULL) return NULL;
    Entry entry = {time, (++self->seq << KIND_BITS) | KIND_AT, event, NULL};
    Py_INCREF(event);   /* one reference in the heap, one returned */
    if (push(self, entry) < 0) { Py_DECREF(event); Py_DECREF(event); return NULL; }
    return event;
}

/* at(time, action, *args) -> Event */
static PyObject *Loop_at(Loop *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2) { PyErr_SetString(PyExc_TypeError, "at(time, action, *args)"); return NULL; }
    double time = PyFloat_AsDouble(args[0]);
    if (time == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *rest = PyTuple_New(nargs - 2);
    if (rest == NULL) return NULL;
    for (Py_ssize_t i = 2; i < nargs; i++) { Py_INCREF(args[i]); PyTuple_SET_ITEM(rest, i - 2, args[i]); }
    PyObject *event = schedule_at(self, time, args[1], rest);
    Py_DECREF(rest);
    return event;
}

/* after(delay, action, *args) -> Event */
static PyObject *Loop_after(Loop *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2) { PyErr_SetString(PyExc_TypeError, "after(delay, action, *args)"); return NULL; }
    double delay = PyFloat_AsDouble(args[0]);
    if (delay == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *rest = PyTuple_New(nargs - 2);
    if (rest == NULL) return NULL;
    for (Py_ssize_t i = 2; i < nargs; i++) { Py_INCREF(args[i]); PyTuple_SET_ITEM(rest, i - 2, args[i]); }
    PyObject *event = schedule_at(self, self->now + delay, args[1], rest);
    Py_DECREF(rest);
    return event;
}

/* post(time, action, arg): not cancellable, no object made */
static PyObject *Loop_post(Loop *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "post(time, action, arg)"); return NULL; }
    double time = PyFloat_AsDouble(args[0]);
    if (time == -1.0 && PyErr_Occurred()) return NULL;
    if (checked_time(self->now, &time) < 0) return NULL;
    Py_INCREF(args[1]);
    Py_INCREF(args[2]);
    Entry entry = {time, (++self->seq << KIND_BITS) | KIND_POST, args[1], args[2]};
    if (push(self, entry) < 0) { Py_DECREF(args[1]); Py_DECREF(args[2]); return NULL; }
    Py_RETURN_NONE;
}

/* post from C: `action(target, arg)` at `time` (not earlier than now), as `post` orders it */
static int loop_post_native(Loop *self, double time, NativeAction action, PyObject *target,
                            PyObject *arg) {
    if (checked_time(self->now, &time) < 0) return -1;
    int kind = native_kind(action);
    if (kind < 0) return -1;
    Py_INCREF(target);
    Py_INCREF(arg);
    Entry entry = {time, (++self->seq << KIND_BITS) | (unsigned)kind, target, arg};
    if (push(self, entry) < 0) { Py_DECREF(target); Py_DECREF(arg); return -1; }
    return 0;
}

/* post from C of a Python callable, as `post` */
static int loop_post(Loop *self, double time, PyObject *action, PyObject *arg) {
    if (checked_time(self->now, &time) < 0) return -1;
    Py_INCREF(action);
    Py_INCREF(arg);
    Entry entry = {time, (++self->seq << KIND_BITS) | KIND_POST, action, arg};
    if (push(self, entry) < 0) { Py_DECREF(action); Py_DECREF(arg); return -1; }
    return 0;
}

/* the loop's `record(line)` (its Python part adds the time); only called while tracing */
static int loop_record(Loop *self, PyObject *line) {
    PyObject *r = PyObject_CallMethod((PyObject *)self, "record", "O", line);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *Loop_stop(Loop *self, PyObject *unused) {
    self->stopped = 1;
    Py_RETURN_NONE;
}

static int done_now(Loop *self, PyObject *done) {
    if (self->stopped) return 1;
    if (done == Py_None) return 0;
    PyObject *r = PyObject_CallNoArgs(done);
    if (r == NULL) return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

/* Bytes of the next event's target (an Event, an action, a native action's object) that the
 * loop prefetches as it runs the event before: a native target keeps the fields its action
 * reads first within them (link.c's Link), so that their cache misses overlap with this
 * event's work instead of stalling the next one. */
#define NEXT_TARGET_BYTES 48
#if defined(__GNUC__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* run(until=, done=None, done_every=1) -> "done" | "idle" | "time limit"; `done` is asked
 * before the first event and every done_every-th one after it, as events.py asks it */
static PyObject *Loop_run(Loop *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"until", "done", "done_every", NULL};
    double until = Py_HUGE_VAL;
    PyObject *done = Py_None, *every = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$dOO", names, &until, &done, &every))
        return NULL;
    long long done_every = 1;
    if (every != NULL) {
        done_every = PyBool_Check(every) || !PyLong_Check(every) ? 0 : PyLong_AsLongLong(every);
        if (done_every == -1 && PyErr_Occurred()) PyErr_Clear();
        if (done_every < 1) {
            PyErr_Format(PyExc_ValueError, "done_every must be a positive integer, got %R", every);
            return NULL;
        }
    }
    long long ask = 1;     /* events until `done` is asked again */
    self->stopped = 0;
    while (self->size) {
        if (self->stopped) { Py_INCREF(str_done); return str_done; }
        if (done != Py_None && !--ask) {
            ask = done_every;
            int finished = done_now(self, done);
            if (finished < 0) return NULL;
            if (finished) { Py_INCREF(str_done); return str_done; }
        }
        double when = self->heap[0].time;
        if (when > until) {
            self->now = until;
            Py_INCREF(str_limit);
            return str_limit;
        }
        Entry e = pop(self);
        if (self->size) {          /* the next event's objects, fetched while this one runs */
            const char *target = (const char *)self->heap[0].a;
            PREFETCH(target);
            PREFETCH(target + NEXT_TARGET_BYTES - 1);
            PREFETCH(self->heap[0].b);
        }
        PyObject *result;
        unsigned kind = kind_of(&e);
        if (kind == KIND_AT) {
            PyObject *action, *call_args;
            if (event_call(self, e.a, &action, &call_args) < 0) {
                clear_entry(&e);
                return NULL;
            }
            if (action == Py_None) {
                Py_DECREF(action);
                Py_XDECREF(call_args);
                clear_entry(&e);
                continue;
            }
            self->now = when;
            self->events_run++;
            result = PyObject_Call(action, call_args, NULL);
            Py_DECREF(action);
            Py_DECREF(call_args);
        } else if (kind >= KIND_NATIVE) {
            self->now = when;
            self->events_run++;
            int failed = native_actions[kind - KIND_NATIVE](e.a, e.b);
            Py_DECREF(e.a);
            bytes_let_go(e.b);
            if (failed) return NULL;
            continue;
        } else {
            self->now = when;
            self->events_run++;
            result = PyObject_CallOneArg(e.a, e.b);
        }
        clear_entry(&e);
        if (result == NULL) return NULL;
        Py_DECREF(result);
    }
    int finished = done_now(self, done);
    if (finished < 0) return NULL;
    PyObject *why = finished ? str_done : str_idle;
    Py_INCREF(why);
    return why;
}

static PyObject *Loop_pending_events(Loop *self, void *closure) {
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < self->size; i++) {
        Entry *e = &self->heap[i];
        if (kind_of(e) != KIND_AT) { count++; continue; }
        PyObject *action = event_action(self, e->a);
        if (action == NULL) return NULL;
        if (action != Py_None) count++;
        Py_DECREF(action);
    }
    return PyLong_FromSsize_t(count);
}

static PyMethodDef Loop_methods[] = {
    {"clock", (PyCFunction)Loop_clock, METH_NOARGS, "the virtual time"},
    {"at", (PyCFunction)(void (*)(void))Loop_at, METH_FASTCALL, "at(time, action, *args) -> Event"},
    {"after", (PyCFunction)(void (*)(void))Loop_after, METH_FASTCALL, "after(delay, action, *args)"},
    {"post", (PyCFunction)(void (*)(void))Loop_post, METH_FASTCALL, "post(time, action, arg)"},
    {"stop", (PyCFunction)Loop_stop, METH_NOARGS, "end run before the next event"},
    {"run", (PyCFunction)(void (*)(void))Loop_run, METH_VARARGS | METH_KEYWORDS,
     "run(until=, done=None, done_every=1)"},
    {NULL}
};

static PyMemberDef Loop_members[] = {
    {"now", T_DOUBLE, offsetof(Loop, now), 0, "virtual seconds"},
    {"events_run", T_LONGLONG, offsetof(Loop, events_run), 0, "events run so far"},
    {"trace", T_OBJECT, offsetof(Loop, trace), 0, "the trace list or None"},
    {NULL}
};

static PyGetSetDef Loop_getset[] = {
    {"pending_events", (getter)Loop_pending_events, NULL, "events still to run", NULL},
    {NULL}
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.Loop",
    .tp_basicsize = sizeof(Loop),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Loop_init,
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_traverse = (traverseproc)Loop_traverse,
    .tp_clear = (inquiry)Loop_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = Loop_methods,
    .tp_members = Loop_members,
    .tp_getset = Loop_getset,
    .tp_doc = "the event loop's heap and run, in C (inaemu/sim/events.py's contract)",
};

