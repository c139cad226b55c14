/* An INA session's per-result steps in C, on the Python session's own objects, for the native
 * core's INA worker (inaworker.c): hosts/ina_session.py's `_fill_window` (the window refill:
 * payloads from the encoder's table rows, Flight objects, the recovery's timer heap,
 * congestion serials and loss-burst counts), hosts/ina_codec.py's `store` (`codec_store`)
 * and hosts/ina_recovery.py's `next_deadline`, each what the Python one does, in its order;
 * and (step 2) hosts/congestion.py's `RtoEstimator.sample` and `LossBursts.lost`, the
 * recovery's `detect_losses` with `_resend`/`arm`/`_on_loss`, `on_nack`, and `expire`'s RTO
 * step with the silence rules (`rto_expiry_plan`), for hosts' own classes (exact types).
 * The state stays in the Python objects (nothing is kept here between calls); what another
 * module defines is called there (the estimators' `first_timer` is read at each refill, the
 * encoder's `table_rows()` as the tuple it keeps, `_table_rows`, and its `contribution()`,
 * the loss bursts' `window_ends`, the recovery's `probe_tail`). tests/sim/test_native_ina.py
 * checks it against the Python core.
 */

#define INA_RESULT 1
#define INA_FLAG_VER 0x01
#define INA_FLAG_RETX 0x02
#define INA_FLAG_FORMAT 0x0C
#define INA_FLAG_OVERFLOW 0x10
#define INA_FLAG_NEXT 0x20
#define INA_HEADER_BYTES 16
#define INA_UDP_PORT 48879
#define INA_RTO_TIMER 0
#define INA_REORDER_TIMER 1
#define INA_TAIL_TIMER 2
#define INA_QUERY 4
#define INA_NACK 5
#define INA_KNOWN_FLAGS 0x3F
#define INA_QUERIED_ALLOWANCE_DIVISOR 4

/* the Python names the path reads and writes (interned once) */
enum {
    N_outcome, N_finished_at, N__on_datagram, N_session, N_node, N_loop, N__timer,
    N_aggregator_ip, N_addressing, N_gateway_mac, N_mac, N_ip, N_counters, N__recovery,
    N__silence, N_in_flight_window, N_rto_estimator, N_host_rto_estimator, N__paths, N_host,
    N__granted, N_job, N_worker, N_n, N__result_bytes, N__format_bits, N_scaling,
    N_fast_retransmit, N_adaptive, N_pool_size, N_window, N_rto, N_rto_max, N_state,
    N__in_flight, N__codec, N__encoder, N_timeline, N_chunks, N__answered_count, N__chunks,
    N_tries, N_slot, N_ver, N_queried, N_last_progress_chunk, N_packets_received,
    N_bytes_received, N_data_results, N_last_progress, N_last_progress_sent, N_last_sent,
    N_sent_at, N__highest_answered, N_sample, N_size, N_maximum, N_on_result, N__answered,
    N_store, N__next_chunk, N_tail, N_probe_tail, N__table_rows, N_contribution, N_timers,
    N_events, N_loss_bursts, N_first_timer, N_next_position, N_serial, N__sent,
    N_window_ends, N_packets_sent, N_bytes_sent, N__tail_serial, N_suspect, N__ident,
    N_set, N_uplink, N_alive, N_detect_losses,
    N__sink, N__sum_rows, N__block_sums, N__wire_sums, N__pending, N__dequantize_rows,
    N_set_queried, N_spurious_timeout, N_spurious_timeouts,
    N_min_rtt, N_srtt, N_rttvar, N_samples, N_minimum, N__rto, N_loss_events,
    N_retransmissions, N_fast_retransmissions, N_query, N_window_rule, N_rate, N_learnt,
    N_bursts, N__losses, N__burst, N__last_event, N_count, N_congestion_events, N_on_timeout,
    N__on_timer, N_duplicates_ignored, N_nack_retransmissions, N_timer_retransmissions,
    N_max_retx, N_data_start, N_max_round_trip, N_barrier_estimator, N_fixed_wait,
    N_timeout, N__apply, N__end, N_slow_start, N__results, N__job_lanes, N_push,
    N_next_deadline,
    N_COUNT
};
static const char *ina_name_text[N_COUNT] = {
    "outcome", "finished_at", "_on_datagram", "session", "node", "loop", "_timer",
    "aggregator_ip", "addressing", "gateway_mac", "mac", "ip", "counters", "_recovery",
    "_silence", "in_flight_window", "rto_estimator", "host_rto_estimator", "_paths", "host",
    "_granted", "job", "worker", "n", "_result_bytes", "_format_bits", "scaling",
    "fast_retransmit", "adaptive", "pool_size", "window", "rto", "rto_max", "state",
    "_in_flight", "_codec", "_encoder", "timeline", "chunks", "_answered_count", "_chunks",
    "tries", "slot", "ver", "queried", "last_progress_chunk", "packets_received",
    "bytes_received", "data_results", "last_progress", "last_progress_sent", "last_sent",
    "sent_at", "_highest_answered", "sample", "size", "maximum", "on_result", "_answered",
    "store", "_next_chunk", "tail", "probe_tail", "_table_rows", "contribution", "timers",
    "events", "loss_bursts", "first_timer", "next_position", "serial", "_sent",
    "window_ends", "packets_sent", "bytes_sent", "_tail_serial", "suspect", "_ident",
    "set", "uplink", "alive", "detect_losses",
    "_sink", "_sum_rows", "_block_sums", "_wire_sums", "_pending", "_dequantize_rows",
    "set_queried", "spurious_timeout", "spurious_timeouts",
    "min_rtt", "srtt", "rttvar", "samples", "minimum", "_rto", "loss_events",
    "retransmissions", "fast_retransmissions", "query", "window_rule", "rate", "learnt",
    "bursts", "_losses", "_burst", "_last_event", "count", "congestion_events", "on_timeout",
    "_on_timer", "duplicates_ignored", "nack_retransmissions", "timer_retransmissions",
    "max_retx", "data_start", "max_round_trip", "barrier_estimator", "fixed_wait",
    "timeout", "_apply", "_end", "slow_start", "_results", "_job_lanes", "push", "next_deadline",
};
static PyObject *ina_names[N_COUNT];
#define INA_NAME(id) ina_names[N_##id]

/* hosts.ina_state's Flight: its slots, written directly (a Flight made per chunk sent) */
static const char *const flight_slot_text[] = {
    "payload", "slot", "ver", "tries", "deadline", "sent_at", "serial", "last_sent",
    "expiries", "suspect", "wait", "queried", "tail_probes",
};
#define FLIGHT_SLOTS 13
static PyTypeObject *flight_type;
static Py_ssize_t flight_offset[FLIGHT_SLOTS];
static PyObject *state_data;            /* hosts.ina_state.State.DATA */
static PyObject *py_udp_port, *py_zero, *py_one, *py_rto_timer;

/* A session and its collaborators (made once in its __init__), and its fixed parameters:
 * what the per-result steps read and write, on the Python objects themselves */
typedef struct {
    PyObject *session, *counters, *recovery, *silence, *window, *estimator, *host_estimator;
    PyObject *host_of;      /* the paths' bytearray: 1 for a host aggregator's slot */
    PyObject *events, *bursts;  /* the recovery's CongestionEvents and LossBursts */
    long job, wid, n, pool, format_bits;
    Py_ssize_t result_bytes;
    int adaptive, fast_retransmit, job_scaling, granted;
    int query, every_loss;  /* the recovery's: early resends are QUERYs; the window rule */
    /* the estimators are hosts.congestion's RtoEstimator itself (rto_sample, below, stands
     * for its `sample`); the recovery and its parts are hosts' own classes
     * (detect_losses_c stands for LossRecovery.detect_losses): else Python's are called */
    int c_sample, c_recovery;
    long fixed_window;
    long long max_retx;     /* the recovery's: expiries of the earliest chunk before it gives up */
    double fixed_wait, fixed_rto, fixed_rto_max;
} SessionRefs;

