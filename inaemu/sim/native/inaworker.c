/* An INA worker's per-packet path in C: the common RESULT of hosts/ina_session.py, and the
 * worker's reply to it (inaemu/sim/ina_worker.py's `_apply`), for the native core.
 *
 * An `InaFastPath(worker)` is the host's listener of UDP 48879 in place of the worker's
 * `_on_datagram` (a C callable: hostport.c calls it without a Python frame). For the common
 * RESULT (well-formed, of this job, worker, count and lane format; in the call's job-scaled
 * data phase, with no timeline and no hashed sharing; its chunk in flight, not the call's
 * last; no overflow flag; not the call's first result) it does what `InaSession._receive` /
 * `_on_result` and the worker's `_apply` do, in the same order, on the Python objects' own
 * fields: the counters, the flight table (a queried chunk through the recovery's
 * `set_queried`), the silence rules' progress marks, the RTT sample (after a resend only if
 * the recovery's `spurious_timeout` says so) and the window's growth (the estimators' and
 * the window's Python methods: hosts/congestion.py stays their one definition), the answered
 * marks, the codec's `store`, the loss detection when an earlier chunk is still in flight
 * (the recovery's `detect_losses`), `_fill_window` and `next_deadline` (those in
 * inasession.c), the frames (frames.c) to the uplink and the worker's timer. Step 2
 * (docs/sim-native.md, "The INA host path, step 2"): the RTT sample and the loss detection with its early resends
 * in C (inasession.c, each a mirror of its Python method, used for hosts' own classes only),
 * duplicate RESULTs and NACKs of the data phase, and the worker's timer (`on_timer`: the
 * reorder and RTO timers of `expire`; tail probes and a give-up go to Python from that entry).
 * Nothing is held in C between packets: every other datagram goes to the worker's Python
 * `_on_datagram` unchanged, and sees exactly the state it would have.
 * tests/sim/test_native_ina.py checks it against the Python core event for event.
 */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;  /* InaFast_vectorcall: hostport.c's call makes no tuple */
    PyObject *worker, *general, *node, *loop, *timer, *aggregator_ip;
    PyObject *gateway_mac, *mac, *ip;
    SessionRefs s;              /* the worker's session (inasession.c) */
    long long fast, fallback;   /* datagrams each path took */
    long long in_place;         /* of both: read from their frames in place (hostport.c) */
    long long c_detections, python_detections;  /* loss detections each did (C path's) */
    long long duplicates;       /* of `fast`: duplicate RESULTs, only counted */
    long long nacks;            /* of `fast`: NACKs (on_nack's resend or a duplicate) */
    PyObject *general_timer;    /* the worker's `_on_timer` */
    PyObject *outcome;          /* the worker's WorkerOutcome (made once, in its __init__) */
    long long timer_fast, timer_fallback;       /* timer expiries each path finished */
    long long rto_resends, rto_postponed;       /* RTO timers C expired, or moved later */
} InaFast;

/* ---- the object --------------------------------------------------------------------------- */

static PyObject *InaFast_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames);

static int InaFast_init(InaFast *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"worker", NULL};
    PyObject *worker;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", names, &worker)) return -1;
    PyObject *session = NULL, *node = NULL, *addressing = NULL;
    Py_INCREF(worker);
    Py_XSETREF(self->worker, worker);
    if ((self->general = attr_get(worker, INA_NAME(_on_datagram))) == NULL
            || (self->general_timer = attr_get(worker, INA_NAME(_on_timer))) == NULL
            || (self->outcome = attr_get(worker, INA_NAME(outcome))) == NULL
            || (session = attr_get(worker, INA_NAME(session))) == NULL
            || (node = self->node = attr_get(worker, INA_NAME(node))) == NULL
            || (self->loop = attr_get(node, INA_NAME(loop))) == NULL
            || (self->timer = attr_get(worker, INA_NAME(_timer))) == NULL
            || (self->aggregator_ip = attr_get(worker, INA_NAME(aggregator_ip))) == NULL
            || (addressing = attr_get(node, INA_NAME(addressing))) == NULL
            || (self->gateway_mac = attr_get(addressing, INA_NAME(gateway_mac))) == NULL
            || (self->mac = attr_get(addressing, INA_NAME(mac))) == NULL
            || (self->ip = attr_get(addressing, INA_NAME(ip))) == NULL
            || session_refs_init(&self->s, session) < 0)
        goto fail;
    if (!PyObject_TypeCheck(self->loop, &LoopType) || !PyObject_TypeCheck(node, &HostPortType)) {
        PyErr_SetString(PyExc_TypeError, "InaFastPath needs a worker on a native host");
        goto fail;
    }
    Py_DECREF(session);
    Py_DECREF(addressing);
    self->vectorcall = InaFast_vectorcall;     /* (not callable before: a TypeError) */
    return 0;
