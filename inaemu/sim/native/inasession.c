/* An INA session's per-result steps in C, on the Python session's own objects, for the native
 * core's INA worker (inaworker.c): hosts/ina_session.py's `_fill_window` (the window refill:
 * payloads from the encoder's table rows, Flight objects, the recovery's timer heap,
 * congestion serials and loss-burst counts), hosts/ina_codec.py's `store` (`codec_store`)
 * and hosts/ina_recovery.py's `next_deadline`, each what the Python one does, in its order.
 * The state stays in the Python objects (nothing is kept here between calls); what another
 * module defines is called there (the estimators' `first_timer` is read at each refill, the
 * encoder's `table_rows()` and `contribution()`, the loss bursts' `window_ends`, the
 * recovery's `probe_tail`). tests/sim/test_native_ina.py checks it against the Python core.
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
#define INA_TAIL_TIMER 2
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
    N_store, N__next_chunk, N_tail, N_probe_tail, N_table_rows, N_contribution, N_timers,
    N_events, N_loss_bursts, N_first_timer, N_next_position, N_serial, N__sent,
    N_window_ends, N_packets_sent, N_bytes_sent, N__tail_serial, N_suspect, N__ident,
    N_deadline, N__event, N_action, N_time, N_set, N_uplink, N_alive, N_detect_losses,
    N__sink, N__sum_rows, N__block_sums, N__wire_sums, N__pending, N__dequantize_rows,
    N_set_queried, N_spurious_timeout, N_spurious_timeouts,
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
    "store", "_next_chunk", "tail", "probe_tail", "table_rows", "contribution", "timers",
    "events", "loss_bursts", "first_timer", "next_position", "serial", "_sent",
    "window_ends", "packets_sent", "bytes_sent", "_tail_serial", "suspect", "_ident",
    "deadline", "_event", "action", "time", "set", "uplink", "alive", "detect_losses",
    "_sink", "_sum_rows", "_block_sums", "_wire_sums", "_pending", "_dequantize_rows",
    "set_queried", "spurious_timeout", "spurious_timeouts",
};
static PyObject *ina_names[N_COUNT];
#define INA_NAME(id) ina_names[N_##id]

/* hosts.ina_state's Flight: its slots, written directly (a Flight made per chunk sent) */
static const char *flight_slot_text[] = {
    "payload", "slot", "ver", "tries", "deadline", "sent_at", "serial", "last_sent",
    "expiries", "suspect", "wait", "queried", "tail_probes",
};
#define FLIGHT_SLOTS 13
static PyTypeObject *flight_type;
static Py_ssize_t flight_offset[FLIGHT_SLOTS];
static PyObject *state_data;            /* hosts.ina_state.State.DATA */
static PyObject *heap_push, *heap_pop;  /* heapq's (C functions) */
static PyObject *py_udp_port, *py_zero, *py_one, *py_rto_timer;

/* A session and its collaborators (made once in its __init__), and its fixed parameters:
 * what the per-result steps read and write, on the Python objects themselves */