/* the classes whose methods the C stands for (exact types only: a subclass may differ) */
static PyTypeObject *rto_estimator_type, *loss_recovery_type, *in_flight_window_type;
static PyTypeObject *congestion_events_type, *loss_bursts_type;
static PyObject *host_error_type;       /* hosts.errors.HostError: a worker's end, not a bug */

/* ---- small helpers over Python attributes (attrs.c: get_ll, set_ll, add_ll, ...) ------ */

/* a method call with the given arguments; the result dropped (0) or an error (-1) */
static int ina_call_method(PyObject *o, PyObject *name, PyObject *const *args, size_t nargs) {
    PyObject *stack[4];
    stack[0] = o;
    for (size_t i = 0; i < nargs; i++) stack[i + 1] = args[i];
    PyObject *r = PyObject_VectorcallMethod(name, stack, (nargs + 1)
                                            | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int ina_call_method_double(PyObject *o, PyObject *name, double value) {
    PyObject *v = PyFloat_FromDouble(value);
    if (v == NULL) return -1;
    int r = ina_call_method(o, name, &v, 1);
    Py_DECREF(v);
    return r;
}

/* ---- the session's references ------------------------------------------------------------ */

static int session_refs_init(SessionRefs *self, PyObject *session) {
    PyObject *paths = NULL, *v = NULL;
    Py_INCREF(session);
    Py_XSETREF(self->session, session);
    if ((self->counters = attr_get(session, INA_NAME(counters))) == NULL
            || (self->recovery = attr_get(session, INA_NAME(_recovery))) == NULL
            || (self->silence = attr_get(session, INA_NAME(_silence))) == NULL
            || (self->window = attr_get(session, INA_NAME(in_flight_window))) == NULL
            || (self->estimator = attr_get(session, INA_NAME(rto_estimator))) == NULL
            || (self->host_estimator = attr_get(session, INA_NAME(host_rto_estimator)))
                == NULL
            || (paths = attr_get(session, INA_NAME(_paths))) == NULL
            || (self->host_of = attr_get(paths, INA_NAME(host))) == NULL)
        goto fail;
    if (!PyByteArray_Check(self->host_of)) {
        PyErr_SetString(PyExc_TypeError, "the session's paths must be a bytearray");
        goto fail;
    }
    long long job, wid, n, pool, format_bits, result_bytes, fixed_window;
    if (get_ll(session, INA_NAME(job), &job) < 0
            || get_ll(session, INA_NAME(worker), &wid) < 0
            || get_ll(session, INA_NAME(n), &n) < 0
            || get_ll(session, INA_NAME(pool_size), &pool) < 0
            || get_ll(session, INA_NAME(_format_bits), &format_bits) < 0
            || get_ll(session, INA_NAME(_result_bytes), &result_bytes) < 0
            || get_ll(session, INA_NAME(window), &fixed_window) < 0)
        goto fail;
    self->job = (long)job; self->wid = (long)wid; self->n = (long)n; self->pool = (long)pool;
    self->format_bits = (long)format_bits;
    self->result_bytes = (Py_ssize_t)result_bytes;
    self->fixed_window = (long)fixed_window;
    double rto, rto_max;
    if (get_double(session, INA_NAME(rto), &rto) < 0
            || get_double(session, INA_NAME(rto_max), &rto_max) < 0)
        goto fail;
    self->fixed_wait = rto_max < rto ? rto_max : rto;       /* min(rto, rto_max) */
    if ((v = attr_get(session, INA_NAME(adaptive))) == NULL) goto fail;
    self->adaptive = PyObject_IsTrue(v);
    Py_CLEAR(v);
    if ((v = attr_get(session, INA_NAME(fast_retransmit))) == NULL) goto fail;
    self->fast_retransmit = PyObject_IsTrue(v);
    Py_CLEAR(v);
    if ((v = attr_get(session, INA_NAME(scaling))) == NULL) goto fail;
    self->job_scaling = PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "job") == 0;
    Py_CLEAR(v);
    if ((v = attr_get(session, INA_NAME(_granted))) == NULL) goto fail;
    self->granted = v != Py_None;           /* hashed sharing: the general path */
    Py_CLEAR(v);
    if (self->adaptive < 0 || self->fast_retransmit < 0) goto fail;
    if ((self->events = attr_get(self->recovery, INA_NAME(events))) == NULL
            || (self->bursts = attr_get(self->recovery, INA_NAME(loss_bursts))) == NULL
            || get_double(self->recovery, INA_NAME(rto), &self->fixed_rto) < 0
            || get_double(self->recovery, INA_NAME(rto_max), &self->fixed_rto_max) < 0
            || (self->query = get_truth(self->recovery, INA_NAME(query))) < 0
            || get_ll(self->recovery, INA_NAME(max_retx), &self->max_retx) < 0)
        goto fail;
    if ((v = attr_get(self->recovery, INA_NAME(window_rule))) == NULL) goto fail;
    self->every_loss = PyUnicode_Check(v)
        && PyUnicode_CompareWithASCIIString(v, "every_loss") == 0;
    Py_CLEAR(v);
    self->c_sample = Py_TYPE(self->estimator) == rto_estimator_type
        && Py_TYPE(self->host_estimator) == rto_estimator_type;
    self->c_recovery = self->c_sample && Py_TYPE(self->recovery) == loss_recovery_type
        && Py_TYPE(self->window) == in_flight_window_type
        && Py_TYPE(self->events) == congestion_events_type
        && Py_TYPE(self->bursts) == loss_bursts_type;
    Py_DECREF(paths);
    return 0;
fail:
    Py_XDECREF(paths);
    Py_XDECREF(v);
    return -1;
}

static int session_refs_traverse(SessionRefs *self, visitproc visit, void *arg) {
    Py_VISIT(self->session); Py_VISIT(self->counters); Py_VISIT(self->recovery);
    Py_VISIT(self->silence); Py_VISIT(self->window); Py_VISIT(self->estimator);
    Py_VISIT(self->host_estimator); Py_VISIT(self->host_of);
    Py_VISIT(self->events); Py_VISIT(self->bursts);
    return 0;
}

static void session_refs_clear(SessionRefs *self) {
    Py_CLEAR(self->session); Py_CLEAR(self->counters); Py_CLEAR(self->recovery);
    Py_CLEAR(self->silence); Py_CLEAR(self->window); Py_CLEAR(self->estimator);
    Py_CLEAR(self->host_estimator); Py_CLEAR(self->host_of);
    Py_CLEAR(self->events); Py_CLEAR(self->bursts);
}

/* ---- the recovery's timers ------------------------------------------------------------------ */

/* timers.push(deadline, key, tries, kind): in C on the native core's TimerHeap (timerheap.c),
   through the method on any other heap (hosts/timer_heap.py's) */
static int heap_push_any(PyObject *timers, double deadline, PyObject *key, long long tries,
                         long long kind) {
    if (Py_TYPE(timers) == &TimerHeapType)
        return timer_heap_push((TimerHeapObject *)timers, deadline, key, tries, kind);
    PyObject *args[5] = {timers, PyFloat_FromDouble(deadline), key,
                         PyLong_FromLongLong(tries), PyLong_FromLongLong(kind)};
    PyObject *r = NULL;
    if (args[1] != NULL && args[3] != NULL && args[4] != NULL)
        r = PyObject_VectorcallMethod(INA_NAME(push), args, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      NULL);
    Py_XDECREF(args[1]);
    Py_XDECREF(args[3]);
    Py_XDECREF(args[4]);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* ---- _fill_window ------------------------------------------------------------------------- */

/* Flights recycled: one is made per chunk sent and dies with its RESULT, a class instance
 * with 13 slots, four of them new floats (~1,200 instructions made and freed). A Flight the
 * RESULT path lets go of when nothing else holds it (the in-flight table has dropped it; no
 * timer entry, list or caller holds a Flight itself) is kept here and made the next chunk's
 * Flight: every slot written again, its float slots in place when only it holds them. The
 * class has no instance dict and no weak references (checked at load, else nothing is
 * recycled), so an object nothing holds cannot be told from a new one. */
#define FLIGHT_POOL_SIZE 64
static PyObject *flight_pool[FLIGHT_POOL_SIZE];
static int flight_pool_count;
static int flight_recycling;        /* the class allows it (set at load) */

/* a reference to a Flight let go of: kept for `new_flight` when it was the last one */
static void flight_let_go(PyObject *f) {
    if (flight_recycling && NUMBERS_IN_PLACE && Py_TYPE(f) == flight_type && Py_REFCNT(f) == 1
            && flight_pool_count < FLIGHT_POOL_SIZE) {
        flight_pool[flight_pool_count++] = f;       /* (the reference moves to the pool) */
        return;
    }
    Py_DECREF(f);
}

/* a float for a Flight's slot: the slot's own object given `value` when only it holds it
 * (attrs.c's `float_in_place`; `*in_place` set), else a new float */
static PyObject *flight_float(PyObject *f, int i, double value, int *in_place) {
    PyObject *held = f == NULL ? NULL : *(PyObject **)((char *)f + flight_offset[i]);
    *in_place = float_in_place(held, value);
    return *in_place ? held : PyFloat_FromDouble(value);
}

static PyObject *new_flight(PyObject *payload, long slot, long ver, double deadline,
                            double now, PyObject *serial, double wait) {
    PyObject *f = flight_pool_count ? flight_pool[--flight_pool_count] : NULL;
    PyObject *recycled = f;
    if (f == NULL && (f = flight_type->tp_alloc(flight_type, 0)) == NULL) return NULL;
    PyObject *values[FLIGHT_SLOTS];
    int kept[FLIGHT_SLOTS] = {0};   /* a float slot given its value in place */
    values[0] = Py_NewRef(payload);
    values[1] = PyLong_FromLong(slot);
    values[2] = PyLong_FromLong(ver);
    values[3] = Py_NewRef(py_one);
    values[4] = flight_float(recycled, 4, deadline, &kept[4]);
    values[5] = flight_float(recycled, 5, now, &kept[5]);
    values[6] = Py_NewRef(serial);
    values[7] = flight_float(recycled, 7, now, &kept[7]);
    values[8] = Py_NewRef(py_zero);
    values[9] = Py_NewRef(Py_False);
    values[10] = flight_float(recycled, 10, wait, &kept[10]);
    values[11] = Py_NewRef(Py_False);
    values[12] = Py_NewRef(py_zero);
    int ok = 1;
    for (int i = 0; i < FLIGHT_SLOTS; i++) {
        if (values[i] == NULL) ok = 0;
        if (kept[i]) continue;
        PyObject **at = (PyObject **)((char *)f + flight_offset[i]);
        PyObject *old = *at;
        *at = values[i];
        if (i == 0) bytes_let_go(old);      /* (the answered chunk's payload: a spare one) */
        else Py_XDECREF(old);
    }
    if (!ok) { Py_DECREF(f); return NULL; }
    return f;
}

/* `_fill_window(now)`, appending the payloads to `out` */
static int fill_window(SessionRefs *self, double now, PyObject *out) {
    PyObject *session = self->session, *recovery = self->recovery;
    long long window, queried, c, chunks, next_position;
    if (self->adaptive) {
        if (get_ll(self->window, INA_NAME(size), &window) < 0) return -1;
    } else {
        window = self->fixed_window;
    }
    if (get_ll(recovery, INA_NAME(queried), &queried) < 0) return -1;
    if (queried) {
        long long allowance = window / INA_QUERIED_ALLOWANCE_DIVISOR;
        window += queried < allowance ? queried : allowance;
    }
    if (get_ll(session, INA_NAME(_next_chunk), &c) < 0
            || get_ll(session, INA_NAME(_chunks), &chunks) < 0)
        return -1;
    long long pool = self->pool;
    if (c >= chunks) {
        if (attr_set(recovery, INA_NAME(tail), Py_True) < 0) return -1;
        return ina_call_method_double(recovery, INA_NAME(probe_tail), now);
    }
    if (attr_set(recovery, INA_NAME(tail), Py_False) < 0) return -1;
    PyObject *in_flight = attr_get(session, INA_NAME(_in_flight));
    if (in_flight == NULL) return -1;
    long long room = window - (PyDict_CheckExact(in_flight) ? PyDict_GET_SIZE(in_flight)
                                                             : PyObject_Length(in_flight));
    if (room <= 0) { Py_DECREF(in_flight); return 0; }
    int r = -1;
    PyObject *encoder = NULL, *answered = NULL, *rows = NULL, *timers = NULL, *events = NULL;
    PyObject *bursts = NULL, *payload = NULL;
    Py_buffer table = {0};
    long long size = 0, base = 0, ready = 0, bursts_window, sent = 0;
    double switch_wait, host_wait;
    if ((encoder = attr_get(session, INA_NAME(_encoder))) == NULL
            || (answered = attr_get(session, INA_NAME(_answered))) == NULL
            || (timers = attr_get(recovery, INA_NAME(timers))) == NULL
            || (events = Py_NewRef(self->events)) == NULL
            || (bursts = Py_NewRef(self->bursts)) == NULL
            || get_ll(self->window, INA_NAME(size), &bursts_window) < 0
            || get_ll(session, INA_NAME(next_position), &next_position) < 0)
        goto done;
    if (!PyByteArray_Check(answered)) {
        PyErr_SetString(PyExc_TypeError, "the session's answered marks must be a bytearray");
        goto done;
    }
    if (self->adaptive) {        /* the estimators' first timers, as they are now */
        if (get_double(self->estimator, INA_NAME(first_timer), &switch_wait) < 0
                || get_double(self->host_estimator, INA_NAME(first_timer), &host_wait) < 0)
            goto done;
    } else {
        switch_wait = host_wait = self->fixed_wait;
    }
#define TABLE_ROWS() do { \
        if (table.obj != NULL) PyBuffer_Release(&table); \
        Py_CLEAR(rows); \
        rows = attr_get(encoder, INA_NAME(_table_rows)); \
        if (rows == NULL) goto done; \
        if (!PyTuple_Check(rows) || PyTuple_GET_SIZE(rows) != 4) { \
            PyErr_SetString(PyExc_TypeError, "an encoder's _table_rows must be 4 items"); \
            goto done; } \
        size = PyLong_AsLongLong(PyTuple_GET_ITEM(rows, 1)); \
        base = PyLong_AsLongLong(PyTuple_GET_ITEM(rows, 2)); \
        ready = PyLong_AsLongLong(PyTuple_GET_ITEM(rows, 3)); \
        if (PyErr_Occurred()) goto done; \
        if (PyTuple_GET_ITEM(rows, 0) != Py_None \
                && PyObject_GetBuffer(PyTuple_GET_ITEM(rows, 0), &table, PyBUF_SIMPLE) < 0) \
            goto done; \
    } while (0)
    TABLE_ROWS();
    /* the congestion serial and the loss bursts' count, kept here over the loop and written
     * back before any Python runs (window_ends, contribution) and at its end */
    long long serial;
    if (get_ll(events, INA_NAME(serial), &serial) < 0
            || get_ll(bursts, INA_NAME(_sent), &sent) < 0)
        goto done;
#define WRITE_BACK() (set_ll(events, INA_NAME(serial), serial) < 0 \
                      || set_ll(bursts, INA_NAME(_sent), sent) < 0)
    long long position = next_position + c, first = c, sent_bytes = 0;
    const unsigned char *host_of = (const unsigned char *)PyByteArray_AS_STRING(self->host_of);
    Py_ssize_t host_len = PyByteArray_GET_SIZE(self->host_of);
    while (c < chunks && room > 0
           && (c < pool || PyByteArray_AS_STRING(answered)[c - pool])) {
        long slot = (long)(position % pool), ver = (long)((position / pool) % 2);
        if (c < ready && table.obj != NULL) {
            payload = bytes_of_size(size);      /* (a spare one: eventloop.c) */
            if (payload != NULL)
                memcpy(PyBytes_AS_STRING(payload), (const char *)table.buf + (c - base) * size,
                       size);
        } else {
            if (WRITE_BACK()) goto done;
            PyObject *args[3] = {PyLong_FromLongLong(c), PyLong_FromLong(slot),
                                 PyLong_FromLong(ver)};
            if (args[0] && args[1] && args[2])
                payload = PyObject_VectorcallMethod(
                    INA_NAME(contribution), (PyObject *[]){encoder, args[0], args[1], args[2]},
                    4, NULL);
            Py_XDECREF(args[0]); Py_XDECREF(args[1]); Py_XDECREF(args[2]);
            if (payload == NULL) goto done;
            TABLE_ROWS();
        }
        if (payload == NULL) goto done;
        if (!PyBytes_Check(payload)) {
            PyErr_SetString(PyExc_TypeError, "a contribution must be bytes");
            goto done;
        }
        if (slot >= host_len) {
            PyErr_SetString(PyExc_IndexError, "slot beyond the paths' table");
            goto done;
        }
        double wait = host_of[slot] ? host_wait : switch_wait;
        PyObject *serial_obj = PyLong_FromLongLong(++serial);   /* events.serial += 1 */
        if (serial_obj == NULL) goto done;
        double deadline = now + wait;
        PyObject *flight = new_flight(payload, slot, ver, deadline, now, serial_obj, wait);
        Py_DECREF(serial_obj);
        if (flight == NULL) goto done;
        PyObject *key = PyLong_FromLongLong(c);
        if (key == NULL) { Py_DECREF(flight); goto done; }
        int set = PyDict_CheckExact(in_flight) ? PyDict_SetItem(in_flight, key, flight)
                                               : PyObject_SetItem(in_flight, key, flight);
        Py_DECREF(flight);
        if (set < 0) { Py_DECREF(key); goto done; }
        if (++sent >= bursts_window) {         /* bursts._sent += 1; window_ends() */
            if (WRITE_BACK()) { Py_DECREF(key); goto done; }
            PyObject *rr = PyObject_CallMethodNoArgs(bursts, INA_NAME(window_ends));
            if (rr == NULL || get_ll(bursts, INA_NAME(_sent), &sent) < 0) {
                Py_XDECREF(rr); Py_DECREF(key); goto done;
            }
            Py_DECREF(rr);
        }
        int pushed = heap_push_any(timers, deadline, key, 1, INA_RTO_TIMER);
        Py_DECREF(key);
        if (pushed < 0) goto done;
        sent_bytes += PyBytes_GET_SIZE(payload);
        if (PyList_Append(out, payload) < 0) goto done;
        Py_CLEAR(payload);
        c++;
        room--;
        position++;
    }
    if (WRITE_BACK() || set_ll(session, INA_NAME(_next_chunk), c) < 0
            || add_ll(self->counters, INA_NAME(packets_sent), c - first) < 0
            || add_ll(self->counters, INA_NAME(bytes_sent), sent_bytes) < 0)
        goto done;
    if (c >= chunks) {
        if (attr_set(recovery, INA_NAME(tail), Py_True) < 0
                || ina_call_method_double(recovery, INA_NAME(probe_tail), now) < 0)
            goto done;
    }
    r = 0;
#undef TABLE_ROWS
#undef WRITE_BACK
done:
    if (table.obj != NULL) PyBuffer_Release(&table);
    Py_XDECREF(payload);
    Py_XDECREF(rows);
    Py_XDECREF(in_flight);
    Py_XDECREF(encoder);
    Py_XDECREF(answered);
    Py_XDECREF(timers);
    Py_XDECREF(events);
    Py_XDECREF(bursts);
    return r;
}