fail:
    Py_XDECREF(session);
    Py_XDECREF(addressing);
    return -1;
}

static int InaFast_traverse(InaFast *self, visitproc visit, void *arg) {
    Py_VISIT(self->worker); Py_VISIT(self->general); Py_VISIT(self->general_timer);
    Py_VISIT(self->outcome);
    Py_VISIT(self->node); Py_VISIT(self->loop); Py_VISIT(self->timer);
    Py_VISIT(self->aggregator_ip); Py_VISIT(self->gateway_mac); Py_VISIT(self->mac);
    Py_VISIT(self->ip);
    return session_refs_traverse(&self->s, visit, arg);
}

static int InaFast_clear(InaFast *self) {
    Py_CLEAR(self->worker); Py_CLEAR(self->general); Py_CLEAR(self->general_timer);
    Py_CLEAR(self->outcome);
    Py_CLEAR(self->node); Py_CLEAR(self->loop); Py_CLEAR(self->timer);
    Py_CLEAR(self->aggregator_ip); Py_CLEAR(self->gateway_mac); Py_CLEAR(self->mac);
    Py_CLEAR(self->ip);
    session_refs_clear(&self->s);
    return 0;
}

static void InaFast_dealloc(InaFast *self) {
    PyObject_GC_UnTrack(self);
    InaFast_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- the common case's test: nothing changes until it holds ------------------------------ */

typedef struct {
    const unsigned char *data;  /* the payload's bytes (the datagram's, or the frame's) */
    Py_ssize_t size;
    PyObject *codec, *in_flight, *flight, *key;  /* borrowed but key, flight, codec */
    unsigned long chunk;
    unsigned slot;
    long long answered_count;
    int detect;         /* an earlier chunk is in flight: LossRecovery.detect_losses first */
    int retx;           /* the switch marked it retx: it waited for a recovery, no RTT sample */
    int queried;        /* the chunk's latest send was a QUERY */
    long long tries;    /* the chunk's transmissions */
    int duplicate;      /* not in flight (or its slot or version differs): only counted */
} Plain;

/* 1: the common case (p filled, its references to release with plain_release); 0: not; -1 */
static int plain_result(InaFast *self, const unsigned char *h, Py_ssize_t size, Plain *p) {
    memset(p, 0, sizeof *p);
    if (size != self->s.result_bytes) return 0;
    unsigned flags = h[1];
    if (h[0] != INA_RESULT || (long)be16(h + 2) != self->s.job || (long)h[4] != self->s.wid
            || h[5] != 0 || (long)be16(h + 12) != self->s.n
            || flags & ~(INA_FLAG_VER | INA_FLAG_RETX | INA_FLAG_OVERFLOW | INA_FLAG_NEXT
                         | INA_FLAG_FORMAT)
            || (long)(flags & INA_FLAG_FORMAT) != self->s.format_bits
            || flags & INA_FLAG_OVERFLOW)
        return 0;
    if (!self->s.job_scaling || self->s.granted) return 0;
    int r = 0;
    PyObject *v = NULL, *encoder = NULL;
    if ((v = attr_get(self->outcome, INA_NAME(finished_at))) == NULL) goto error;
    if (v != Py_None) goto done;
    Py_CLEAR(v);
    if ((v = attr_get(self->s.session, INA_NAME(state))) == NULL) goto error;
    if (v != state_data) goto done;
    Py_CLEAR(v);
    if ((p->codec = attr_get(self->s.session, INA_NAME(_codec))) == NULL) goto error;
    if ((encoder = attr_get(self->s.session, INA_NAME(_encoder))) == NULL) goto error;
    if (p->codec == Py_None || encoder != p->codec) goto done;
    if ((v = attr_get(self->s.recovery, INA_NAME(timeline))) == NULL) goto error;
    if (v != Py_None) goto done;
    Py_CLEAR(v);
    if ((v = attr_get(self->s.session, INA_NAME(_in_flight))) == NULL) goto error;
    if (!PyDict_CheckExact(v)) goto done;
    p->chunk = be32(h + 8);
    p->slot = be16(h + 6);
    if ((p->key = PyLong_FromUnsignedLong(p->chunk)) == NULL) goto error;
    PyObject *flight = PyDict_GetItemWithError(v, p->key);
    if (flight == NULL) {       /* not in flight: answered already (a duplicate) */
        if (PyErr_Occurred()) goto error;
        goto duplicate;
    }
    Py_INCREF(flight);
    p->flight = flight;
    p->in_flight = v;       /* (the reference moves to p) */
    v = NULL;
    long long tries, slot, ver, chunks, count, all_chunks, last_chunk;
    if (Py_TYPE(flight) != flight_type) goto done;      /* (its slots are read directly) */
    if (flight_ll(flight, F_tries, &tries) < 0 || flight_ll(flight, F_slot, &slot) < 0
            || flight_ll(flight, F_ver, &ver) < 0)
        goto error;
    if (slot != (long long)p->slot || ver != (long long)(flags & INA_FLAG_VER))
        goto duplicate;         /* another use of the chunk number's slot: as a duplicate */
    if ((p->queried = flight_truth(flight, F_queried)) < 0) goto error;
    p->tries = tries;
    if (get_ll(p->codec, INA_NAME(chunks), &chunks) < 0
            || get_ll(self->s.session, INA_NAME(_answered_count), &count) < 0
            || get_ll(self->s.session, INA_NAME(_chunks), &all_chunks) < 0
            || get_ll(self->s.silence, INA_NAME(last_progress_chunk), &last_chunk) < 0)
        goto error;
    if ((long long)p->chunk >= chunks || count + 1 >= all_chunks || last_chunk < 0) goto done;
    if (self->s.fast_retransmit) {       /* an earlier chunk in flight: look for losses */
        Py_ssize_t pos = 0;
        PyObject *first, *value;
        if (!PyDict_Next(p->in_flight, &pos, &first, &value)) goto done;
        /* (the first key once this chunk has left: in_flight is in first-send order) */
        if (first == p->key || int_compare(first, p->key, Py_EQ) == 1) {
            if (!PyDict_Next(p->in_flight, &pos, &first, &value)) first = NULL;
        }
        if (PyErr_Occurred()) goto error;
        if (first != NULL) {
            p->detect = int_compare(first, p->key, Py_LT);
            if (p->detect < 0) goto error;
        }
    }
    p->data = h;
    p->size = size;
    p->retx = flags & INA_FLAG_RETX;
    p->answered_count = count;
    r = 1;
    goto done;
duplicate:                      /* `_on_result`'s first test: duplicates_ignored */
    p->duplicate = 1;
    p->data = h;
    p->size = size;
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(v);
    Py_XDECREF(encoder);
    return r;
}

static void plain_release(Plain *p) {
    Py_CLEAR(p->codec);
    Py_CLEAR(p->in_flight);
    if (p->flight != NULL) {        /* (answered: the next chunk's Flight, if nothing holds it) */
        flight_let_go(p->flight);
        p->flight = NULL;
    }
    Py_CLEAR(p->key);
}

/* ---- the worker's `_apply` ------------------------------------------------------------------ */

static int send_payloads(InaFast *self, PyObject *out) {
    HostPort *node = (HostPort *)self->node;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); i++) {
        long long ident;                     /* node.next_ident() */
        if (get_ll(self->node, INA_NAME(_ident), &ident) < 0) return -1;
        ident = (ident + 1) & 0xFFFF;
        PyObject *ident_obj = PyLong_FromLongLong(ident);
        if (ident_obj == NULL) return -1;
        if (attr_set(self->node, INA_NAME(_ident), ident_obj) < 0) {
            Py_DECREF(ident_obj); return -1;
        }
        PyObject *args[8] = {self->gateway_mac, self->mac, self->ip, self->aggregator_ip,
                             py_udp_port, py_udp_port, PyList_GET_ITEM(out, i), ident_obj};
        PyObject *frame = Frames_udp(NULL, args, 8);
        Py_DECREF(ident_obj);
        if (frame == NULL) return -1;
        int r = host_port_send(node, frame, Py_None);
        Py_DECREF(frame);
        if (r < 0) return -1;
    }
    return 0;
}