typedef struct {
    PyObject *session, *counters, *recovery, *silence, *window, *estimator, *host_estimator;
    PyObject *host_of;      /* the paths' bytearray: 1 for a host aggregator's slot */
    long job, wid, n, pool, format_bits;
    Py_ssize_t result_bytes;
    int adaptive, fast_retransmit, job_scaling, granted;
    long fixed_window;
    double fixed_wait;
} SessionRefs;

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
    if ((self->counters = PyObject_GetAttr(session, INA_NAME(counters))) == NULL
            || (self->recovery = PyObject_GetAttr(session, INA_NAME(_recovery))) == NULL
            || (self->silence = PyObject_GetAttr(session, INA_NAME(_silence))) == NULL
            || (self->window = PyObject_GetAttr(session, INA_NAME(in_flight_window))) == NULL
            || (self->estimator = PyObject_GetAttr(session, INA_NAME(rto_estimator))) == NULL
            || (self->host_estimator = PyObject_GetAttr(session, INA_NAME(host_rto_estimator)))
                == NULL
            || (paths = PyObject_GetAttr(session, INA_NAME(_paths))) == NULL
            || (self->host_of = PyObject_GetAttr(paths, INA_NAME(host))) == NULL)
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
    if ((v = PyObject_GetAttr(session, INA_NAME(adaptive))) == NULL) goto fail;
    self->adaptive = PyObject_IsTrue(v);
    Py_CLEAR(v);
    if ((v = PyObject_GetAttr(session, INA_NAME(fast_retransmit))) == NULL) goto fail;
    self->fast_retransmit = PyObject_IsTrue(v);
    Py_CLEAR(v);
    if ((v = PyObject_GetAttr(session, INA_NAME(scaling))) == NULL) goto fail;
    self->job_scaling = PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "job") == 0;
    Py_CLEAR(v);
    if ((v = PyObject_GetAttr(session, INA_NAME(_granted))) == NULL) goto fail;
    self->granted = v != Py_None;           /* hashed sharing: the general path */
    Py_CLEAR(v);
    if (self->adaptive < 0 || self->fast_retransmit < 0) goto fail;
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
    return 0;
}

static void session_refs_clear(SessionRefs *self) {
    Py_CLEAR(self->session); Py_CLEAR(self->counters); Py_CLEAR(self->recovery);
    Py_CLEAR(self->silence); Py_CLEAR(self->window); Py_CLEAR(self->estimator);
    Py_CLEAR(self->host_estimator); Py_CLEAR(self->host_of);
}

/* ---- _fill_window ------------------------------------------------------------------------- */