/* ---- RtoEstimator.sample -------------------------------------------------------------------- */

/* A product or quotient rounded to a double on its own, as Python rounds each operation (no
 * fused multiply-add, which a compiler may otherwise form on targets that have one) */
static double rounded(double x) {
    volatile double v = x;
    return v;
}

/* hosts/congestion.py's `RtoEstimator.sample(rtt)` (RFC 6298 §2.2-2.3, with `_refresh`'s RTO),
 * the same arithmetic in the same order on the estimator's own fields: a change there is a
 * change here (tests/sim/test_native_ina.py compares the two, float for float) */
static int rto_sample(PyObject *est, double rtt) {
    if (rtt < 0.0) rtt = 0.0;
    double minimum, maximum, srtt, rttvar = 0.0;
    PyObject *min_rtt = attr_get(est, INA_NAME(min_rtt));
    if (min_rtt == NULL) return -1;
    int lower = min_rtt == Py_None;
    if (!lower) {
        double m = PyFloat_AsDouble(min_rtt);
        if (m == -1.0 && PyErr_Occurred()) { Py_DECREF(min_rtt); return -1; }
        lower = rtt < m;
    }
    Py_DECREF(min_rtt);
    if (lower && set_double(est, INA_NAME(min_rtt), rtt) < 0) return -1;
    int none = attr_is_none(est, INA_NAME(srtt));
    if (none < 0) return -1;
    if (none) {
        srtt = rtt;
        rttvar = rounded(rtt / 2);
    } else {
        double old_var;
        if (get_double(est, INA_NAME(srtt), &srtt) < 0
                || get_double(est, INA_NAME(rttvar), &old_var) < 0)
            return -1;
        double delta = srtt - rtt;
        if (delta < 0.0) delta = -delta;
        rttvar = rounded(0.75 * old_var) + rounded(0.25 * delta);
        srtt = rounded(0.875 * srtt) + rounded(0.125 * rtt);
    }
    if (set_double(est, INA_NAME(srtt), srtt) < 0 || set_double(est, INA_NAME(rttvar), rttvar) < 0
            || add_ll(est, INA_NAME(samples), 1) < 0
            || get_double(est, INA_NAME(minimum), &minimum) < 0
            || get_double(est, INA_NAME(maximum), &maximum) < 0)
        return -1;
    double rto = srtt + rounded(4.0 * rttvar), floor = rounded(2.0 * srtt);
    if (floor > rto) rto = floor;
    if (minimum > rto) rto = minimum;
    if (maximum < rto) rto = maximum;
    return set_double(est, INA_NAME(_rto), rto) < 0
        || set_double(est, INA_NAME(first_timer), maximum < rto ? maximum : rto) < 0 ? -1 : 0;
}