/* Timer.set(deadline): hosttimer.c's without a call for the native core's hosts, any other
 * timer by its method */
static int set_timer(InaFast *self, PyObject *deadline) {
    if (Py_TYPE(self->timer) == &HostTimerType)
        return host_timer_set((HostTimer *)self->timer, deadline);
    return ina_call_method(self->timer, INA_NAME(set), &deadline, 1);
}

/* ---- a datagram ---------------------------------------------------------------------------- */

static int deliver_plain(InaFast *self, Plain *p, double now) {
    PyObject *session = self->s.session, *out = NULL, *deadline = NULL, *v = NULL;
    Py_ssize_t size = p->size;
    int r = -1;
    /* _receive */
    if (add_ll(self->s.counters, INA_NAME(packets_received), 1) < 0
            || add_ll(self->s.counters, INA_NAME(bytes_received), size) < 0)
        return -1;
    /* _on_result's steps for this case (receive_many's inline path) */
    double last_sent, sent_at;
    if (flight_double(p->flight, F_last_sent, &last_sent) < 0
            || flight_double(p->flight, F_sent_at, &sent_at) < 0)
        return -1;
    if (PyDict_DelItem(p->in_flight, p->key) < 0) return -1;
    if (p->queried && self->s.c_recovery) {     /* LossRecovery.set_queried(flight, False) */
        if (add_ll(self->s.recovery, INA_NAME(queried), -1) < 0
                || flight_set(p->flight, F_queried, Py_NewRef(Py_False)) < 0)
            return -1;
    } else if (p->queried) {                    /* another recovery's: its method */
        PyObject *args[2] = {p->flight, Py_False};
        if (ina_call_method(self->s.recovery, INA_NAME(set_queried), args, 2) < 0) return -1;
    }
    long long results;     /* SilenceRules.progress (not the call's first result) */
    if (get_ll(self->s.silence, INA_NAME(data_results), &results) < 0
            || set_ll(self->s.silence, INA_NAME(data_results), results + 1) < 0
            || set_double(self->s.silence, INA_NAME(last_progress), now) < 0
            || set_double(self->s.silence, INA_NAME(last_progress_sent), last_sent) < 0
            || attr_set(self->s.silence, INA_NAME(last_progress_chunk), p->key) < 0)
        return -1;
    if (p->slot >= (unsigned)PyByteArray_GET_SIZE(self->s.host_of)) {
        PyErr_SetString(PyExc_IndexError, "slot beyond the paths' table");
        return -1;
    }
    int path = PyByteArray_AS_STRING(self->s.host_of)[p->slot] ? 1 : 0;
    PyObject *highest = attr_get(session, INA_NAME(_highest_answered));
    if (highest == NULL) return -1;
    if (!PyList_Check(highest) || PyList_GET_SIZE(highest) != 2) {
        PyErr_SetString(PyExc_TypeError, "the highest answered must be a list of two");
        goto done;
    }
    long long top = PyLong_AsLongLong(PyList_GET_ITEM(highest, path));
    if (top == -1 && PyErr_Occurred()) goto done;
    if ((long long)p->chunk > top) {
        /* Karn: a resent chunk's result is a sample only when its timer was spurious */
        int sample = self->s.adaptive && !p->retx && p->tries == 1;
        if (self->s.adaptive && !p->retx && p->tries != 1) {
            PyObject *now_obj = PyFloat_FromDouble(now);
            if (now_obj == NULL) goto done;
            PyObject *spurious = PyObject_VectorcallMethod(
                INA_NAME(spurious_timeout), (PyObject *[]){self->s.recovery, p->flight, now_obj}, 3,
                NULL);
            Py_DECREF(now_obj);
            if (spurious == NULL) goto done;
            sample = PyObject_IsTrue(spurious);
            Py_DECREF(spurious);
            if (sample < 0) goto done;
            if (sample && add_ll(self->s.counters, INA_NAME(spurious_timeouts), 1) < 0)
                goto done;
        }
        if (sample && estimator_sample(&self->s, path ? self->s.host_estimator
                                                      : self->s.estimator, now - sent_at) < 0)
            goto done;
        if (PyList_SetItem(highest, path, Py_NewRef(p->key)) < 0) goto done;
    }
    if (self->s.adaptive) {
        long long wsize, wmax;
        if (get_ll(self->s.window, INA_NAME(size), &wsize) < 0
                || get_ll(self->s.window, INA_NAME(maximum), &wmax) < 0)
            goto done;
        if (wsize < wmax && self->s.c_recovery) {  /* InFlightWindow.on_result, in C */
            long long results;
            int slow_start = get_truth(self->s.window, INA_NAME(slow_start));
            if (slow_start < 0 || get_ll(self->s.window, INA_NAME(_results), &results) < 0)
                goto done;
            results++;
            if (slow_start || results >= wsize) {
                if (set_ll(self->s.window, INA_NAME(size), wsize + 1) < 0) goto done;
                results = 0;
            }
            if (set_ll(self->s.window, INA_NAME(_results), results) < 0) goto done;
        } else if (wsize < wmax
                   && ina_call_method(self->s.window, INA_NAME(on_result), NULL, 0) < 0) {
            goto done;
        }
    }
    if ((v = attr_get(session, INA_NAME(_answered))) == NULL) goto done;
    if (!PyByteArray_Check(v) || (Py_ssize_t)p->chunk >= PyByteArray_GET_SIZE(v)) {
        PyErr_SetString(PyExc_TypeError, "the answered marks must cover the chunk");
        goto done;
    }
    PyByteArray_AS_STRING(v)[p->chunk] = 1;
    Py_CLEAR(v);
    if (set_ll(session, INA_NAME(_answered_count), p->answered_count + 1) < 0) goto done;
    if (codec_store(p->codec, p->key, p->chunk, p->data, p->size) < 0) goto done;
    if ((out = PyList_New(0)) == NULL) goto done;
    if (p->detect) {    /* _on_result: detect_losses(c, flight, now) + _fill_window(now) */
        int covered = detect_losses_c(&self->s, p->in_flight, (long long)p->chunk, p->flight,
                                      now, out);
        if (covered < 0) goto done;
        if (!covered) {         /* not the C's case: the recovery's Python method */
            self->python_detections++;
            PyObject *now_obj = PyFloat_FromDouble(now);
            if (now_obj == NULL) goto done;
            Py_SETREF(out, PyObject_VectorcallMethod(
                INA_NAME(detect_losses),
                (PyObject *[]){self->s.recovery, p->key, p->flight, now_obj}, 4, NULL));
            Py_DECREF(now_obj);
            if (out == NULL) goto done;
            if (!PyList_CheckExact(out)) {
                PyErr_SetString(PyExc_TypeError, "detect_losses must return a list");
                goto done;
            }
        } else {
            self->c_detections++;
        }
    }
    if (fill_window(&self->s, now, out) < 0) goto done;
    /* receive's Step: the deadline now; then the worker's _apply */
    if ((deadline = next_deadline(&self->s)) == NULL) goto done;
    if (send_payloads(self, out) < 0) goto done;
    if (set_timer(self, deadline) < 0) goto done;
    r = 0;
done:
    Py_DECREF(highest);
    Py_XDECREF(v);
    Py_XDECREF(out);
    Py_XDECREF(deadline);
    return r;
}