static PyObject *new_flight(PyObject *payload, long slot, long ver, double deadline,
                            double now, PyObject *serial, double wait) {
    PyObject *f = flight_type->tp_alloc(flight_type, 0);
    if (f == NULL) return NULL;
    PyObject *values[FLIGHT_SLOTS];
    values[0] = Py_NewRef(payload);
    values[1] = PyLong_FromLong(slot);
    values[2] = PyLong_FromLong(ver);
    values[3] = Py_NewRef(py_one);
    values[4] = PyFloat_FromDouble(deadline);
    values[5] = PyFloat_FromDouble(now);
    values[6] = Py_NewRef(serial);
    values[7] = PyFloat_FromDouble(now);
    values[8] = Py_NewRef(py_zero);
    values[9] = Py_NewRef(Py_False);
    values[10] = PyFloat_FromDouble(wait);
    values[11] = Py_NewRef(Py_False);
    values[12] = Py_NewRef(py_zero);
    int ok = 1;
    for (int i = 0; i < FLIGHT_SLOTS; i++) {
        if (values[i] == NULL) ok = 0;
        *(PyObject **)((char *)f + flight_offset[i]) = values[i];
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
        if (PyObject_SetAttr(recovery, INA_NAME(tail), Py_True) < 0) return -1;
        return ina_call_method_double(recovery, INA_NAME(probe_tail), now);
    }
    if (PyObject_SetAttr(recovery, INA_NAME(tail), Py_False) < 0) return -1;
    PyObject *in_flight = PyObject_GetAttr(session, INA_NAME(_in_flight));
    if (in_flight == NULL) return -1;
    long long room = window - PyObject_Length(in_flight);
    if (room <= 0) { Py_DECREF(in_flight); return 0; }
    int r = -1;
    PyObject *encoder = NULL, *answered = NULL, *rows = NULL, *timers = NULL, *events = NULL;
    PyObject *bursts = NULL, *payload = NULL;
    Py_buffer table = {0};
    long long size = 0, base = 0, ready = 0, bursts_window, sent = 0;
    double switch_wait, host_wait;
    if ((encoder = PyObject_GetAttr(session, INA_NAME(_encoder))) == NULL
            || (answered = PyObject_GetAttr(session, INA_NAME(_answered))) == NULL
            || (timers = PyObject_GetAttr(recovery, INA_NAME(timers))) == NULL
            || (events = PyObject_GetAttr(recovery, INA_NAME(events))) == NULL
            || (bursts = PyObject_GetAttr(recovery, INA_NAME(loss_bursts))) == NULL
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
        rows = PyObject_CallMethodNoArgs(encoder, INA_NAME(table_rows)); \
        if (rows == NULL) goto done; \
        if (!PyTuple_Check(rows) || PyTuple_GET_SIZE(rows) != 4) { \
            PyErr_SetString(PyExc_TypeError, "table_rows() must give 4 items"); goto done; } \
        size = PyLong_AsLongLong(PyTuple_GET_ITEM(rows, 1)); \
        base = PyLong_AsLongLong(PyTuple_GET_ITEM(rows, 2)); \
        ready = PyLong_AsLongLong(PyTuple_GET_ITEM(rows, 3)); \
        if (PyErr_Occurred()) goto done; \
        if (PyTuple_GET_ITEM(rows, 0) != Py_None \
                && PyObject_GetBuffer(PyTuple_GET_ITEM(rows, 0), &table, PyBUF_SIMPLE) < 0) \
            goto done; \
    } while (0)
    TABLE_ROWS();
    long long position = next_position + c, first = c, sent_bytes = 0;
    const unsigned char *host_of = (const unsigned char *)PyByteArray_AS_STRING(self->host_of);
    Py_ssize_t host_len = PyByteArray_GET_SIZE(self->host_of);
    while (c < chunks && room > 0
           && (c < pool || PyByteArray_AS_STRING(answered)[c - pool])) {
        long slot = (long)(position % pool), ver = (long)((position / pool) % 2);
        if (c < ready && table.obj != NULL) {
            payload = PyBytes_FromStringAndSize((const char *)table.buf + (c - base) * size,
                                                size);
        } else {
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
        long long serial;
        if (get_ll(events, INA_NAME(serial), &serial) < 0) goto done;
        PyObject *serial_obj = PyLong_FromLongLong(serial + 1);
        if (serial_obj == NULL) goto done;
        if (PyObject_SetAttr(events, INA_NAME(serial), serial_obj) < 0) {
            Py_DECREF(serial_obj); goto done;
        }
        double deadline = now + wait;
        PyObject *flight = new_flight(payload, slot, ver, deadline, now, serial_obj, wait);
        Py_DECREF(serial_obj);
        if (flight == NULL) goto done;
        PyObject *key = PyLong_FromLongLong(c);
        if (key == NULL) { Py_DECREF(flight); goto done; }
        int set = PyObject_SetItem(in_flight, key, flight);
        Py_DECREF(flight);
        if (set < 0) { Py_DECREF(key); goto done; }
        if (get_ll(bursts, INA_NAME(_sent), &sent) < 0
                || set_ll(bursts, INA_NAME(_sent), sent + 1) < 0) {
            Py_DECREF(key); goto done;
        }
        if (sent + 1 >= bursts_window) {
            PyObject *rr = PyObject_CallMethodNoArgs(bursts, INA_NAME(window_ends));
            if (rr == NULL) { Py_DECREF(key); goto done; }
            Py_DECREF(rr);
        }
        PyObject *deadline_obj = PyFloat_FromDouble(deadline);
        PyObject *entry = deadline_obj ? PyTuple_Pack(4, deadline_obj, key, py_one,
                                                      py_rto_timer) : NULL;
        Py_XDECREF(deadline_obj);
        Py_DECREF(key);
        if (entry == NULL) goto done;
        PyObject *pushed = PyObject_Vectorcall(heap_push, (PyObject *[]){timers, entry}, 2,
                                               NULL);
        Py_DECREF(entry);
        if (pushed == NULL) goto done;
        Py_DECREF(pushed);
        sent_bytes += PyBytes_GET_SIZE(payload);
        if (PyList_Append(out, payload) < 0) goto done;
        Py_CLEAR(payload);
        c++;
        room--;
        position++;
    }
    if (set_ll(session, INA_NAME(_next_chunk), c) < 0
            || add_ll(self->counters, INA_NAME(packets_sent), c - first) < 0
            || add_ll(self->counters, INA_NAME(bytes_sent), sent_bytes) < 0)
        goto done;
    if (c >= chunks) {
        if (PyObject_SetAttr(recovery, INA_NAME(tail), Py_True) < 0
                || ina_call_method_double(recovery, INA_NAME(probe_tail), now) < 0)
            goto done;
    }
    r = 0;
#undef TABLE_ROWS
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

/* ---- FloatCodec.store ------------------------------------------------------------------------ */

/* `codec.store(chunk, payload)` (hosts/ina_codec.py, whose result side this mirrors: a change
 * there is a change here): the RESULT's lanes, as they are, into the chunk's row of the
 * call's wire sums (streamed: of its block's), and a block whose last RESULT this is
 * dequantized by the codec's Python `_dequantize_rows` */
static int codec_store(PyObject *codec, PyObject *key, unsigned long chunk, PyObject *payload) {
    Py_ssize_t size = PyBytes_GET_SIZE(payload) - INA_HEADER_BYTES;
    const char *lanes_in = PyBytes_AS_STRING(payload) + INA_HEADER_BYTES;
    PyObject *sink = PyObject_GetAttr(codec, INA_NAME(_sink)), *pending = NULL, *target = NULL;
    if (sink == NULL) return -1;
    int r = -1;
    long long rows = 0;
    if (sink != Py_None) {
        long long chunks;
        if (get_ll(codec, INA_NAME(_sum_rows), &rows) < 0
                || get_ll(codec, INA_NAME(chunks), &chunks) < 0)
            goto done;
        PyObject *sums = PyObject_GetAttr(codec, INA_NAME(_block_sums));
        if (sums == NULL) goto done;
        PyObject *block = PyLong_FromLongLong((long long)chunk / rows);
        if (block == NULL || !PyDict_Check(sums)) {
            if (block != NULL) PyErr_SetString(PyExc_TypeError, "_block_sums must be a dict");
            Py_XDECREF(block); Py_DECREF(sums); goto done;
        }
        target = PyDict_GetItemWithError(sums, block);
        if (target != NULL) {
            Py_INCREF(target);
        } else if (!PyErr_Occurred()) {
            long long first = (long long)chunk / rows * rows, count = chunks - first;
            target = PyByteArray_FromStringAndSize(NULL, (count < rows ? count : rows) * size);
            if (target != NULL) {
                memset(PyByteArray_AS_STRING(target), 0, PyByteArray_GET_SIZE(target));
                if (PyDict_SetItem(sums, block, target) < 0) Py_CLEAR(target);
            }
        }
        Py_DECREF(block);
        Py_DECREF(sums);
        if (target == NULL) goto done;
        Py_ssize_t at = (Py_ssize_t)((long long)chunk % rows) * size;
        if (!PyByteArray_Check(target) || at + size > PyByteArray_GET_SIZE(target)) {
            PyErr_SetString(PyExc_ValueError, "a block's lanes do not hold the chunk");
            goto done;
        }
        memcpy(PyByteArray_AS_STRING(target) + at, lanes_in, size);
    } else {
        if ((target = PyObject_GetAttr(codec, INA_NAME(_wire_sums))) == NULL) goto done;
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
    if ((pending = PyObject_GetAttr(codec, INA_NAME(_pending))) == NULL) goto done;
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
    Py_XDECREF(pending);
    Py_XDECREF(target);
    return r;
}

/* ---- LossRecovery.next_deadline ------------------------------------------------------------ */

/* the deadline (a new reference: a float, or None) */
static PyObject *next_deadline(SessionRefs *self) {
    PyObject *timers = PyObject_GetAttr(self->recovery, INA_NAME(timers));
    if (timers == NULL) return NULL;
    PyObject *in_flight = PyObject_GetAttr(self->session, INA_NAME(_in_flight)), *result = NULL;
    if (in_flight == NULL) { Py_DECREF(timers); return NULL; }
    if (!PyList_Check(timers) || !PyDict_Check(in_flight)) {
        PyErr_SetString(PyExc_TypeError, "the recovery's timers must be a list");
        goto done;
    }
    while (PyList_GET_SIZE(timers)) {
        PyObject *entry = PyList_GET_ITEM(timers, 0);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
            PyErr_SetString(PyExc_TypeError, "a timer entry must be (deadline, key, tries, kind)");
            goto done;
        }
        PyObject *deadline = PyTuple_GET_ITEM(entry, 0), *key = PyTuple_GET_ITEM(entry, 1);
        PyObject *tries = PyTuple_GET_ITEM(entry, 2);
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(entry, 3));
        if (kind == -1 && PyErr_Occurred()) goto done;
        PyObject *flight = PyDict_GetItemWithError(in_flight, key);
        if (flight == NULL && PyErr_Occurred()) goto done;
        int live = 0;
        if (flight != NULL) {
            PyObject *v = NULL, *tail = NULL;
            if (kind == INA_TAIL_TIMER) {
                if ((v = PyObject_GetAttr(self->recovery, INA_NAME(_tail_serial))) == NULL
                        || (tail = PyObject_GetAttr(self->recovery, INA_NAME(tail))) == NULL) {
                    Py_XDECREF(v); goto done;
                }
                int same = PyObject_RichCompareBool(tries, v, Py_EQ);
                int on = same > 0 ? PyObject_IsTrue(tail) : 0;
                Py_DECREF(v); Py_DECREF(tail);
                if (same < 0 || on < 0) goto done;
                live = on;
            } else {
                if ((v = PyObject_GetAttr(flight, INA_NAME(tries))) == NULL) goto done;
                int same = PyObject_RichCompareBool(v, tries, Py_EQ);
                Py_DECREF(v);
                if (same < 0) goto done;
                if (same && kind != INA_RTO_TIMER) {
                    if ((v = PyObject_GetAttr(flight, INA_NAME(suspect))) == NULL) goto done;
                    same = PyObject_IsTrue(v);
                    Py_DECREF(v);
                    if (same < 0) goto done;
                }
                live = same;
            }
        }
        if (live) { result = Py_NewRef(deadline); goto done; }
        PyObject *popped = PyObject_Vectorcall(heap_pop, &timers, 1, NULL);
        if (popped == NULL) goto done;
        Py_DECREF(popped);
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
    PyObject *slots = PyObject_GetAttrString(flight, "__slots__");
    if (slots == NULL) return -1;
    int same = PyTuple_Check(slots) && PyTuple_GET_SIZE(slots) == FLIGHT_SLOTS;
    for (int i = 0; same && i < FLIGHT_SLOTS; i++)
        same = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(slots, i),
                                                flight_slot_text[i]) == 0;
    Py_DECREF(slots);
    if (!same) {
        PyErr_SetString(PyExc_TypeError, "hosts.ina_state.Flight's slots are not the ones "
                        "inaemu/sim/native/inaworker.c writes");
        return -1;
    }
    for (int i = 0; i < FLIGHT_SLOTS; i++) {
        PyObject *descr = PyObject_GetAttrString(flight, flight_slot_text[i]);
        if (descr == NULL) return -1;
        if (Py_TYPE(descr) != &PyMemberDescr_Type) {
            Py_DECREF(descr);
            PyErr_SetString(PyExc_TypeError, "a Flight slot is not a member descriptor");
            return -1;
        }
        flight_offset[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
    }
    PyObject *heapq = PyImport_ImportModule("heapq");
    if (heapq == NULL) return -1;
    heap_push = PyObject_GetAttrString(heapq, "heappush");
    heap_pop = PyObject_GetAttrString(heapq, "heappop");
    Py_DECREF(heapq);
    py_udp_port = PyLong_FromLong(INA_UDP_PORT);
    py_zero = PyLong_FromLong(0);
    py_one = PyLong_FromLong(1);
    py_rto_timer = PyLong_FromLong(INA_RTO_TIMER);
    if (heap_push == NULL || heap_pop == NULL || py_udp_port == NULL || py_zero == NULL
            || py_one == NULL || py_rto_timer == NULL)
        return -1;
    return 0;
}