/* the estimator's `sample`: in C when it is hosts.congestion's own class, else its method */
static int estimator_sample(SessionRefs *self, PyObject *est, double rtt) {
    if (self->c_sample) return rto_sample(est, rtt);
    return ina_call_method_double(est, INA_NAME(sample), rtt);
}

/* ---- LossRecovery.detect_losses and its early resend --------------------------------------- */

/* a Flight's slot (borrowed; the type is checked before use) */
enum { F_payload, F_slot, F_ver, F_tries, F_deadline, F_sent_at, F_serial, F_last_sent,
       F_expiries, F_suspect, F_wait, F_queried, F_tail_probes };
#define FLIGHT_GET(f, i) (*(PyObject **)((char *)(f) + flight_offset[i]))

/* set a Flight's slot to `value` (a new reference, stolen; NULL: an error, passed on) */
static int flight_set(PyObject *f, int i, PyObject *value) {
    if (value == NULL) return -1;
    PyObject **at = (PyObject **)((char *)f + flight_offset[i]);
    PyObject *old = *at;
    *at = value;
    Py_XDECREF(old);
    return 0;
}

static int flight_ll(PyObject *f, int i, long long *out) {
    PyObject *v = FLIGHT_GET(f, i);
    if (v == NULL) { PyErr_SetString(PyExc_AttributeError, "a Flight slot is unset"); return -1; }
    *out = PyLong_AsLongLong(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int flight_double(PyObject *f, int i, double *out) {
    PyObject *v = FLIGHT_GET(f, i);
    if (v == NULL) { PyErr_SetString(PyExc_AttributeError, "a Flight slot is unset"); return -1; }
    *out = PyFloat_AsDouble(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static int flight_truth(PyObject *f, int i) {
    PyObject *v = FLIGHT_GET(f, i);
    if (v == NULL) { PyErr_SetString(PyExc_AttributeError, "a Flight slot is unset"); return -1; }
    return PyObject_IsTrue(v);
}

/* a Flight's field by its slot when it is hosts' Flight, else by name (a new reference) */
static PyObject *flight_attr(PyObject *f, int i, PyObject *name) {
    if (Py_TYPE(f) != flight_type) return attr_get(f, name);
    PyObject *v = FLIGHT_GET(f, i);
    if (v == NULL) PyErr_SetString(PyExc_AttributeError, "a Flight slot is unset");
    return Py_XNewRef(v);
}

/* Paths.path(slot): 1 for the host aggregator's */
static int path_of(SessionRefs *self, long long slot) {
    if (slot < 0) return -1;
    return slot < PyByteArray_GET_SIZE(self->host_of)
        ? (PyByteArray_AS_STRING(self->host_of)[slot] ? 1 : 0) : 1;
}

/* recovery.timers.push(deadline, key, tries, kind) */
static int push_timer(SessionRefs *self, double deadline, PyObject *key, long long tries,
                      long kind) {
    PyObject *timers = attr_get(self->recovery, INA_NAME(timers));
    if (timers == NULL) return -1;
    int pushed = heap_push_any(timers, deadline, key, tries, kind);
    Py_DECREF(timers);
    return pushed;
}

/* LossBursts.lost(window) (hosts/congestion.py: `expected` inline, the same floats) */
static int bursts_lost(PyObject *bursts, long long window) {
    long long losses;
    if (get_ll(bursts, INA_NAME(_losses), &losses) < 0
            || set_ll(bursts, INA_NAME(_losses), ++losses) < 0)
        return -1;
    int learnt = get_truth(bursts, INA_NAME(learnt));
    if (learnt <= 0) return learnt;
    int burst = get_truth(bursts, INA_NAME(_burst));
    if (burst != 0) return burst < 0 ? -1 : 0;
    double q, w = (double)window;
    if (get_double(bursts, INA_NAME(rate), &q) < 0) return -1;
    if (0.0 > q) q = 0.0;               /* min(max(rate, 0.0), 1.0) */
    if (1.0 < q) q = 1.0;
    double expected = rounded(q * w)
        + rounded(3.0 * sqrt(rounded(rounded(q * (1.0 - q)) * w)));
    expected = expected + 2.0;
    if ((double)losses <= expected) return 0;
    if (attr_set(bursts, INA_NAME(_burst), Py_True) < 0
            || add_ll(bursts, INA_NAME(bursts), 1) < 0)
        return -1;
    return 1;
}

/* CongestionEvents.expired(serial) */
static int events_expired(PyObject *events, long long serial) {
    long long last, now_serial;
    if (get_ll(events, INA_NAME(_last_event), &last) < 0) return -1;
    if (serial <= last) return 0;
    if (get_ll(events, INA_NAME(serial), &now_serial) < 0
            || set_ll(events, INA_NAME(_last_event), now_serial) < 0
            || add_ll(events, INA_NAME(count), 1) < 0)
        return -1;
    return 1;
}

static int arm_c(SessionRefs *self, PyObject *key, PyObject *flight, double now);
static int send_resent(SessionRefs *self, PyObject *payload, PyObject *counter, PyObject *out);

/* LossRecovery._resend(key, flight, now, early) of a data chunk, not a tail probe (with
 * `_on_loss`, `arm`, `set_queried` and `_count_sent`), appending the payload to `out`; no
 * timeline. Early: a later result showed it lost (a QUERY when the session queries); else its
 * RTO timer expired (the values). */
static int resend_c(SessionRefs *self, PyObject *key, PyObject *flight, double now, int early,
                    PyObject *out) {
    long long tries, size;
    if (self->adaptive) {
        if (add_ll(self->counters, INA_NAME(loss_events), 1) < 0) return -1;
        long long progress;
        if (get_ll(self->silence, INA_NAME(last_progress_chunk), &progress) < 0) return -1;
        if (progress >= 0) {                                /* _on_loss */
            long long serial;
            int halve;
            if (flight_ll(flight, F_serial, &serial) < 0) return -1;
            if (self->every_loss) {
                halve = events_expired(self->events, serial);
            } else {
                if (get_ll(self->window, INA_NAME(size), &size) < 0) return -1;
                halve = bursts_lost(self->bursts, size);
                if (halve > 0) halve = events_expired(self->events, serial);
            }
            if (halve < 0) return -1;
            if (halve && (add_ll(self->counters, INA_NAME(congestion_events), 1) < 0
                          || ina_call_method(self->window, INA_NAME(on_timeout), NULL, 0) < 0))
                return -1;
        }
    }
    if (flight_ll(flight, F_tries, &tries) < 0) return -1;
    if (flight_set(flight, F_tries, PyLong_FromLongLong(tries + 1)) < 0
            || flight_set(flight, F_suspect, Py_NewRef(Py_False)) < 0
            || arm_c(self, key, flight, now) < 0)
        return -1;
    /* set_queried(flight, early and query) */
    int query = early && self->query;
    int was = flight_truth(flight, F_queried);
    if (was < 0 || add_ll(self->recovery, INA_NAME(queried), query - was) < 0
            || flight_set(flight, F_queried, Py_NewRef(query ? Py_True : Py_False)) < 0)
        return -1;
    PyObject *values = FLIGHT_GET(flight, F_payload), *payload;
    if (values == NULL || !PyBytes_Check(values) || PyBytes_GET_SIZE(values) < INA_HEADER_BYTES) {
        PyErr_SetString(PyExc_TypeError, "a Flight's payload must be an INA packet");
        return -1;
    }
    if (query) {                /* query_for: the header alone, kind QUERY, retx set */
        payload = PyBytes_FromStringAndSize(PyBytes_AS_STRING(values), INA_HEADER_BYTES);
        if (payload != NULL) PyBytes_AS_STRING(payload)[0] = INA_QUERY;
    } else {                    /* with_retx */
        payload = PyBytes_FromStringAndSize(PyBytes_AS_STRING(values),
                                            PyBytes_GET_SIZE(values));
    }
    if (payload == NULL) return -1;
    PyBytes_AS_STRING(payload)[1] |= INA_FLAG_RETX;
    return send_resent(self, payload, early ? INA_NAME(fast_retransmissions)
                                            : INA_NAME(timer_retransmissions), out);
}

static int resend_early(SessionRefs *self, PyObject *key, PyObject *flight, double now,
                        PyObject *out) {
    return resend_c(self, key, flight, now, 1, out);
}

/* `LossRecovery.on_nack(c, slot, ver, now)` in the data phase for a flight of hosts' Flight
 * class (its expiries in the doubling's range): the values again, once per QUERY; appended to
 * `out` */
static int on_nack_c(SessionRefs *self, PyObject *key, PyObject *flight, long slot, long ver,
                     double now, PyObject *out) {
    long long tries, fslot, fver;
    if (flight_ll(flight, F_slot, &fslot) < 0 || flight_ll(flight, F_ver, &fver) < 0)
        return -1;
    int queried = flight_truth(flight, F_queried);
    if (queried < 0) return -1;
    if (fslot != slot || fver != ver || !queried)
        return add_ll(self->counters, INA_NAME(duplicates_ignored), 1);
    if (add_ll(self->recovery, INA_NAME(queried), -1) < 0        /* set_queried(flight, False) */
            || flight_set(flight, F_queried, Py_NewRef(Py_False)) < 0
            || flight_ll(flight, F_tries, &tries) < 0
            || flight_set(flight, F_tries, PyLong_FromLongLong(tries + 1)) < 0
            || arm_c(self, key, flight, now) < 0)
        return -1;
    PyObject *values = FLIGHT_GET(flight, F_payload);
    if (values == NULL || !PyBytes_Check(values) || PyBytes_GET_SIZE(values) < INA_HEADER_BYTES) {
        PyErr_SetString(PyExc_TypeError, "a Flight's payload must be an INA packet");
        return -1;
    }
    PyObject *payload = PyBytes_FromStringAndSize(PyBytes_AS_STRING(values),
                                                  PyBytes_GET_SIZE(values));   /* with_retx */
    if (payload == NULL) return -1;
    PyBytes_AS_STRING(payload)[1] |= INA_FLAG_RETX;
    return send_resent(self, payload, INA_NAME(nack_retransmissions), out);
}

/* LossRecovery.arm(key, flight, now) of a data chunk (the flight's tries counted already) */
static int arm_c(SessionRefs *self, PyObject *key, PyObject *flight, double now) {
    long long expiries, slot, size;
    if (flight_ll(flight, F_expiries, &expiries) < 0 || flight_ll(flight, F_slot, &slot) < 0)
        return -1;
    double wait;
    if (!self->adaptive) {
        wait = self->fixed_rto * pow(2.0, (double)expiries);
        if (self->fixed_rto_max < wait) wait = self->fixed_rto_max;
    } else {        /* the path's estimator's timer(expiries + 1) */
        double rto, maximum;
        PyObject *est = path_of(self, slot) ? self->host_estimator : self->estimator;
        if (get_double(est, INA_NAME(_rto), &rto) < 0
                || get_double(est, INA_NAME(maximum), &maximum) < 0)
            return -1;
        wait = rto * pow(2.0, (double)expiries);
        if (maximum < wait) wait = maximum;
    }
    long long serial, sent;
    if (get_ll(self->events, INA_NAME(serial), &serial) < 0
            || set_ll(self->events, INA_NAME(serial), serial + 1) < 0
            || flight_set(flight, F_serial, PyLong_FromLongLong(serial + 1)) < 0
            || get_ll(self->window, INA_NAME(size), &size) < 0
            || get_ll(self->bursts, INA_NAME(_sent), &sent) < 0
            || set_ll(self->bursts, INA_NAME(_sent), sent + 1) < 0)
        return -1;
    if (sent + 1 >= size && ina_call_method(self->bursts, INA_NAME(window_ends), NULL, 0) < 0)
        return -1;
    double deadline = now + wait;
    long long tries;
    if (flight_set(flight, F_last_sent, PyFloat_FromDouble(now)) < 0
            || flight_set(flight, F_wait, PyFloat_FromDouble(wait)) < 0
            || flight_set(flight, F_deadline, PyFloat_FromDouble(deadline)) < 0
            || flight_ll(flight, F_tries, &tries) < 0
            || push_timer(self, deadline, key, tries, INA_RTO_TIMER) < 0)
        return -1;
    int tail = get_truth(self->recovery, INA_NAME(tail));
    if (tail < 0 || (tail && ina_call_method_double(self->recovery, INA_NAME(probe_tail), now) < 0))
        return -1;
    return 0;
}

/* a retransmission's payload (a new reference, stolen) into `out`, with its counts: every
 * recovery packet's, its kind's (`counter`) and `_count_sent`'s */
static int send_resent(SessionRefs *self, PyObject *payload, PyObject *counter, PyObject *out) {
    int r = PyList_Append(out, payload);
    Py_ssize_t bytes = PyBytes_GET_SIZE(payload);
    Py_DECREF(payload);
    if (r < 0 || add_ll(self->counters, INA_NAME(retransmissions), 1) < 0
            || add_ll(self->counters, counter, 1) < 0
            || add_ll(self->counters, INA_NAME(packets_sent), 1) < 0
            || add_ll(self->counters, INA_NAME(bytes_sent), bytes) < 0)
        return -1;
    return 0;
}

/* ---- an RTO timer's expiry (LossRecovery.expire's RTO step, SilenceRules.expiry) ---------- */

enum { RTO_HANDOVER, RTO_LATER, RTO_RESEND };

/* What `expire` does with the live RTO timer of data chunk `key` (its flight hosts' Flight),
 * due at `deadline`: `SilenceRules.expiry` (each path's earliest chunk cached in `heads`, new
 * references, as `expire`'s `heads`) and `_spent`. Changes nothing: RTO_LATER (the timer moves
 * to *later), RTO_RESEND (it expires), RTO_HANDOVER (the chunk is spent: PeerUnreachable,
 * Python's; or a flight not of hosts' class); -1 an error. */
static int rto_expiry_plan(SessionRefs *self, PyObject *key, long long k, PyObject *flight,
                           double deadline, double now, PyObject *in_flight, PyObject *heads[2],
                           double *later) {
    long long slot, expiries, window, data_results, lpc;
    if (flight_ll(flight, F_slot, &slot) < 0 || flight_ll(flight, F_expiries, &expiries) < 0)
        return -1;
    int path = path_of(self, slot);
    if (heads[path] == NULL) {      /* next(k for k, f in in_flight.items() if path matches) */
        Py_ssize_t pos = 0;
        PyObject *hk, *hf;
        while (PyDict_Next(in_flight, &pos, &hk, &hf)) {
            long long hs;
            if (Py_TYPE(hf) != flight_type) return RTO_HANDOVER;
            if (flight_ll(hf, F_slot, &hs) < 0) return -1;
            if (path_of(self, hs) == path) { heads[path] = Py_NewRef(hk); break; }
        }
        if (heads[path] == NULL) return RTO_HANDOVER;
    }
    int is_head = int_compare(heads[path], key, Py_EQ);
    if (is_head < 0) return -1;
    if (self->adaptive) {
        if (get_ll(self->window, INA_NAME(size), &window) < 0) return -1;
    } else {
        window = self->fixed_window;
    }
    if (get_ll(self->silence, INA_NAME(data_results), &data_results) < 0
            || get_ll(self->silence, INA_NAME(last_progress_chunk), &lpc) < 0)
        return -1;
    double last_progress;
    if (get_double(self->silence, INA_NAME(last_progress), &last_progress) < 0) return -1;
    if (!is_head && data_results) {
        long long loss_events, packets_sent;
        if (get_ll(self->counters, INA_NAME(loss_events), &loss_events) < 0
                || get_ll(self->counters, INA_NAME(packets_sent), &packets_sent) < 0)
            return -1;
        if ((double)(loss_events * window) < 1.0 * (double)packets_sent) {   /* PROBE_LOSSES */
            PyObject *first = PyDict_GetItemWithError(in_flight, heads[path]);
            if (first == NULL) { if (PyErr_Occurred()) return -1; return RTO_HANDOVER; }
            if (Py_TYPE(first) != flight_type) return RTO_HANDOVER;
            long long first_expiries;
            double first_sent, first_deadline;
            if (flight_ll(first, F_expiries, &first_expiries) < 0
                    || flight_double(first, F_last_sent, &first_sent) < 0
                    || flight_double(first, F_deadline, &first_deadline) < 0)
                return -1;
            if (first_expiries < 2 /* HEAD_EXPIRIES_FIRST */
                    && (first_expiries || lpc < 0 || first_sent <= last_progress)) {
                double wait = self->fixed_wait;
                if (self->adaptive && get_double(path_of(self, slot) ? self->host_estimator
                                                 : self->estimator,
                                                 INA_NAME(first_timer), &wait) < 0)
                    return -1;
                double again = now + wait;
                *later = now < first_deadline && first_deadline < again ? first_deadline : again;
                return *later > now ? RTO_LATER : RTO_RESEND;   /* (not the head: not spent) */
            }
        }
    }
    /* SilenceRules._due */
    double lps, own_sent, own_wait, due = deadline;
    if (get_double(self->silence, INA_NAME(last_progress_sent), &lps) < 0
            || flight_double(flight, F_last_sent, &own_sent) < 0
            || flight_double(flight, F_wait, &own_wait) < 0)
        return -1;
    if ((is_head && lpc < k) || lps <= own_sent) {
        double restart = last_progress + own_wait;
        if (restart > due) due = restart;
    }
    if (expiries == 0 && lpc < 0) {
        PyObject *start = attr_get(self->silence, INA_NAME(data_start));
        if (start == NULL) return -1;
        if (start != Py_None) {
            double data_start = PyFloat_AsDouble(start), wait;
            Py_DECREF(start);
            if (data_start == -1.0 && PyErr_Occurred()) return -1;
            if (get_double(self->silence, INA_NAME(max_round_trip), &wait) < 0) return -1;
            PyObject *be = attr_get(self->silence, INA_NAME(barrier_estimator));
            if (be == NULL) return -1;
            long long samples;
            double be_rto;
            int bad = Py_TYPE(be) != rto_estimator_type
                || get_ll(be, INA_NAME(samples), &samples) < 0
                || get_double(be, INA_NAME(_rto), &be_rto) < 0;
            Py_DECREF(be);
            if (bad) { if (PyErr_Occurred()) return -1; return RTO_HANDOVER; }
            if (samples && be_rto > wait) wait = be_rto;
            double barrier = data_start + wait;
            if (barrier > due) due = barrier;
        } else {
            Py_DECREF(start);
        }
    }
    *later = due;
    if (due > now) return RTO_LATER;
    if (is_head && expiries >= self->max_retx) return RTO_HANDOVER;      /* _spent */
    return RTO_RESEND;
}

/* carry out a plan of rto_expiry_plan for the popped entry (key, tries) */
static int rto_expiry_apply(SessionRefs *self, int plan, PyObject *key, PyObject *flight,
                            long long tries, double later, double now, PyObject *out) {
    if (plan == RTO_LATER)
        return flight_set(flight, F_deadline, PyFloat_FromDouble(later)) < 0
            || push_timer(self, later, key, tries, INA_RTO_TIMER) < 0 ? -1 : 0;
    long long expiries;
    if (flight_ll(flight, F_expiries, &expiries) < 0
            || flight_set(flight, F_expiries, PyLong_FromLongLong(expiries + 1)) < 0)
        return -1;
    return resend_c(self, key, flight, now, 0, out);
}

/* `LossRecovery.detect_losses(chunk, answered, now)` (hosts/ina_recovery.py, in its order),
 * the payloads appended to `out`: 1 done; 0 not this case (nothing changed: a flight not of
 * hosts' Flight class, a MAX round's or a non-int key, an expiry count beyond the doubling's
 * range), which the caller gives to the Python method; -1 an error. `answered` has left the
 * flight table. */
static int detect_losses_c(SessionRefs *self, PyObject *in_flight, long long chunk,
                           PyObject *answered, double now, PyObject *out) {
    if (!self->c_recovery || Py_TYPE(answered) != flight_type || !PyDict_CheckExact(in_flight))
        return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *flight;
    while (PyDict_Next(in_flight, &pos, &key, &flight)) {  /* this case? (nothing changes) */
        if (!PyLong_CheckExact(key)) return 0;
        long long k = PyLong_AsLongLong(key), expiries;
        if (k == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (k >= chunk) break;
        if (k < 0 || Py_TYPE(flight) != flight_type) return 0;
        if (flight_ll(flight, F_expiries, &expiries) < 0) return -1;
        if (expiries < 0 || expiries > 1000) return 0;
    }
    double answered_sent, allowance = 0.0;
    long long answered_slot;
    if (flight_double(answered, F_last_sent, &answered_sent) < 0
            || flight_ll(answered, F_slot, &answered_slot) < 0)
        return -1;
    double rtt = now - answered_sent;
    int path = path_of(self, answered_slot);
    PyObject *min_rtt = attr_get(path ? self->host_estimator : self->estimator,
                                         INA_NAME(min_rtt));
    if (min_rtt == NULL) return -1;
    if (min_rtt != Py_None) allowance = PyFloat_AsDouble(min_rtt);
    Py_DECREF(min_rtt);
    if (allowance == -1.0 && PyErr_Occurred()) return -1;
    allowance = rounded(0.25 * allowance);           /* REORDER_FRACTION * (min_rtt or 0.0) */
    pos = 0;
    while (PyDict_Next(in_flight, &pos, &key, &flight)) {  /* in first-send (= chunk) order */
        long long k = PyLong_AsLongLong(key), slot, tries;
        if (k >= chunk) break;
        double last_sent;
        if (flight_ll(flight, F_slot, &slot) < 0) return -1;
        if (path_of(self, slot) != path) continue;
        int suspect = flight_truth(flight, F_suspect);
        if (suspect < 0 || flight_ll(flight, F_tries, &tries) < 0
                || flight_double(flight, F_last_sent, &last_sent) < 0)
            return -1;
        if (suspect || (tries > 1 && last_sent >= answered_sent)) continue;
        double due = last_sent + rtt;
        due = due + allowance;
        if (due <= now) {
            if (resend_early(self, key, flight, now, out) < 0) return -1;
        } else {
            if (flight_set(flight, F_suspect, Py_NewRef(Py_True)) < 0
                    || push_timer(self, due, key, tries, INA_REORDER_TIMER) < 0)
                return -1;
        }
    }
    return 1;
}

/* ---- FloatCodec.store ------------------------------------------------------------------------ */

/* `codec.store(chunk, payload)` (hosts/ina_codec.py, whose result side this mirrors: a change
 * there is a change here): the RESULT's lanes, as they are, into the chunk's row of the
 * call's wire sums (streamed: of its block's, or the job's lanes kept once, joblanes.c), and
 * a block whose last RESULT this is dequantized by the codec's Python `_dequantize_rows` */
static int codec_store(PyObject *codec, PyObject *key, unsigned long chunk,
                       const unsigned char *payload, Py_ssize_t payload_size) {
    Py_ssize_t size = payload_size - INA_HEADER_BYTES;
    const unsigned char *lanes_in = payload + INA_HEADER_BYTES;
    PyObject *sink = attr_get(codec, INA_NAME(_sink)), *pending = NULL, *target = NULL;
    if (sink == NULL) return -1;
    int r = -1;
    long long rows = 0;
    PyObject *job_lanes = NULL;
    if (sink != Py_None) {      /* streamed: row chunk % rows of block chunk / rows */
        long long chunks;
        if (get_ll(codec, INA_NAME(_sum_rows), &rows) < 0
                || get_ll(codec, INA_NAME(chunks), &chunks) < 0
                || (job_lanes = attr_get(codec, INA_NAME(_job_lanes))) == NULL)
            goto done;
        long long block = (long long)chunk / rows, first = block * rows;
        long long in_block = chunks - first < rows ? chunks - first : rows;
        if (job_lanes != Py_None) {
            /* the job's lanes kept once (joblanes.c): (its JobLanes, this worker's index) */
            if (!PyTuple_CheckExact(job_lanes) || PyTuple_GET_SIZE(job_lanes) != 2
                    || !Py_IS_TYPE(PyTuple_GET_ITEM(job_lanes, 0), &JobLanesType)) {
                PyErr_SetString(PyExc_TypeError, "_job_lanes must be (JobLanes, index)");
                goto done;
            }
            long long index = PyLong_AsLongLong(PyTuple_GET_ITEM(job_lanes, 1));
            if ((index == -1 && PyErr_Occurred())
                    || job_lanes_store((JobLanes *)PyTuple_GET_ITEM(job_lanes, 0), index,
                                       block, (long long)chunk - first, in_block,
                                       (const char *)lanes_in, size) < 0)
                goto done;
        } else {                /* the codec's own copy of the block */
            PyObject *sums = attr_get(codec, INA_NAME(_block_sums));
            if (sums == NULL) goto done;
            PyObject *block_key = PyLong_FromLongLong(block);
            if (block_key == NULL || !PyDict_Check(sums)) {
                if (block_key != NULL)
                    PyErr_SetString(PyExc_TypeError, "_block_sums must be a dict");
                Py_XDECREF(block_key); Py_DECREF(sums); goto done;
            }
            target = PyDict_GetItemWithError(sums, block_key);
            if (target != NULL) {
                Py_INCREF(target);
            } else if (!PyErr_Occurred()) {
                target = PyByteArray_FromStringAndSize(NULL, in_block * size);
                if (target != NULL) {
                    memset(PyByteArray_AS_STRING(target), 0, PyByteArray_GET_SIZE(target));
                    if (PyDict_SetItem(sums, block_key, target) < 0) Py_CLEAR(target);
                }
            }
            Py_DECREF(block_key);
            Py_DECREF(sums);
            if (target == NULL) goto done;
            Py_ssize_t at = (Py_ssize_t)(chunk - first) * size;
            if (!PyByteArray_Check(target) || at + size > PyByteArray_GET_SIZE(target)) {
                PyErr_SetString(PyExc_ValueError, "a block's lanes do not hold the chunk");
                goto done;
            }
            memcpy(PyByteArray_AS_STRING(target) + at, lanes_in, size);
        }
    } else {
        if ((target = attr_get(codec, INA_NAME(_wire_sums))) == NULL) goto done;
        Py_buffer view;
        if (PyObject_GetBuffer(target, &view, PyBUF_WRITABLE) < 0) goto done;
        Py_ssize_t at = (Py_ssize_t)chunk * size;
        if (at + size > view.len) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "the wire sums do not hold the chunk");
            goto done;
        }
        memcpy((char *)view.buf + at, lanes_in, size);
        PyBuffer_Release(&view);
    }
    if ((pending = attr_get(codec, INA_NAME(_pending))) == NULL) goto done;
    if (pending != Py_None) {
        if (sink == Py_None && get_ll(codec, INA_NAME(_sum_rows), &rows) < 0) goto done;
        Py_ssize_t block = (Py_ssize_t)((long long)chunk / rows);
        if (!PyList_Check(pending) || block >= PyList_GET_SIZE(pending)) {
            PyErr_SetString(PyExc_TypeError, "_pending must be a list over the blocks");
            goto done;
        }
        long long left = PyLong_AsLongLong(PyList_GET_ITEM(pending, block)) - 1;
        if (left == -2 && PyErr_Occurred()) goto done;
        PyObject *left_obj = PyLong_FromLongLong(left);
        if (left_obj == NULL || PyList_SetItem(pending, block, left_obj) < 0) goto done;
        if (!left) {
            PyObject *block_obj = PyLong_FromSsize_t(block);
            if (block_obj == NULL) goto done;
            int called = ina_call_method(codec, INA_NAME(_dequantize_rows), &block_obj, 1);
            Py_DECREF(block_obj);
            if (called < 0) goto done;
        }
    }
    r = 0;
done:
    Py_DECREF(sink);
    Py_XDECREF(job_lanes);
    Py_XDECREF(pending);
    Py_XDECREF(target);
    return r;
}

/* ---- LossRecovery.next_deadline ------------------------------------------------------------ */

/* whether the heap's entry `e` is live (LossRecovery.next_deadline's test): its chunk still in
   flight (`flight`, borrowed, or NULL) with the tries it was armed for, a reorder timer's chunk
   still suspect; a tail probe the latest armed while the call is in its tail. 1, 0 or -1. */
static int timer_live(SessionRefs *self, const TimerEntry *e, PyObject *flight) {
    if (flight == NULL) return 0;
    long long now_tries;
    if (e->kind == INA_TAIL_TIMER) {
        if (get_ll(self->recovery, INA_NAME(_tail_serial), &now_tries) < 0) return -1;
        if (now_tries != e->tries) return 0;
        return get_truth(self->recovery, INA_NAME(tail));
    }
    PyObject *v = flight_attr(flight, F_tries, INA_NAME(tries));
    if (v == NULL) return -1;
    now_tries = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (now_tries == -1 && PyErr_Occurred()) return -1;
    if (now_tries != e->tries) return 0;
    if (e->kind == INA_RTO_TIMER) return 1;
    if ((v = flight_attr(flight, F_suspect, INA_NAME(suspect))) == NULL) return -1;
    int suspect = PyObject_IsTrue(v);
    Py_DECREF(v);
    return suspect;
}

/* the deadline (a new reference: a float, or None): stale entries at the top popped */
static PyObject *next_deadline(SessionRefs *self) {
    PyObject *timers = attr_get(self->recovery, INA_NAME(timers));
    if (timers == NULL) return NULL;
    if (Py_TYPE(timers) != &TimerHeapType) {      /* another heap: the Python method */
        Py_DECREF(timers);
        return PyObject_CallMethodNoArgs(self->recovery, INA_NAME(next_deadline));
    }
    TimerHeapObject *heap = (TimerHeapObject *)timers;
    PyObject *in_flight = attr_get(self->session, INA_NAME(_in_flight)), *result = NULL;
    if (in_flight == NULL) { Py_DECREF(timers); return NULL; }
    if (!PyDict_Check(in_flight)) {
        PyErr_SetString(PyExc_TypeError, "the session's flight table must be a dict");
        goto done;
    }
    const TimerEntry *e;
    while ((e = timer_heap_top(heap)) != NULL) {
        PyObject *flight = PyDict_GetItemWithError(in_flight, e->key_obj);
        if (flight == NULL && PyErr_Occurred()) goto done;
        int live = timer_live(self, e, flight);
        if (live < 0) goto done;
        if (live) { result = PyFloat_FromDouble(e->deadline); goto done; }
        TimerEntry stale;
        timer_heap_pop(heap, &stale);
        Py_DECREF(stale.key_obj);
    }
    result = Py_NewRef(Py_None);
done:
    Py_DECREF(timers);
    Py_DECREF(in_flight);
    return result;
}

static int ina_session_module_init(void) {
    for (int i = 0; i < N_COUNT; i++)
        if ((ina_names[i] = PyUnicode_InternFromString(ina_name_text[i])) == NULL) return -1;
    PyObject *state = PyImport_ImportModule("hosts.ina_state");
    if (state == NULL) return -1;
    PyObject *flight = PyObject_GetAttrString(state, "Flight");
    PyObject *states = PyObject_GetAttrString(state, "State");
    Py_DECREF(state);
    if (flight == NULL || states == NULL) { Py_XDECREF(flight); Py_XDECREF(states); return -1; }
    state_data = PyObject_GetAttrString(states, "DATA");
    Py_DECREF(states);
    if (state_data == NULL) { Py_DECREF(flight); return -1; }
    if (!PyType_Check(flight)) {
        Py_DECREF(flight);
        PyErr_SetString(PyExc_TypeError, "hosts.ina_state.Flight must be a class");
        return -1;
    }
    flight_type = (PyTypeObject *)flight;
    /* its slots, by name, must be the ones written here (a changed Flight fails loudly) */
    if (slot_offsets(flight, flight_slot_text, FLIGHT_SLOTS, flight_offset,
                     "hosts.ina_state.Flight") < 0)
        return -1;
    flight_recycling = flight_type->tp_dictoffset == 0 && flight_type->tp_weaklistoffset == 0
                       && flight_type->tp_finalize == NULL && flight_type->tp_del == NULL;
    struct { const char *module, *name; PyTypeObject **type; } classes[] = {
        {"hosts.congestion", "RtoEstimator", &rto_estimator_type},
        {"hosts.congestion", "InFlightWindow", &in_flight_window_type},
        {"hosts.congestion", "CongestionEvents", &congestion_events_type},
        {"hosts.congestion", "LossBursts", &loss_bursts_type},
        {"hosts.ina_recovery", "LossRecovery", &loss_recovery_type},
        {"hosts.errors", "HostError", (PyTypeObject **)&host_error_type},
    };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        PyObject *module = PyImport_ImportModule(classes[i].module);
        if (module == NULL) return -1;
        PyObject *cls = PyObject_GetAttrString(module, classes[i].name);
        Py_DECREF(module);
        if (cls == NULL) return -1;
        if (!PyType_Check(cls)) {
            Py_DECREF(cls);
            PyErr_Format(PyExc_TypeError, "%s.%s must be a class", classes[i].module,
                         classes[i].name);
            return -1;
        }
        *classes[i].type = (PyTypeObject *)cls;
    }
    py_udp_port = PyLong_FromLong(INA_UDP_PORT);
    py_zero = PyLong_FromLong(0);
    py_one = PyLong_FromLong(1);
    py_rto_timer = PyLong_FromLong(INA_RTO_TIMER);
    if (py_udp_port == NULL || py_zero == NULL
            || py_one == NULL || py_rto_timer == NULL)
        return -1;
    return 0;
}