/* a duplicate RESULT in the data phase: `_receive`'s counts, `_on_result`'s
 * duplicates_ignored, nothing to send; receive's Step deadline and `_apply`'s Timer.set */
static int deliver_duplicate(InaFast *self, Plain *p) {
    if (add_ll(self->s.counters, INA_NAME(packets_received), 1) < 0
            || add_ll(self->s.counters, INA_NAME(bytes_received), p->size) < 0
            || add_ll(self->s.counters, INA_NAME(duplicates_ignored), 1) < 0)
        return -1;
    PyObject *deadline = next_deadline(&self->s);
    if (deadline == NULL) return -1;
    int r = set_timer(self, deadline);
    Py_DECREF(deadline);
    return r;
}

static int timer_is_plain(InaFast *self);

/* A NACK (the switch lacks this worker's piece of a chunk it QUERYed) in the data phase:
 * `_receive`'s counts and checks (`decode_header`'s verdicts for a header-only packet),
 * `LossRecovery.on_nack` (inasession.c's `on_nack_c`), receive's Step deadline and `_apply`.
 * 1 done; 0 not this case (nothing changed: the worker's Python takes it); -1 an error. */
static int deliver_nack(InaFast *self, const unsigned char *h, Py_ssize_t size) {
    if (size != INA_HEADER_BYTES) return 0;
    unsigned flags = h[1];
    if (h[0] != INA_NACK || flags & ~INA_KNOWN_FLAGS
            || (flags & INA_FLAG_FORMAT) == INA_FLAG_FORMAT || h[5] != 0
            || (long)be16(h + 2) != self->s.job || (long)h[4] != self->s.wid
            || !self->s.c_recovery)
        return 0;
    int plain = timer_is_plain(self);       /* running, in the data phase, no timeline */
    if (plain <= 0) return plain;
    PyObject *in_flight = attr_get(self->s.session, INA_NAME(_in_flight));
    if (in_flight == NULL) return -1;
    PyObject *key = PyLong_FromUnsignedLong(be32(h + 8)), *out = NULL, *deadline = NULL;
    PyObject *flight = NULL;
    int r = -1;
    if (key == NULL) goto done;
    if (!PyDict_CheckExact(in_flight)) { r = 0; goto done; }
    flight = PyDict_GetItemWithError(in_flight, key);
    if (flight == NULL && PyErr_Occurred()) goto done;
    if (flight != NULL) {
        long long expiries;
        if (Py_TYPE(flight) != flight_type) { r = 0; flight = NULL; goto done; }
        Py_INCREF(flight);
        if (flight_ll(flight, F_expiries, &expiries) < 0) goto done;
        if (expiries < 0 || expiries > 1000) { r = 0; goto done; }
    }
    if (add_ll(self->s.counters, INA_NAME(packets_received), 1) < 0
            || add_ll(self->s.counters, INA_NAME(bytes_received), INA_HEADER_BYTES) < 0
            || (out = PyList_New(0)) == NULL)
        goto done;
    if (flight == NULL) {
        if (add_ll(self->s.counters, INA_NAME(duplicates_ignored), 1) < 0) goto done;
    } else if (on_nack_c(&self->s, key, flight, be16(h + 6), flags & INA_FLAG_VER,
                         ((Loop *)self->loop)->now, out) < 0) {
        goto done;
    }
    if ((deadline = next_deadline(&self->s)) == NULL || send_payloads(self, out) < 0
            || set_timer(self, deadline) < 0)
        goto done;
    self->nacks++;
    r = 1;
done:
    Py_DECREF(in_flight);
    Py_XDECREF(key);
    Py_XDECREF(flight);
    Py_XDECREF(out);
    Py_XDECREF(deadline);
    return r;
}

/* The payload `h` (`size` bytes): 1 when a C path took it, 0 when the worker's Python
 * `_on_datagram` must (nothing has changed), -1 on an error */
static int ina_fast_try(InaFast *self, const unsigned char *h, Py_ssize_t size) {
    int nack = deliver_nack(self, h, size);
    if (nack < 0) return -1;
    if (nack) { self->fast++; return 1; }
    Plain p;
    int plain = plain_result(self, h, size, &p);
    if (plain <= 0) { plain_release(&p); return plain; }
    self->fast++;
    int r;
    if (p.duplicate) {
        self->duplicates++;
        r = deliver_duplicate(self, &p);
    } else {
        r = deliver_plain(self, &p, ((Loop *)self->loop)->now);
    }
    plain_release(&p);
    return r < 0 ? -1 : 1;
}

/* the worker's Python `_on_datagram(datagram)` */
static int ina_fast_general(InaFast *self, PyObject *datagram) {
    self->fallback++;
    PyObject *r = PyObject_CallOneArg(self->general, datagram);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int ina_fast_deliver(InaFast *self, PyObject *datagram) {
    if (PyTuple_Check(datagram) && PyTuple_GET_SIZE(datagram) >= 6
            && PyBytes_CheckExact(PyTuple_GET_ITEM(datagram, 5))) {
        PyObject *payload = PyTuple_GET_ITEM(datagram, 5);
        int r = ina_fast_try(self, (const unsigned char *)PyBytes_AS_STRING(payload),
                             PyBytes_GET_SIZE(payload));
        if (r != 0) return r < 0 ? -1 : 0;
    }
    return ina_fast_general(self, datagram);
}

/* hostport.c's entry for a UDP frame it read in place (`v`, frames.c's view of `frame`): the
 * payload is read where it lies in the frame, and the Datagram is made only for the Python */
static int ina_fast_deliver_view(PyObject *self, PyObject *frame, const FrameView *v) {
    ((InaFast *)self)->in_place++;
    int r = ina_fast_try((InaFast *)self, v->f + v->data, v->size);
    if (r != 0) return r < 0 ? -1 : 0;
    PyObject *datagram = parse_frame(frame);
    if (datagram == NULL) return -1;
    r = ina_fast_general((InaFast *)self, datagram);
    Py_DECREF(datagram);
    return r;
}

static PyObject *InaFast_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "an InaFastPath takes one datagram");
        return NULL;
    }
    if (ina_fast_deliver((InaFast *)self, args[0]) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- the worker's timer ----------------------------------------------------------------------- */

/* 1: the reorder timers due now are the C's to expire (a float call's data phase, no
 * timeline, hosts' own recovery classes, the native TimerHeap); 0: the worker's Python
 * `_on_timer` takes it; -1 */
static int timer_is_plain(InaFast *self) {
    if (!self->s.c_recovery) return 0;
    int r = attr_is_none(self->outcome, INA_NAME(finished_at));
    if (r <= 0) return r;
    PyObject *state = attr_get(self->s.session, INA_NAME(state));
    if (state == NULL) return -1;
    Py_DECREF(state);
    if (state != state_data) return 0;
    PyObject *timers = attr_get(self->s.recovery, INA_NAME(timers));
    if (timers == NULL) return -1;
    Py_DECREF(timers);
    if (Py_TYPE(timers) != &TimerHeapType) return 0;     /* (a heap of Python's) */
    return attr_is_none(self->s.recovery, INA_NAME(timeline));
}

/* The worker's timer fired: `LossRecovery.expire(now)` in C, in the heap's order: stale
 * entries, reorder timers (an early resend of a chunk a later result showed missing:
 * inasession.c's `resend_early`) and RTO timers of data chunks (the silence rules, then a
 * later deadline or the values resent: `rto_expiry_plan`/`_apply`). At the first entry it
 * does not cover (a tail probe, a chunk out of retries, a flight not of hosts' class), the
 * payloads so far are sent and the worker's `_on_timer` does the rest: `expire` goes on from
 * that entry, as one call of it would have (its loop carries nothing but each path's earliest
 * chunk, which no expiry changes). */
static int ina_fast_timer(InaFast *self) {
    int plain = timer_is_plain(self);
    if (plain < 0) return -1;
    if (plain == 0) {
        self->timer_fallback++;
        PyObject *r = PyObject_CallNoArgs(self->general_timer);
        if (r == NULL) return -1;
        Py_DECREF(r);
        return 0;
    }
    double now = ((Loop *)self->loop)->now;
    PyObject *timers = attr_get(self->s.recovery, INA_NAME(timers));
    PyObject *in_flight = attr_get(self->s.session, INA_NAME(_in_flight));
    PyObject *out = PyList_New(0), *deadline = NULL;
    PyObject *heads[2] = {NULL, NULL};     /* each path's earliest chunk (expire's `heads`) */
    int r = -1, rest = 0;
    if (timers == NULL || in_flight == NULL || out == NULL) goto done;
    if (Py_TYPE(timers) != &TimerHeapType || !PyDict_CheckExact(in_flight)) {
        PyErr_SetString(PyExc_TypeError, "the recovery's timers must be the native TimerHeap, "
                        "the flight table a dict");
        goto done;
    }
    TimerHeapObject *heap = (TimerHeapObject *)timers;
    while (heap->size) {
        TimerEntry top = heap->items[0];      /* (a copy: the heap may move as code runs) */
        long kind = (long)top.kind;
        if (!(top.deadline <= now)) break;
        if (kind == INA_TAIL_TIMER) { rest = 1; break; }
        PyObject *key = top.key_obj;          /* (the heap holds it until the pop below) */
        PyObject *flight = PyDict_GetItemWithError(in_flight, key);
        if (flight == NULL && PyErr_Occurred()) goto done;
        /* (the plan below reads the session, and runs no code that changes the heap: the
         * entry popped after it is still this one, as `expire` pops it before its plan) */
        int live = 0;
        if (flight != NULL) {
            PyObject *tries = flight_attr(flight, F_tries, INA_NAME(tries));
            if (tries == NULL) goto done;
            long long now_tries = PyLong_AsLongLong(tries);
            Py_DECREF(tries);
            if (now_tries == -1 && PyErr_Occurred()) goto done;
            live = now_tries == top.tries;
        }
        int suspect = 0, plan = -1;
        double later = 0.0;
        if (live) {        /* a reorder or RTO timer: in C if the flight is the C's case */
            long long k, expiries;
            if (Py_TYPE(flight) != flight_type) { rest = 1; break; }
            k = top.key;
            if (flight_ll(flight, F_expiries, &expiries) < 0) goto done;
            if (k < 0 || expiries < 0 || expiries > 1000) { rest = 1; break; }
            if (kind == INA_REORDER_TIMER) {
                if ((suspect = flight_truth(flight, F_suspect)) < 0) goto done;
            } else {
                plan = rto_expiry_plan(&self->s, key, k, flight, top.deadline, now, in_flight,
                                       heads, &later);
                if (plan < 0) goto done;
                if (plan == RTO_HANDOVER) { rest = 1; break; }
            }
            Py_INCREF(flight);
        }
        TimerEntry popped;
        timer_heap_pop(heap, &popped);        /* (its key's reference is ours now) */
        key = popped.key_obj;
        int sent = 0;
        if (live && kind == INA_REORDER_TIMER && suspect)
            sent = resend_early(&self->s, key, flight, now, out);
        else if (live && kind != INA_REORDER_TIMER) {
            sent = rto_expiry_apply(&self->s, plan, key, flight, popped.tries, later, now,
                                    out);
            if (plan == RTO_RESEND) self->rto_resends++; else self->rto_postponed++;
        }
        Py_DECREF(key);
        if (live) Py_DECREF(flight);
        if (sent < 0) goto done;
    }
    if (rest) {     /* the worker's `_on_timer` from here: session.timeout, then `_apply` */
        self->timer_fallback++;
        PyObject *now_obj = PyFloat_FromDouble(now);
        if (now_obj == NULL) goto done;
        PyObject *step = PyObject_CallMethodOneArg(self->s.session, INA_NAME(timeout), now_obj);
        Py_DECREF(now_obj);
        if (step == NULL) {
            /* a chunk out of retries: the worker ends with the error, and nothing of this
             * expiry is sent (the Python `expire` raised before returning any of it) */
            if (!PyErr_ExceptionMatches(host_error_type)) goto done;
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            PyObject *message = value == NULL ? NULL : PyObject_Str(value);
            Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
            if (message == NULL) goto done;
            int ended = ina_call_method(self->worker, INA_NAME(_end), &message, 1);
            Py_DECREF(message);
            if (ended < 0) goto done;
        } else {
            int sent = send_payloads(self, out);
            if (sent == 0) sent = ina_call_method(self->worker, INA_NAME(_apply), &step, 1);
            Py_DECREF(step);
            if (sent < 0) goto done;
        }
    } else {
        /* the payloads; timeout's Step deadline, `_apply`'s Timer.set */
        if (send_payloads(self, out) < 0) goto done;
        self->timer_fast++;
        if ((deadline = next_deadline(&self->s)) == NULL || set_timer(self, deadline) < 0)
            goto done;
    }
    r = 0;
done:
    Py_XDECREF(timers);
    Py_XDECREF(in_flight);
    Py_XDECREF(out);
    Py_XDECREF(deadline);
    Py_XDECREF(heads[0]);
    Py_XDECREF(heads[1]);
    return r;
}

static PyObject *InaFast_on_timer(InaFast *self, PyObject *unused) {
    if (ina_fast_timer(self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* InaFastPath.rto_sample(estimator, rtt): the C `RtoEstimator.sample` the path uses, on any
 * object with the estimator's fields (for tests/sim/test_native_ina.py's float-for-float
 * check against hosts/congestion.py's) */
static PyObject *InaFast_rto_sample(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "rto_sample(estimator, rtt)");
        return NULL;
    }
    double rtt = PyFloat_AsDouble(args[1]);
    if (rtt == -1.0 && PyErr_Occurred()) return NULL;
    if (rto_sample(args[0], rtt) < 0) return NULL;
    Py_RETURN_NONE;
}

/* InaFastPath.bursts_lost(loss_bursts, window): the C `LossBursts.lost` (the same check) */
static PyObject *InaFast_bursts_lost(PyObject *unused, PyObject *const *args,
                                     Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "bursts_lost(loss_bursts, window)");
        return NULL;
    }
    long long window = PyLong_AsLongLong(args[1]);
    if (window == -1 && PyErr_Occurred()) return NULL;
    int r = bursts_lost(args[0], window);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static PyMethodDef InaFast_methods[] = {
    {"on_timer", (PyCFunction)InaFast_on_timer, METH_NOARGS,
     "the worker's timer fired: its reorder timers in C, anything else its _on_timer"},
    {"bursts_lost", (PyCFunction)(void (*)(void))InaFast_bursts_lost,
     METH_FASTCALL | METH_STATIC, "the C LossBursts.lost(window) on `loss_bursts`"},
    {"rto_sample", (PyCFunction)(void (*)(void))InaFast_rto_sample,
     METH_FASTCALL | METH_STATIC, "the C RtoEstimator.sample(rtt) on `estimator`"},
    {NULL}
};

/* a count the C path keeps, read only from Python */
#define FAST_COUNT(field, doc) {#field, T_LONGLONG, offsetof(InaFast, field), READONLY, doc}
static PyMemberDef InaFast_members[] = {
    FAST_COUNT(fast, "datagrams the C path took"),
    FAST_COUNT(fallback, "datagrams handed to the worker's Python _on_datagram"),
    FAST_COUNT(in_place, "of fast and fallback: read from their frames in place (no Datagram "
               "made for the C path)"),
    FAST_COUNT(c_detections, "loss detections after a result the C path took, done in C"),
    FAST_COUNT(python_detections,
               "loss detections after a result the C path took, left to the recovery's Python"),
    FAST_COUNT(duplicates, "of fast: duplicate RESULTs (answered already), counted in C"),
    FAST_COUNT(nacks, "of fast: NACKs answered (or counted as duplicates) in C"),
    FAST_COUNT(rto_resends, "RTO timers expired in C (the values resent)"),
    FAST_COUNT(rto_postponed, "RTO timers the silence rules moved later, in C"),
    FAST_COUNT(timer_fast, "timer expiries the C finished (reorder timers)"),
    FAST_COUNT(timer_fallback,
               "timer expiries (or their rest) handed to the worker's Python _on_timer"),
    {"worker", T_OBJECT, offsetof(InaFast, worker), READONLY, "the InaWorker"},
    {NULL}
};

static PyTypeObject InaFastType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.InaFastPath",
    .tp_basicsize = sizeof(InaFast),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(InaFast, vectorcall),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)InaFast_init,
    .tp_dealloc = (destructor)InaFast_dealloc,
    .tp_traverse = (traverseproc)InaFast_traverse,
    .tp_clear = (inquiry)InaFast_clear,
    .tp_free = PyObject_GC_Del,
    .tp_call = PyVectorcall_Call,     /* (InaFast_vectorcall, once initialised) */
    .tp_members = InaFast_members,
    .tp_methods = InaFast_methods,
    .tp_doc = "an INA worker's listener: the common RESULT in C, anything else its Python "
              "_on_datagram (inaemu/sim/native/inaworker.c)",
};

static int ina_module_init(void) {
    if (ina_session_module_init() < 0) return -1;
    return PyType_Ready(&InaFastType);
}
