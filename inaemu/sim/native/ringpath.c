/* The ring's per-segment path in C: inaemu/sim/ring_worker.py's RingWorker over
 * inaemu/sim/reliable.py's ReliableSender/ReliableReceiver, with hosts/ring_session.py's
 * RingSession called once per whole message (docs/sim-native.md, "The ring's per-segment path in C").
 *
 * A `RingPath(worker, outstanding_class, active_states)` holds no protocol state of its own:
 * it reads and writes the Python objects' own attributes (the receiver's next_expected, early
 * segments and counts, the sender's deques, segments, RTT estimate and counters, the session's
 * decoder buffer, the timers' deadlines), so whatever it does not cover goes to the worker's
 * Python method, which finds exactly the state the Python alone would have left.
 *
 * What it covers (the rest calls the Python with the whole event, nothing done before):
 * - on_data: a segment with payload from the left neighbour of a started, unfinished rank
 *   whose session is in reduce-scatter or all-gather: ReliableReceiver.on_segment (in order:
 *   the bytes it joins up with; out of order: kept or counted as a duplicate), the ACK (with
 *   its SACK block) framed by frames.c and sent, or the delayed-ACK timer set (the receiver's
 *   delay_started). In-order bytes that complete no message go
 *   into the session's decoder buffer (StreamDecoder.feed would return nothing: the header is
 *   checked by its rules and kept as it keeps it; a header it would refuse goes to the
 *   Python), with RingSession.receive's byte count and `_check_done`'s stall timer; bytes
 *   that complete one go to the worker's `_deliver` (RingSession.receive and what follows).
 * - on_ack, on_left, write: for a sender without congestion control ("none"; Reno's sender is
 *   the Python's): ReliableSender.on_ack (cumulative ACK, RTT samples, the SACK block and the
 *   fast retransmissions it allows), on_left (TCP Small Queues), write, then `_output`/`_fill`
 *   and RingWorker._transmit (frames, this path's on_left, the RTO timer). The timers' expiries
 *   (`_on_rto`, `_on_stall`, `_on_delayed_ack`) are the Python's.
 */

/* inaemu.sim.reliable._Outstanding's slots, in its order: a segment made here writes them as
 * its __init__ does (`new_outstanding`); a class with other slots is called instead */
static const char *const outstanding_slot_text[] = {
    "seq", "data", "psh", "sent_at", "retransmitted", "sacked", "fast_done", "pending",
    "order", "waiting",
};
#define OUTSTANDING_SLOTS 10

typedef struct {
    PyObject_HEAD
    PyObject *worker, *node, *sender, *receiver, *session, *decoder, *outcome;
    PyObject *rto_timer, *stall_timer, *delack_timer;
    PyObject *right_ip, *left_ip, *gateway_mac, *mac, *ip, *data_port, *ack_port;
    PyObject *outstanding, *unsent, *resends, *sender_counters, *session_counters, *early;
    PyObject *outstanding_class, *active_a, *active_b;
    PyObject *on_left;          /* the handler data frames carry (this path's own on_left) */
    Py_ssize_t outstanding_offset[OUTSTANDING_SLOTS];  /* its slots; [0] < 0: call the class */
    long long window, ack_every, nic_budget, mss, dupthresh;    /* nic_budget < 0: none */
    double stall_timeout, rto_min, rto_max, delayed_ack;
    int reno;
    long long in_place;         /* segments and ACKs the host gave as frames, read in place */
} RingPath;

static PyTypeObject RingPathType;
static PyObject *str_unbacked_rto;
static PyObject *str_sender, *str_receiver, *str_session, *str_decoder, *str_outcome,
    *str_rto_timer, *str_stall_timer, *str_delack_timer, *str_delayed_ack, *str_right_ip, *str_left_ip, *str_data_port_attr,
    *str_ack_port_attr, *str_addressing, *str_gateway_mac, *str_mac, *str_ip, *str_outstanding,
    *str_unsent, *str_resends, *str_counters, *str_config, *str_window_bytes, *str_ack_every,
    *str_rto_min, *str_rto_max, *str_nic_budget, *str_reno, *str_stall_timeout,
    *str_on_data_py, *str_on_ack_py, *str_on_left_py, *str_deliver, *str_started,
    *str_finished_at, *str_early, *str_next_expected, *str_unacked, *str_state, *str_header,
    *str_buffer, *str_bytes_received, *str_ident, *str_deadline,
    *str_set, *str_popleft, *str_seq, *str_data, *str_waiting, *str_sacked, *str_pending,
    *str_sacked_bytes, *str_pending_bytes, *str_retransmitted, *str_sent_at, *str_srtt,
    *str_rttvar, *str_rto, *str_acked, *str_expiries, *str_next_seq, *str_nic_bytes,
    *str_segments_sent, *str_payload_bytes_sent, *str_loop_attr, *str_rp_now, *str_rp_append, *str_write_py, *str_mss, *str_psh, *str_retransmissions,
    *str_fast_retransmissions, *str_fast_done, *str_dupthresh, *str_duplicates,
    *str_read, *str_pending_messages, *str_source, *str_sink, *str_bounds, *str_accumulate,
    *str_rank, *str_n, *str_calls, *str_step, *str_offset, *str_slice_values,
    *str_messages_received, *str_messages_sent, *str_bytes_sent;

static double loop_now(PyObject *node) {
    PyObject *loop = attr_get(node, str_loop_attr);
    if (loop == NULL) return -1.0;
    double now;
    if (PyObject_TypeCheck(loop, &LoopType)) now = ((Loop *)loop)->now;
    else if (get_double(loop, str_rp_now, &now) < 0) now = -1.0;
    Py_DECREF(loop);
    return now;
}

/* Timer.set(deadline): hosttimer.c's without a call for the native core's hosts, any other
 * timer by its method */
static int timer_set(PyObject *timer, PyObject *deadline) {
    if (Py_TYPE(timer) == &HostTimerType) return host_timer_set((HostTimer *)timer, deadline);
    PyObject *r = PyObject_CallMethodOneArg(timer, str_set, deadline);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* the host's next IPv4 ident (HostNode.next_ident) */
static PyObject *next_ident(PyObject *node) {
    long long ident;
    if (get_ll(node, str_ident, &ident) < 0) return NULL;
    ident = (ident + 1) & 0xFFFF;
    if (set_ll(node, str_ident, ident) < 0) return NULL;
    return PyLong_FromLongLong(ident);
}

/* frames.c's tcp_frame from this host to `dst_ip`, handed to the host's send_frame */
static int send_tcp(RingPath *self, PyObject *dst_ip, PyObject *sport, PyObject *dport,
                    long long seq, long long ack, long flags, PyObject *options,
                    PyObject *payload, PyObject *on_left) {
    PyObject *ident = next_ident(self->node);
    if (ident == NULL) return -1;
    PyObject *seq_o = PyLong_FromLongLong(seq), *ack_o = PyLong_FromLongLong(ack);
    PyObject *flags_o = PyLong_FromLong(flags), *window = PyLong_FromLong(0xFFFF);
    PyObject *frame = NULL;
    if (seq_o && ack_o && flags_o && window) {
        PyObject *args[13] = {self->gateway_mac, self->mac, self->ip, dst_ip, sport, dport,
                              seq_o, ack_o, flags_o, options, payload, ident, window};
        frame = Frames_tcp(NULL, args, 13);
    }
    Py_XDECREF(seq_o); Py_XDECREF(ack_o); Py_XDECREF(flags_o); Py_XDECREF(window);
    Py_DECREF(ident);
    if (frame == NULL) return -1;
    PyObject *send_args[2] = {frame, on_left};
    PyObject *r = HostPort_send_frame((HostPort *)self->node, send_args,
                                      on_left == NULL ? 1 : 2);
    Py_DECREF(frame);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* ---- the sender (congestion "none", no resend waiting) ------------------------------------ */

/* 1: the sender is one this path runs (no congestion control); 0: the Python must */
static int sender_plain(RingPath *self) {
    return !self->reno;
}

/* ReliableSender._room */
static int room_for(RingPath *self, long long size, long long nic_bytes) {
    return self->nic_budget < 0 || nic_bytes == 0 || nic_bytes + size + 54 <= self->nic_budget;
}


/* _Outstanding(seq, data, psh, now): made without running its Python __init__ when the class
 * is reliable.py's (its slots as __init__ sets them: the flags False, order 0; a change there
 * is a change here, and tests/sim/test_native_ring.py's runs compare every event) */
static PyObject *new_outstanding(RingPath *self, PyObject *seq, PyObject *data, PyObject *psh,
                                 PyObject *now) {
    if (self->outstanding_offset[0] < 0) {
        PyObject *args[4] = {seq, data, psh, now};
        return PyObject_Vectorcall(self->outstanding_class, args, 4, NULL);
    }
    PyTypeObject *type = (PyTypeObject *)self->outstanding_class;
    PyObject *seg = type->tp_alloc(type, 0);
    if (seg == NULL) return NULL;
    PyObject *order = PyLong_FromLong(0);
    if (order == NULL) { Py_DECREF(seg); return NULL; }
    PyObject *values[OUTSTANDING_SLOTS] = {
        Py_NewRef(seq), Py_NewRef(data), Py_NewRef(psh), Py_NewRef(now), Py_NewRef(Py_False),
        Py_NewRef(Py_False), Py_NewRef(Py_False), Py_NewRef(Py_False), order,
        Py_NewRef(Py_False)};
    for (int i = 0; i < OUTSTANDING_SLOTS; i++)
        *(PyObject **)((char *)seg + self->outstanding_offset[i]) = values[i];
    return seg;
}

/* the slots' offsets of reliable._Outstanding, or [0] = -1 for another class */
static int outstanding_offsets(RingPath *self, PyObject *cls) {
    self->outstanding_offset[0] = -1;
    PyObject *module = PyImport_ImportModule("inaemu.sim.reliable");
    if (module == NULL) return -1;
    PyObject *own = PyObject_GetAttrString(module, "_Outstanding");
    Py_DECREF(module);
    if (own == NULL) return -1;
    int same = own == cls;
    Py_DECREF(own);
    if (!same) return 0;
    Py_ssize_t offsets[OUTSTANDING_SLOTS];
    if (slot_offsets(cls, outstanding_slot_text, OUTSTANDING_SLOTS, offsets,
                     "inaemu.sim.reliable._Outstanding") < 0)
        return -1;
    memcpy(self->outstanding_offset, offsets, sizeof offsets);
    return 0;
}

/* ReliableSender._fill without congestion control: the segments the window and the NIC
 * budget allow, as a list of (seq, data, psh) */
static PyObject *sender_fill(RingPath *self, double now) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    long long next_seq, acked, nic_bytes = 0, rto_set = 0;
    double rto;
    if (get_ll(self->sender, str_next_seq, &next_seq) < 0
            || get_ll(self->sender, str_acked, &acked) < 0
            || (self->nic_budget >= 0 && get_ll(self->sender, str_nic_bytes, &nic_bytes) < 0)
            || get_double(self->sender, str_rto, &rto) < 0)
        goto fail;
    long long sent = 0, sent_bytes = 0;
    for (;;) {
        Py_ssize_t left = PyObject_Size(self->unsent);
        if (left < 0) goto fail;
        if (left == 0) break;
        PyObject *head = PySequence_GetItem(self->unsent, 0);
        if (head == NULL) goto fail;
        if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 2
                || !PyBytes_Check(PyTuple_GET_ITEM(head, 0))) {
            Py_DECREF(head);
            PyErr_SetString(PyExc_TypeError, "ring path: the sender's unsent is not (bytes, psh)");
            goto fail;
        }
        long long size = PyBytes_GET_SIZE(PyTuple_GET_ITEM(head, 0));
        if (next_seq + size - acked > self->window || !room_for(self, size, nic_bytes)) {
            Py_DECREF(head);
            break;
        }
        Py_DECREF(head);
        PyObject *piece = PyObject_CallMethodNoArgs(self->unsent, str_popleft);
        if (piece == NULL) goto fail;
        PyObject *data = PyTuple_GET_ITEM(piece, 0), *psh = PyTuple_GET_ITEM(piece, 1);
        PyObject *seq_o = PyLong_FromLongLong(next_seq), *now_o = PyFloat_FromDouble(now);
        PyObject *seg = NULL, *entry = NULL;
        if (seq_o && now_o)
            seg = new_outstanding(self, seq_o, data, psh, now_o);
        if (seg != NULL) entry = PyTuple_Pack(3, seq_o, data, psh);
        Py_XDECREF(now_o);
        Py_XDECREF(seq_o);
        Py_DECREF(piece);
        if (entry == NULL) { Py_XDECREF(seg); goto fail; }
        PyObject *r = PyObject_CallMethodOneArg(self->outstanding, str_rp_append, seg);
        Py_DECREF(seg);
        if (r == NULL || PyList_Append(out, entry) < 0) { Py_XDECREF(r); Py_DECREF(entry); goto fail; }
        Py_DECREF(r);
        Py_DECREF(entry);
        next_seq += size;
        if (self->nic_budget >= 0) nic_bytes += size + 54;
        sent += 1;
        sent_bytes += size;
        if (!rto_set) {
            int none = attr_is_none(self->sender, str_deadline);
            if (none < 0) goto fail;
            if (none && set_double(self->sender, str_deadline, now + rto) < 0) goto fail;
            rto_set = 1;
        }
    }
    if (sent) {
        if (set_ll(self->sender, str_next_seq, next_seq) < 0
                || (self->nic_budget >= 0 && set_ll(self->sender, str_nic_bytes, nic_bytes) < 0)
                || add_ll(self->sender_counters, str_segments_sent, sent) < 0
                || add_ll(self->sender_counters, str_payload_bytes_sent, sent_bytes) < 0)
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* RingWorker._transmit: each segment framed and sent, then the RTO timer set */
static int transmit(RingPath *self, PyObject *segments) {
    PyObject *on_left = self->nic_budget >= 0 ? self->on_left : Py_None;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(segments); i++) {
        PyObject *seg = PyList_GET_ITEM(segments, i);
        long long seq = PyLong_AsLongLong(PyTuple_GET_ITEM(seg, 0));
        int psh = PyObject_IsTrue(PyTuple_GET_ITEM(seg, 2));
        if ((seq == -1 && PyErr_Occurred()) || psh < 0) return -1;
        if (send_tcp(self, self->right_ip, self->ack_port, self->data_port, seq, 0,
                     0x10 | (psh ? 0x08 : 0), empty_bytes, PyTuple_GET_ITEM(seg, 1),
                     on_left == NULL ? Py_None : on_left) < 0)
            return -1;
    }
    PyObject *deadline = attr_get(self->sender, str_deadline);
    if (deadline == NULL) return -1;
    int r = timer_set(self->rto_timer, deadline);
    Py_DECREF(deadline);
    return r;
}

/* ReliableSender._resend of `seg` (`size` payload bytes): its (seq, data, psh) */
static PyObject *resend(RingPath *self, PyObject *seg, long long size, double now) {
    if ((self->nic_budget >= 0 && add_ll(self->sender, str_nic_bytes, size + 54) < 0)
            || attr_set(seg, str_retransmitted, Py_True) < 0
            || set_double(seg, str_sent_at, now) < 0
            || add_ll(self->sender_counters, str_segments_sent, 1) < 0
            || add_ll(self->sender_counters, str_payload_bytes_sent, size) < 0
            || add_ll(self->sender_counters, str_retransmissions, 1) < 0)
        return NULL;
    PyObject *seq = attr_get(seg, str_seq), *data = attr_get(seg, str_data);
    PyObject *psh = attr_get(seg, str_psh);
    PyObject *entry = seq && data && psh ? PyTuple_Pack(3, seq, data, psh) : NULL;
    Py_XDECREF(seq); Py_XDECREF(data); Py_XDECREF(psh);
    return entry;
}

/* ReliableSender._output without congestion control: the resends that wait (oldest decision
 * first) while the NIC budget has room, then, if they all went, `_fill` */
static PyObject *sender_output(RingPath *self, double now) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (;;) {
        Py_ssize_t count = PyObject_Size(self->resends);
        if (count < 0) goto fail;
        if (count == 0) break;
        PyObject *head = PySequence_GetItem(self->resends, 0);
        if (head == NULL) goto fail;
        PyObject *seg = PyTuple_GET_ITEM(head, 0);
        int fast = PyObject_IsTrue(PyTuple_GET_ITEM(head, 1));
        int waiting = get_truth(seg, str_waiting);
        if (fast < 0 || waiting < 0) { Py_DECREF(head); goto fail; }
        if (waiting) {
            PyObject *data = attr_get(seg, str_data);
            long long size = data == NULL ? -1 : PyObject_Size(data), nic_bytes = 0;
            Py_XDECREF(data);
            if (size < 0 || (self->nic_budget >= 0
                             && get_ll(self->sender, str_nic_bytes, &nic_bytes) < 0)) {
                Py_DECREF(head);
                goto fail;
            }
            if (!room_for(self, size, nic_bytes)) {
                Py_DECREF(head);
                return out;
            }
            PyObject *r = PyObject_CallMethodNoArgs(self->resends, str_popleft);
            Py_XDECREF(r);
            PyObject *entry = NULL;
            if (r != NULL && attr_set(seg, str_waiting, Py_False) == 0
                    && (!fast || add_ll(self->sender_counters, str_fast_retransmissions, 1) == 0))
                entry = resend(self, seg, size, now);
            Py_DECREF(head);
            if (entry == NULL) goto fail;
            int appended = PyList_Append(out, entry);
            Py_DECREF(entry);
            if (appended < 0) goto fail;
        } else {
            Py_DECREF(head);
            PyObject *r = PyObject_CallMethodNoArgs(self->resends, str_popleft);
            if (r == NULL) goto fail;
            Py_DECREF(r);
        }
    }
    PyObject *filled = sender_fill(self, now);
    if (filled == NULL) goto fail;
    Py_ssize_t had = PyList_GET_SIZE(out);
    int r = PyList_SetSlice(out, had, had, filled);
    Py_DECREF(filled);
    if (r < 0) goto fail;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static int fill_and_transmit(RingPath *self, double now) {
    PyObject *segments = sender_output(self, now);
    if (segments == NULL) return -1;
    int r = transmit(self, segments);
    Py_DECREF(segments);
    return r;
}

/* ReliableSender._sample_rtt */
static int sample_rtt(RingPath *self, double rtt, double *rto) {
    PyObject *srtt_o = attr_get(self->sender, str_srtt);
    if (srtt_o == NULL) return -1;
    double srtt, rttvar;
    if (srtt_o == Py_None) {
        srtt = rtt;
        rttvar = rtt / 2;
    } else {
        srtt = PyFloat_AsDouble(srtt_o);
        if ((srtt == -1.0 && PyErr_Occurred()) || get_double(self->sender, str_rttvar, &rttvar) < 0) {
            Py_DECREF(srtt_o);
            return -1;
        }
        double diff = srtt - rtt;
        rttvar = 0.75 * rttvar + 0.25 * (diff < 0 ? -diff : diff);
        srtt = 0.875 * srtt + 0.125 * rtt;
    }
    Py_DECREF(srtt_o);
    double value = srtt + 4 * rttvar;
    if (value < self->rto_min) value = self->rto_min;      /* max(value, rto_min) */
    if (self->rto_max < value) value = self->rto_max;      /* min(value, rto_max) */
    *rto = value;
    if (set_double(self->sender, str_srtt, srtt) < 0
            || set_double(self->sender, str_rttvar, rttvar) < 0
            || set_double(self->sender, str_rto, value) < 0)
        return -1;
    return 0;
}

/* ReliableSender._fast_retransmit without congestion control: each hole with `dupthresh`
 * SACKed segments above it queued for one resend; `segments` is the outstanding ones, a list */
static int fast_retransmit(RingPath *self, PyObject *segments) {
    PyObject *holes = PyList_New(0), *aboves = PyList_New(0);
    if (holes == NULL || aboves == NULL) goto fail;
    long long sacked_above = 0;
    for (Py_ssize_t i = PyList_GET_SIZE(segments) - 1; i >= 0; i--) {
        PyObject *seg = PyList_GET_ITEM(segments, i);
        int sacked = get_truth(seg, str_sacked);
        if (sacked < 0) goto fail;
        if (sacked) { sacked_above++; continue; }
        int pending = get_truth(seg, str_pending);
        int waiting = pending ? 0 : get_truth(seg, str_waiting);
        if (pending < 0 || waiting < 0) goto fail;
        if (pending || waiting) continue;
        int done = get_truth(seg, str_fast_done);
        if (done < 0) goto fail;
        if (!done) {
            PyObject *above = PyLong_FromLongLong(sacked_above);
            if (above == NULL || PyList_Append(holes, seg) < 0 || PyList_Append(aboves, above) < 0) {
                Py_XDECREF(above);
                goto fail;
            }
            Py_DECREF(above);
        }
    }
    for (Py_ssize_t i = PyList_GET_SIZE(holes) - 1; i >= 0; i--) {
        PyObject *seg = PyList_GET_ITEM(holes, i);
        long long above = PyLong_AsLongLong(PyList_GET_ITEM(aboves, i));
        if (above < self->dupthresh) continue;
        if (attr_set(seg, str_fast_done, Py_True) < 0
                || attr_set(seg, str_waiting, Py_True) < 0)
            goto fail;
        PyObject *entry = PyTuple_Pack(2, seg, Py_True);
        PyObject *r = entry == NULL ? NULL
            : PyObject_CallMethodOneArg(self->resends, str_rp_append, entry);
        Py_XDECREF(entry);
        if (r == NULL) goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(holes);
    Py_DECREF(aboves);
    return 0;
fail:
    Py_XDECREF(holes);
    Py_XDECREF(aboves);
    return -1;
}

/* on_ack's SACK block [left, right): the outstanding segments inside it marked SACKed, then
 * the fast retransmissions it allows queued */
static int sender_sack(RingPath *self, long long left, long long right) {
    PyObject *segments = PySequence_List(self->outstanding);
    if (segments == NULL) return -1;
    if (PyList_GET_SIZE(segments) == 0) { Py_DECREF(segments); return 0; }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(segments); i++) {
        PyObject *seg = PyList_GET_ITEM(segments, i);
        long long seq;
        PyObject *data = attr_get(seg, str_data);
        long long size = data == NULL ? -1 : PyObject_Size(data);
        Py_XDECREF(data);
        if (size < 0 || get_ll(seg, str_seq, &seq) < 0) goto fail;
        if (!(left <= seq && seq + size <= right)) continue;
        int sacked = get_truth(seg, str_sacked);
        if (sacked < 0) goto fail;
        if (sacked) continue;
        if (attr_set(seg, str_sacked, Py_True) < 0
                || attr_set(seg, str_waiting, Py_False) < 0
                || add_ll(self->sender, str_sacked_bytes, size) < 0)
            goto fail;
        int pending = get_truth(seg, str_pending);
        if (pending < 0) goto fail;
        if (pending && (attr_set(seg, str_pending, Py_False) < 0
                        || add_ll(self->sender, str_pending_bytes, -size) < 0))
            goto fail;
    }
    int r = fast_retransmit(self, segments);
    Py_DECREF(segments);
    return r;
fail:
    Py_DECREF(segments);
    return -1;
}

/* ReliableSender._acks_a_resend: whether `cumulative` acknowledges a segment sent more than
 * once (then the ACK gives no RTT sample); 1, 0, or -1 with an exception */
static int acks_a_resend(RingPath *self, long long cumulative) {
    PyObject *it = PyObject_GetIter(self->outstanding);
    if (it == NULL) return -1;
    int found = 0;
    PyObject *seg;
    while ((seg = PyIter_Next(it)) != NULL) {
        long long seq;
        PyObject *data = attr_get(seg, str_data);
        Py_ssize_t size = data == NULL ? -1 : PyObject_Size(data);
        Py_XDECREF(data);
        if (size < 0 || get_ll(seg, str_seq, &seq) < 0) { found = -1; Py_DECREF(seg); break; }
        if (seq + size > cumulative) { Py_DECREF(seg); break; }
        found = get_truth(seg, str_retransmitted);
        Py_DECREF(seg);
        if (found) break;
    }
    Py_DECREF(it);
    if (found >= 0 && PyErr_Occurred()) found = -1;
    return found;
}

/* ReliableSender.on_ack (`has_sack`: with the block [left, right)), then _output, sent */
static int sender_ack(RingPath *self, long long cumulative, int has_sack, long long left,
                      long long right, double now) {
    int progressed = 0;
    double rto;
    if (get_double(self->sender, str_rto, &rto) < 0) return -1;
    int resent = acks_a_resend(self, cumulative);
    if (resent < 0) return -1;
    for (;;) {
        Py_ssize_t count = PyObject_Size(self->outstanding);
        if (count < 0) return -1;
        if (count == 0) break;
        PyObject *seg = PySequence_GetItem(self->outstanding, 0);
        if (seg == NULL) return -1;
        long long seq;
        PyObject *data = attr_get(seg, str_data);
        if (data == NULL || get_ll(seg, str_seq, &seq) < 0) {
            Py_XDECREF(data); Py_DECREF(seg);
            return -1;
        }
        long long size = PyObject_Size(data);
        Py_DECREF(data);
        if (size < 0 || seq + size > cumulative) {
            Py_DECREF(seg);
            if (size < 0) return -1;
            break;
        }
        PyObject *done = PyObject_CallMethodNoArgs(self->outstanding, str_popleft);
        Py_DECREF(seg);
        if (done == NULL) return -1;
        int ok = attr_set(done, str_waiting, Py_False) == 0;
        int sacked = ok ? get_truth(done, str_sacked) : -1;
        int timed = 0;      /* a sample: not SACKed, and the ACK acknowledges no resend */
        if (sacked > 0) {
            ok = add_ll(self->sender, str_sacked_bytes, -size) == 0;
        } else if (sacked == 0) {
            int pending = get_truth(done, str_pending);
            if (pending > 0)
                ok = attr_set(done, str_pending, Py_False) == 0
                    && add_ll(self->sender, str_pending_bytes, -size) == 0;
            else ok = pending == 0;
            timed = !resent;
        } else {
            ok = 0;
        }
        double sent_at = 0.0;
        if (ok && timed)
            ok = get_double(done, str_sent_at, &sent_at) == 0 && sample_rtt(self, now - sent_at, &rto) == 0;
        Py_DECREF(done);
        if (!ok) return -1;
        progressed = 1;
    }
    long long acked;
    if (get_ll(self->sender, str_acked, &acked) < 0) return -1;
    if (cumulative > acked && set_ll(self->sender, str_acked, cumulative) < 0) return -1;
    if (progressed) {
        long long expiries;
        if (get_ll(self->sender, str_expiries, &expiries) < 0) return -1;
        if (expiries) {     /* after a timeout (rare): the Python's own _unbacked_rto */
            PyObject *value = PyObject_CallMethodNoArgs(self->sender, str_unbacked_rto);
            if (value == NULL) return -1;
            rto = PyFloat_AsDouble(value);
            int failed = (rto == -1.0 && PyErr_Occurred())
                || attr_set(self->sender, str_rto, value) < 0;
            Py_DECREF(value);
            if (failed) return -1;
        }
        Py_ssize_t count = PyObject_Size(self->outstanding);
        if (count < 0 || set_ll(self->sender, str_expiries, 0) < 0) return -1;
        if (count) {
            if (set_double(self->sender, str_deadline, now + rto) < 0) return -1;
        } else if (attr_set(self->sender, str_deadline, Py_None) < 0) {
            return -1;
        }
    }
    if (has_sack && sender_sack(self, left, right) < 0) return -1;
    return fill_and_transmit(self, now);
}

/* ---- the methods ------------------------------------------------------------------------- */

static PyObject *call_python(RingPath *self, PyObject *name, PyObject *arg) {
    return PyObject_CallMethodOneArg(self->worker, name, arg);
}

/* A TCP segment for this rank: the Datagram the host's port gave (frames.c's parse_frame or
 * the Python parse), or the frame itself read in place (hostport.c `receive_in_place`: no
 * Datagram, no payload copy, for the common segment). The Python methods get a Datagram
 * either way: made from the frame when one is needed (`segment_datagram`), as parse_frame
 * would have made it for them. */
typedef struct {
    PyObject *datagram;         /* given, or made here (then owned: `segment_release`) */
    PyObject *frame;            /* the frame read in place, or NULL */
    int made;                   /* whether `datagram` was made here */
    PyObject *payload;          /* the payload as bytes: the Datagram's, or made here, or NULL */
    int payload_made;
    const char *data;           /* the payload's bytes */
    Py_ssize_t size;
    long long seq, ack;
    long flags;
    const unsigned char *options;   /* the TCP options' bytes */
    Py_ssize_t options_size;
} Segment;

/* the segment's Datagram (borrowed), made from its frame the first time it is asked for */
static PyObject *segment_datagram(Segment *s) {
    if (s->datagram == NULL) {
        s->datagram = parse_frame(s->frame);
        if (s->datagram == NULL) return NULL;
        s->made = 1;
    }
    return s->datagram;
}

/* the segment's payload as bytes (borrowed), made from its frame the first time */
static PyObject *segment_payload(Segment *s) {
    if (s->payload == NULL) {
        s->payload = PyBytes_FromStringAndSize(s->data, s->size);
        if (s->payload == NULL) return NULL;
        s->payload_made = 1;
    }
    return s->payload;
}

static void segment_release(Segment *s) {
    if (s->made) Py_CLEAR(s->datagram);
    if (s->payload_made) Py_CLEAR(s->payload);
}

/* the frame's segment read in place; `v` is frame_view's TCP view of it */
static void segment_of_frame(Segment *s, PyObject *frame, const FrameView *v) {
    const unsigned char *f = v->f;
    memset(s, 0, sizeof *s);
    s->frame = frame;
    s->data = (const char *)f + v->data;
    s->size = v->size;
    s->seq = (long long)be32(f + v->l4 + 4);
    s->ack = (long long)be32(f + v->l4 + 8);
    s->flags = (long)(be16(f + v->l4 + 12) & 0x3F);
    s->options = f + v->l4 + 20;
    s->options_size = v->data - v->l4 - 20;
}

/* the Python method `name` of the worker with the segment's Datagram */
static PyObject *segment_to_python(RingPath *self, PyObject *name, Segment *s) {
    PyObject *d = segment_datagram(s);
    return d == NULL ? NULL : call_python(self, name, d);
}

/* 1: the 4 bytes at `ip` are `expected`'s (an exact 4-byte bytes object; RingPath_init and
 * `ring_path_reads_in_place` check it) */
static int same_ip(const unsigned char *ip, PyObject *expected) {
    return memcmp(ip, PyBytes_AS_STRING(expected), 4) == 0;
}

/* RingWorker._on_ack of a segment from the right neighbour (anything else: the Python) */
static PyObject *on_ack(RingPath *self, Segment *s) {
    if (!sender_plain(self)) return segment_to_python(self, str_on_ack_py, s);     /* Reno */
    /* reliable.SACK (Ack.options): NOP, NOP, kind 5, length 10, left, right (anything else: no SACK) */
    const unsigned char *o = s->options;
    int has_sack = s->options_size >= 12 && o[2] == 5 && o[3] == 10;
    long long left = has_sack ? (long long)be32(o + 4) : 0;
    long long right = has_sack ? (long long)be32(o + 8) : 0;
    double now = loop_now(self->node);
    if (PyErr_Occurred()) return NULL;
    if (sender_ack(self, s->ack, has_sack, left, right, now) < 0) return NULL;
    Py_RETURN_NONE;
}

/* RingWorker._on_ack */
static PyObject *RingPath_on_ack(RingPath *self, PyObject *d) {
    if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 10) return call_python(self, str_on_ack_py, d);
    PyObject *src = PyTuple_GET_ITEM(d, 1), *options = PyTuple_GET_ITEM(d, 9);
    int mine = PyObject_RichCompareBool(src, self->right_ip, Py_EQ);
    if (mine < 0) return NULL;
    if (!mine || !PyBytes_Check(options)) return call_python(self, str_on_ack_py, d);
    Segment s = {.datagram = d};
    s.ack = PyLong_AsLongLong(PyTuple_GET_ITEM(d, 7));
    if (s.ack == -1 && PyErr_Occurred()) return NULL;
    s.options = (const unsigned char *)PyBytes_AS_STRING(options);
    s.options_size = PyBytes_GET_SIZE(options);
    return on_ack(self, &s);
}

/* RingWorker._on_left */
static PyObject *RingPath_on_left(RingPath *self, PyObject *frame) {
    if (!((HostPort *)self->node)->alive) Py_RETURN_NONE;
    if (!sender_plain(self) || !PyBytes_Check(frame))
        return call_python(self, str_on_left_py, frame);
    double now = loop_now(self->node);
    if (PyErr_Occurred()) return NULL;
    if (add_ll(self->sender, str_nic_bytes, -PyBytes_GET_SIZE(frame)) < 0) return NULL;
    if (fill_and_transmit(self, now) < 0) return NULL;
    Py_RETURN_NONE;
}

/* StreamDecoder._check_header's rules: 1 if the 24 bytes at `h` are a header it accepts */
static int header_ok(const unsigned char *h) {
    unsigned kind = h[3], code = h[4], pad = h[5];
    unsigned long offset = be32(h + 16), count = be32(h + 20);
    if (h[0] != 'I' || h[1] != 'R' || h[2] != 2 || kind > 2 || code > 1 || pad) return 0;
    if (kind == 0 && (count || offset || code)) return 0;
    return count <= (1UL << 28);
}

/* HEADER.unpack of the 24 bytes at `h`, as the decoder keeps it */
static PyObject *header_tuple(const unsigned char *h) {
    return Py_BuildValue("(y#BBBBHkkkk)", (const char *)h, (Py_ssize_t)2, h[2], h[3], h[4],
                         h[5], be16(h + 6), be32(h + 8), be32(h + 12), be32(h + 16),
                         be32(h + 20));
}

/* Whether the `size` bytes at `payload` leave the session's decoder without a whole message
 * (its feed would return nothing): 1 yes, 0 no (or a header it would refuse: the Python says
 * so), -1 error. On 1, `*header` is the header the feed would have parsed from these bytes (a
 * new reference), or NULL when it holds one already or has too few bytes for one. */
static int absorbs(RingPath *self, const char *payload, Py_ssize_t size, PyObject **header,
                   Py_ssize_t *message_bytes) {
    *header = NULL;
    PyObject *held = attr_get(self->decoder, str_header);
    if (held == NULL) return -1;
    PyObject *buffer = attr_get(self->decoder, str_buffer);
    if (buffer == NULL) { Py_DECREF(held); return -1; }
    if (!PyByteArray_Check(buffer)) { Py_DECREF(held); Py_DECREF(buffer); return 0; }
    Py_ssize_t had = PyByteArray_GET_SIZE(buffer);
    unsigned char bytes[24];
    long kind, code;
    long long count;
    if (held == Py_None) {
        Py_DECREF(held);
        if (had + size < 24) { Py_DECREF(buffer); return 1; }
        Py_ssize_t from_buffer = had < 24 ? had : 24;
        memcpy(bytes, PyByteArray_AS_STRING(buffer), from_buffer);
        memcpy(bytes + from_buffer, payload, 24 - from_buffer);
        Py_DECREF(buffer);
        if (!header_ok(bytes)) return 0;
        kind = bytes[3];
        code = bytes[4];
        count = be32(bytes + 20);
    } else {
        Py_DECREF(buffer);
        if (!PyTuple_Check(held) || PyTuple_GET_SIZE(held) != 10) { Py_DECREF(held); return 0; }
        kind = PyLong_AsLong(PyTuple_GET_ITEM(held, 2));
        code = PyLong_AsLong(PyTuple_GET_ITEM(held, 3));
        count = PyLong_AsLongLong(PyTuple_GET_ITEM(held, 9));
        Py_DECREF(held);
        if (PyErr_Occurred()) return -1;
        if (code != 0 && code != 1) return 0;
    }
    long long message = 24 + count * (kind ? (code == 0 ? 4 : 8) : 0);
    if (had + size >= message) return 0;
    *message_bytes = (Py_ssize_t)message;
    if (had + size >= 24 && held == Py_None) {
        *header = header_tuple(bytes);
        if (*header == NULL) return -1;
    }
    return 1;
}

/* the session's part of a segment that does not complete a message: RingSession.receive's
 * byte count and the decoder's buffer (its feed returns no message; `_drain` has nothing),
 * then `_check_done`'s stall timer */
/* `data` appended to a bytearray that is to grow to `message` bytes: its memory taken for
 * the whole message at once. (PyByteArray_Resize alone grows a buffer that starts small by
 * exactly what is added, a realloc and a copy of what it holds per ~1,460-byte segment, ~30
 * per 64 KiB message: 4 % of a ring's run. The decoder then empties it, which gives the
 * memory back, so the next message started small again.) The logical size is set the way
 * bytearray itself shrinks within its allocation (size, then the trailing NUL). */
static int append_to_message(PyObject *buffer, const char *data, Py_ssize_t size,
                             Py_ssize_t message) {
    Py_ssize_t had = PyByteArray_GET_SIZE(buffer);
    if (PyByteArray_CheckExact(buffer) && message > had + size) {
        PyByteArrayObject *b = (PyByteArrayObject *)buffer;
        if (b->ob_exports == 0) {
            if ((b->ob_start - b->ob_bytes) + message + 1 > b->ob_alloc) {
                if (PyByteArray_Resize(buffer, message) < 0) return -1;
                Py_SET_SIZE(b, had);
                b->ob_start[had] = '\0';
            }
            if ((b->ob_start - b->ob_bytes) + had + size + 1 <= b->ob_alloc) {
                memcpy(b->ob_start + had, data, size);
                Py_SET_SIZE(b, had + size);
                b->ob_start[had + size] = '\0';
                return 0;
            }
        }
    }
    if (PyByteArray_Resize(buffer, had + size) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(buffer) + had, data, size);
    return 0;
}

static int absorb(RingPath *self, const char *payload, Py_ssize_t size, PyObject *header,
                  Py_ssize_t message, double now) {
    if (header != NULL && attr_set(self->decoder, str_header, header) < 0) return -1;
    if (add_ll(self->session_counters, str_bytes_received, size) < 0) return -1;
    PyObject *buffer = attr_get(self->decoder, str_buffer);
    if (buffer == NULL) return -1;
    int r = append_to_message(buffer, payload, size, message);
    Py_DECREF(buffer);
    if (r < 0) return -1;
    PyObject *deadline = PyFloat_FromDouble(now + self->stall_timeout);
    if (deadline == NULL) return -1;
    r = timer_set(self->stall_timer, deadline);
    Py_DECREF(deadline);
    return r;
}

/* ReliableReceiver's ACK of `cumulative`, with the SACK block [left, right) if `sack`:
 * RingWorker._send_ack */
static int send_ack(RingPath *self, long long cumulative, int sack, long long left,
                    long long right) {
    PyObject *options = empty_bytes;
    if (sack) {
        unsigned char block[12] = {1, 1, 5, 10};
        put32(block + 4, (unsigned long)left);
        put32(block + 8, (unsigned long)right);
        options = PyBytes_FromStringAndSize((const char *)block, 12);
        if (options == NULL) return -1;
    } else {
        Py_INCREF(options);
    }
    int r = send_tcp(self, self->left_ip, self->data_port, self->ack_port, 0, cumulative, 0x10,
                     options, empty_bytes, NULL);
    Py_DECREF(options);
    return r;
}

/* ReliableReceiver.on_segment for a segment not at next_expected: kept (or counted as a
 * duplicate) and acknowledged at once, with a SACK block if it lies ahead */
static int receive_out_of_order(RingPath *self, Segment *s, long long expected) {
    long long seq = s->seq, size = s->size;
    int ahead = seq > expected;
    if (ahead) {
        PyObject *key = PyLong_FromLongLong(seq);
        if (key == NULL) return -1;
        int held = PyDict_Contains(self->early, key);
        PyObject *payload = held == 0 ? segment_payload(s) : NULL;
        int r = held < 0 ? -1 : held ? add_ll(self->receiver, str_duplicates, 1)
            : payload == NULL ? -1 : PyDict_SetItem(self->early, key, payload);
        Py_DECREF(key);
        if (r < 0) return -1;
    } else if (add_ll(self->receiver, str_duplicates, 1) < 0) {
        return -1;
    }
    if (set_ll(self->receiver, str_unacked, 0) < 0) return -1;
    return send_ack(self, expected, ahead, seq, seq + size);
}

/* b"".join(pieces) for a list of bytes */
static PyObject *join_bytes(PyObject *pieces) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pieces); i++)
        total += PyBytes_GET_SIZE(PyList_GET_ITEM(pieces, i));
    PyObject *joined = PyBytes_FromStringAndSize(NULL, total);
    if (joined == NULL) return NULL;
    char *at = PyBytes_AS_STRING(joined);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pieces); i++) {
        PyObject *piece = PyList_GET_ITEM(pieces, i);
        memcpy(at, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece));
        at += PyBytes_GET_SIZE(piece);
    }
    return joined;
}

/* ---- a whole message for the session, in C ------------------------------------------------- */

static PyObject *RingPath_write(RingPath *self, PyObject *data);
static PyObject *np_frombuffer, *np_float32;   /* numpy.frombuffer, numpy.float32: the sink's */

/* The sink's slice: a float32 array over `held`, a bytearray of its values in this
   machine's order, which the message's last step wrote in place (no copy); the array keeps
   the bytearray alive */
static PyObject *float32_array(PyObject *held) {
    if (np_frombuffer == NULL) {
        PyObject *np = PyImport_ImportModule("numpy");
        if (np == NULL) return NULL;
        PyObject *frombuffer = PyObject_GetAttrString(np, "frombuffer");
        PyObject *float32 = PyObject_GetAttrString(np, "float32");
        Py_DECREF(np);
        if (frombuffer == NULL || float32 == NULL) {
            Py_XDECREF(frombuffer);
            Py_XDECREF(float32);
            return NULL;
        }
        np_frombuffer = frombuffer;
        np_float32 = float32;
    }
    PyObject *args[2] = {held, np_float32};
    return PyObject_Vectorcall(np_frombuffer, args, 2, NULL);
}

/* `bytes` bytes for one of a message's value buffers: from PyMem_Malloc, or, for the one the
   sink is given (`for_sink`), the storage of a new bytearray kept in `*held` */
static void *value_buffer(Py_ssize_t bytes, int for_sink, PyObject **held) {
    if (!for_sink) {
        void *at = PyMem_Malloc(bytes > 0 ? bytes : 1);
        if (at == NULL) PyErr_NoMemory();
        return at;
    }
    *held = PyByteArray_FromStringAndSize(NULL, bytes);
    return *held == NULL ? NULL : PyByteArray_AS_STRING(*held);
}

/* The per-value loops of a message (its byte order, the reduce-scatter's sum, the sink's
 * float32), each its own function so that the compiler vectorizes it where the machine has
 * AVX2 (a clone chosen at load time). Each value is converted or added on its own, as NumPy
 * does it element by element: the same bits in any lane order. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VALUE_LOOPS __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define VALUE_LOOPS
#endif

VALUE_LOOPS static void swap32(char *to, const char *from, long long count) {
    for (long long i = 0; i < count; i++) {
        uint32_t w;
        memcpy(&w, from + 4 * i, 4);
        w = __builtin_bswap32(w);
        memcpy(to + 4 * i, &w, 4);
    }
}

VALUE_LOOPS static void swap64(char *to, const char *from, long long count) {
    for (long long i = 0; i < count; i++) {
        uint64_t w;
        memcpy(&w, from + 8 * i, 8);
        w = __builtin_bswap64(w);
        memcpy(to + 8 * i, &w, 8);
    }
}

/* `count` values of `item` (4 or 8) bytes from `from` to `to` (which may be the same),
   each byte-swapped: the wire's big-endian order to this machine's, or back */
static void swap_values(void *to, const void *from, long long count, Py_ssize_t item) {
    if (item == 8) swap64(to, from, count);
    else swap32(to, from, count);
}

/* `count` values of `item` bytes, the first `na` bytes of them at `a` and the rest at `b`,
   swapped into `to`: a value cut between the two is put together first */
static void swap_from_two(void *to, const char *a, Py_ssize_t na, const char *b,
                          long long count, Py_ssize_t item) {
    long long whole = na / item;
    Py_ssize_t cut = na - whole * item;
    char *at = (char *)to;
    swap_values(at, a, whole, item);
    at += whole * item;
    if (cut) {
        char joined[8];
        memcpy(joined, a + whole * item, cut);
        memcpy(joined + cut, b, item - cut);
        swap_values(at, joined, 1, item);
        at += item;
        b += item - cut;
        whole++;
    }
    swap_values(at, b, count - whole, item);
}

/* sum = mine + received, in float32 or (`wide`) float64 after widening mine */
VALUE_LOOPS static void add_f32(float *restrict sum, const float *restrict mine,
                                const char *restrict received, long long count) {
    for (long long i = 0; i < count; i++) {
        float x;
        memcpy(&x, received + 4 * i, 4);
        sum[i] = mine[i] + x;
    }
}

VALUE_LOOPS static void add_f64(double *restrict sum, const float *restrict mine,
                                const char *restrict received, long long count) {
    for (long long i = 0; i < count; i++) {
        double x;
        memcpy(&x, received + 8 * i, 8);
        sum[i] = (double)mine[i] + x;
    }
}

VALUE_LOOPS static void narrow_f64(float *restrict to, const char *restrict from,
                                   long long count) {
    for (long long i = 0; i < count; i++) {
        double x;
        memcpy(&x, from + 8 * i, 8);
        to[i] = (float)x;
    }
}

/* a ring message (hosts/ring_wire.py's `encode` of a Segment): its header, then the values
   big-endian in the accumulator's type */
static PyObject *ring_message(int kind, int code, long long step, long long call,
                              long long index, long long offset, const void *values,
                              Py_ssize_t count) {
    Py_ssize_t item = code ? 8 : 4;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 24 + count * item);
    if (out == NULL) return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    o[0] = 'I'; o[1] = 'R'; o[2] = 2; o[3] = (unsigned char)kind; o[4] = (unsigned char)code;
    o[5] = 0;
    o[6] = (unsigned char)(step >> 8); o[7] = (unsigned char)step;
    put32(o + 8, (unsigned long)call);
    put32(o + 12, (unsigned long)index);
    put32(o + 16, (unsigned long)offset);
    put32(o + 20, (unsigned long)count);
    swap_values(o + 24, values, count, item);
    return out;
}

/* the float32 values of the source's `read(first, end)` (a new reference in `*held`, its
   buffer in `view`): -1 with an error when it gives anything else */
static int source_values(PyObject *source, long long first, long long end, PyObject **held,
                         Py_buffer *view) {
    PyObject *a = PyLong_FromLongLong(first), *b = PyLong_FromLongLong(end);
    PyObject *args[3] = {source, a, b};
    *held = a == NULL || b == NULL ? NULL : PyObject_VectorcallMethod(
        str_read, args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (*held == NULL) return -1;
    if (PyObject_GetBuffer(*held, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    const char *f = view->format;
    int little = 1;
    little = *(const char *)&little == 1;
    if (view->itemsize != 4 || view->len != (end - first) * 4 || f == NULL
            || !(strcmp(f, "f") == 0 || strcmp(f, "=f") == 0
                 || strcmp(f, little ? "<f" : ">f") == 0)) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "a ring source's read(%lld, %lld) must give %lld "
                     "float32 values", first, end, end - first);
        return -1;
    }
    return 0;
}

/* RingWorker._deliver of `data`, the in-order bytes that complete the message whose start the
 * session's decoder holds, in C for the common case: exactly one whole message, the one the
 * session expects next, of a streamed call (source and sink), not the last of its phase.
 * RingSession.receive and `_apply` in their order: the bytes counted, the decoder emptied, the
 * slice read from the source and the received one added in (reduce-scatter) or kept
 * (all-gather), the next message encoded and counted, the sink given the slice of the sum,
 * the slice or step moved on; then RingWorker._write and _check_done. The sums are the ones
 * NumPy makes (one float32 or float64 addition per value). 1 done; 0 not this case (nothing
 * changed: the Python `_deliver` takes it, and says why where it is an error); -1 an error. */
static int deliver_message(RingPath *self, const char *data, Py_ssize_t size, double now) {
    PyObject *session = self->session, *buffer = NULL, *pending = NULL, *state = NULL;
    PyObject *source = NULL, *sink = NULL, *bounds = NULL, *accumulate = NULL;
    PyObject *own = NULL, *out = NULL, *slice = NULL, *held = NULL;
    Py_buffer view = {0};
    void *body = NULL, *sum = NULL;
    float *narrowed = NULL;
    int r = -1;
    /* which buffer holds the values the sink is given (in `held`, not freed here) */
    enum { SINK_NONE, SINK_BODY, SINK_SUM, SINK_NARROWED } sink_in = SINK_NONE;
    if ((buffer = attr_get(self->decoder, str_buffer)) == NULL) goto done;
    if (!PyByteArray_CheckExact(buffer)) { r = 0; goto done; }
    Py_ssize_t had = PyByteArray_GET_SIZE(buffer);
    const unsigned char *front = (const unsigned char *)PyByteArray_AS_STRING(buffer);
    const unsigned char *back = (const unsigned char *)data;
    if (had + size < 24) { r = 0; goto done; }
    unsigned char h[24];
    Py_ssize_t from_front = had < 24 ? had : 24;
    memcpy(h, front, from_front);
    memcpy(h + from_front, back, 24 - from_front);
    int kind = h[3], code = h[4];
    long long count = be32(h + 20);
    Py_ssize_t item = code ? 8 : 4;
    if (!header_ok(h) || kind == 0 || count == 0 || had + size != 24 + count * item) {
        r = 0;
        goto done;
    }
    /* the session: a streamed call in a phase, nothing pending, this message expected */
    long long rank, n, calls, step, offset, slice_values;
    if ((pending = attr_get(session, str_pending_messages)) == NULL
            || (state = attr_get(session, str_state)) == NULL
            || (source = attr_get(session, str_source)) == NULL
            || (sink = attr_get(session, str_sink)) == NULL
            || (bounds = attr_get(session, str_bounds)) == NULL
            || (accumulate = attr_get(session, str_accumulate)) == NULL
            || get_ll(session, str_rank, &rank) < 0 || get_ll(session, str_n, &n) < 0
            || get_ll(session, str_calls, &calls) < 0
            || get_ll(session, str_step, &step) < 0
            || get_ll(session, str_offset, &offset) < 0
            || get_ll(session, str_slice_values, &slice_values) < 0)
        goto done;
    Py_ssize_t waiting = PyObject_Length(pending);
    if (waiting < 0) goto done;
    int scatter = state == self->active_a;
    if (waiting || !(scatter || state == self->active_b) || source == Py_None || sink == Py_None
            || !PyList_CheckExact(bounds) || n < 2 || PyList_GET_SIZE(bounds) != n + 1
            || !PyUnicode_Check(accumulate)) {
        r = 0;
        goto done;
    }
    int wide = PyUnicode_CompareWithASCIIString(accumulate, "float64") == 0;
    if (!wide && PyUnicode_CompareWithASCIIString(accumulate, "float32") != 0) {
        r = 0;
        goto done;
    }
    long long index = ((scatter ? rank - step - 1 : rank - step) % n + n) % n;
    long long lower = PyLong_AsLongLong(PyList_GET_ITEM(bounds, index));
    long long upper = PyLong_AsLongLong(PyList_GET_ITEM(bounds, index + 1));
    if (PyErr_Occurred()) goto done;
    long long first = lower + offset, end = first + slice_values;
    if (end > upper) end = upper;
    int last_step = step == n - 2, segment_end = end >= upper;
    if (kind != (scatter ? 1 : 2) || code != wide || be16(h + 6) != step
            || (long long)be32(h + 8) != calls || (long long)be32(h + 12) != index
            || (long long)be32(h + 16) != offset || count != end - first
            || (last_step && segment_end)) {
        r = 0;
        goto done;
    }
    /* the sink takes this step's values (the sum's slice, or the all-gather's): written
       where its array will read them */
    if (last_step || !scatter)
        sink_in = wide ? SINK_NARROWED : scatter ? SINK_SUM : SINK_BODY;
    /* RingSession.receive: the bytes counted; the decoder's feed: the message out of it */
    if ((body = value_buffer(count * item, sink_in == SINK_BODY, &held)) == NULL) goto done;
    /* the received values, in this machine's order: swapped as they are copied out of the
       decoder's bytes and this segment's (one pass) */
    swap_from_two(body, front + 24, had > 24 ? had - 24 : 0, back + (had < 24 ? 24 - had : 0),
                  count, item);
    if (add_ll(self->session_counters, str_bytes_received, size) < 0
            || PyByteArray_Resize(buffer, 0) < 0
            || attr_set(self->decoder, str_header, Py_None) < 0
            || add_ll(self->session_counters, str_messages_received, 1) < 0)
        goto done;
    /* _apply: own + received (reduce-scatter) or the received (all-gather) */
    const void *values = body;
    if (scatter) {
        if ((sum = value_buffer(count * item, sink_in == SINK_SUM, &held)) == NULL) goto done;
        if (source_values(source, first, end, &own, &view) < 0) goto done;
        const float *mine = view.buf;
        if (wide) add_f64(sum, mine, body, count);
        else add_f32(sum, mine, body, count);
        PyBuffer_Release(&view);
        Py_CLEAR(own);
        values = sum;
    }
    /* the next message (_send): forwarded at the next step, or the all-gather's first */
    if (!last_step)
        out = ring_message(kind, code, step + 1, calls, index, offset, values, count);
    else if (scatter)
        out = ring_message(2, code, 0, calls, index, offset, values, count);
    if (out != NULL && (add_ll(self->session_counters, str_messages_sent, 1) < 0
                        || add_ll(self->session_counters, str_bytes_sent,
                                  PyBytes_GET_SIZE(out)) < 0))
        goto done;
    if (out == NULL && PyErr_Occurred()) goto done;
    /* the sink: the slice of the sum this rank completed, or an all-gather's */
    if (last_step || !scatter) {
        if (wide) {
            narrowed = value_buffer(count * 4, sink_in == SINK_NARROWED, &held);
            if (narrowed == NULL) goto done;
            narrow_f64(narrowed, values, count);
        }
        if ((slice = float32_array(held)) == NULL) goto done;
        PyObject *start = PyLong_FromLongLong(first);
        if (start == NULL) goto done;
        PyObject *args[2] = {start, slice};
        PyObject *given = PyObject_Vectorcall(sink, args, 2, NULL);
        Py_DECREF(start);
        if (given == NULL) goto done;
        Py_DECREF(given);
    }
    /* the next slice of this segment, or the next step */
    if (!segment_end) {
        if (set_ll(session, str_offset, offset + slice_values) < 0) goto done;
    } else if (set_ll(session, str_offset, 0) < 0 || set_ll(session, str_step, step + 1) < 0) {
        goto done;
    }
    /* RingWorker._write, then _check_done (a phase's end is the Python's: not here) */
    if (out != NULL) {
        PyObject *written = RingPath_write(self, out);
        if (written == NULL) goto done;
        Py_DECREF(written);
    }
    int running = attr_is_none(self->outcome, str_finished_at);
    if (running < 0) goto done;
    if (running) {
        PyObject *due = PyFloat_FromDouble(now + self->stall_timeout);
        int set = due == NULL ? -1 : timer_set(self->stall_timer, due);
        Py_XDECREF(due);
        if (set < 0) goto done;
    }
    r = 1;
done:
    if (view.obj != NULL) PyBuffer_Release(&view);
    if (sink_in != SINK_BODY) PyMem_Free(body);
    if (sink_in != SINK_SUM) PyMem_Free(sum);
    if (sink_in != SINK_NARROWED) PyMem_Free(narrowed);
    Py_XDECREF(held);
    Py_XDECREF(buffer); Py_XDECREF(pending); Py_XDECREF(state); Py_XDECREF(source);
    Py_XDECREF(sink); Py_XDECREF(bounds); Py_XDECREF(accumulate); Py_XDECREF(own);
    Py_XDECREF(out); Py_XDECREF(slice);
    return r;
}

/* RingWorker._on_data of a segment with payload from the left neighbour */
static PyObject *on_data(RingPath *self, Segment *s) {
    int started = get_truth(self->worker, str_started);
    int running = attr_is_none(self->outcome, str_finished_at);
    if (started < 0 || running < 0) return NULL;
    if (!started || !running) return segment_to_python(self, str_on_data_py, s);
    long long expected, seq = s->seq;
    if (get_ll(self->receiver, str_next_expected, &expected) < 0) return NULL;
    Py_ssize_t size = s->size;
    if (seq + size > 0xFFFFFFFFLL) return segment_to_python(self, str_on_data_py, s);  /* SACK.pack's range */
    PyObject *state = attr_get(self->session, str_state);
    if (state == NULL) return NULL;
    int active = state == self->active_a || state == self->active_b;
    Py_DECREF(state);
    if (!active) return segment_to_python(self, str_on_data_py, s);
    if (seq != expected) {
        if (receive_out_of_order(self, s, expected) < 0) return NULL;
        Py_RETURN_NONE;
    }
    double now = loop_now(self->node);
    if (PyErr_Occurred()) return NULL;
    /* ReliableReceiver.on_segment, in order: this segment and what it joins up with */
    long long unacked;
    if (get_ll(self->receiver, str_unacked, &unacked) < 0) return NULL;
    expected += size;
    int filled_hole = 0;
    PyObject *joined = NULL;        /* the segment and the held ones after it, when there are */
    const char *data = s->data;
    if (PyDict_GET_SIZE(self->early) != 0) {
        PyObject *pieces = PyList_New(0), *payload = segment_payload(s);
        if (pieces == NULL || payload == NULL || PyList_Append(pieces, payload) < 0) {
            Py_XDECREF(pieces);
            return NULL;
        }
        for (;;) {
            PyObject *key = PyLong_FromLongLong(expected);
            if (key == NULL) { Py_DECREF(pieces); return NULL; }
            PyObject *piece = PyDict_GetItemWithError(self->early, key);
            if (piece == NULL) {
                Py_DECREF(key);
                if (PyErr_Occurred()) { Py_DECREF(pieces); return NULL; }
                break;
            }
            Py_INCREF(piece);
            int r = PyDict_DelItem(self->early, key) < 0 || PyList_Append(pieces, piece) < 0;
            Py_DECREF(key);
            Py_ssize_t length = PyBytes_Check(piece) ? PyBytes_GET_SIZE(piece) : -1;
            if (length < 0 && !r) PyErr_SetString(PyExc_TypeError, "ring path: held data is not bytes");
            Py_DECREF(piece);
            if (r || length < 0) { Py_DECREF(pieces); return NULL; }
            expected += length;
            filled_hole = 1;
        }
        joined = join_bytes(pieces);
        Py_DECREF(pieces);
        if (joined == NULL) return NULL;
        data = PyBytes_AS_STRING(joined);
        size = PyBytes_GET_SIZE(joined);
    }
    unacked += 1;
    int ack = (s->flags & 0x08) || filled_hole || PyDict_GET_SIZE(self->early) > 0
        || unacked >= self->ack_every;
    if (ack) unacked = 0;
    if (set_ll(self->receiver, str_next_expected, expected) < 0
            || set_ll(self->receiver, str_unacked, unacked) < 0
            || (ack && send_ack(self, expected, 0, 0, 0) < 0)) {
        Py_XDECREF(joined);
        return NULL;
    }
    if (!ack && unacked == 1) {     /* ReliableReceiver.delay_started: the delayed-ACK timer */
        PyObject *due = PyFloat_FromDouble(now + self->delayed_ack);
        int r = due == NULL ? -1 : timer_set(self->delack_timer, due);
        Py_XDECREF(due);
        if (r < 0) { Py_XDECREF(joined); return NULL; }
    }
    /* the session's part: bytes that complete no message are absorbed here */
    PyObject *header;
    Py_ssize_t message = 0;
    int absorbed = absorbs(self, data, size, &header, &message);
    PyObject *result = NULL;
    if (absorbed > 0) {
        if (absorb(self, data, size, header, message, now) == 0) result = Py_NewRef(Py_None);
        Py_XDECREF(header);
    } else if (absorbed == 0) {
        int delivered = deliver_message(self, data, size, now);
        if (delivered > 0) {
            result = Py_NewRef(Py_None);
        } else if (delivered == 0) {
            PyObject *bytes = joined != NULL ? joined : segment_payload(s);
            if (bytes != NULL) result = call_python(self, str_deliver, bytes);
        }
    }
    Py_XDECREF(joined);
    return result;
}

/* RingWorker._on_data */
static PyObject *RingPath_on_data(RingPath *self, PyObject *d) {
    if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 10) return call_python(self, str_on_data_py, d);
    PyObject *src = PyTuple_GET_ITEM(d, 1), *payload = PyTuple_GET_ITEM(d, 5);
    int mine = PyObject_RichCompareBool(src, self->left_ip, Py_EQ);
    if (mine < 0) return NULL;
    if (!mine || !PyBytes_CheckExact(payload) || PyBytes_GET_SIZE(payload) == 0)
        return call_python(self, str_on_data_py, d);
    Segment s = {.datagram = d, .payload = payload};
    s.data = PyBytes_AS_STRING(payload);
    s.size = PyBytes_GET_SIZE(payload);
    s.seq = PyLong_AsLongLong(PyTuple_GET_ITEM(d, 6));
    if (s.seq == -1 && PyErr_Occurred()) return NULL;
    s.flags = PyLong_AsLong(PyTuple_GET_ITEM(d, 8));
    if (s.flags == -1 && PyErr_Occurred()) return NULL;
    return on_data(self, &s);
}

/* Whether `handler` (a host's listener) is a RingPath's on_data or on_ack, which take a
 * frame read in place (`ring_path_receive_frame`) when its addresses are plain bytes */
static int ring_path_reads_in_place(PyObject *handler) {
    if (!PyCFunction_Check(handler)) return 0;
    PyObject *owner = PyCFunction_GET_SELF(handler);
    if (owner == NULL || Py_TYPE(owner) != &RingPathType) return 0;
    PyCFunction f = PyCFunction_GET_FUNCTION(handler);
    if (f != (PyCFunction)RingPath_on_data && f != (PyCFunction)RingPath_on_ack) return 0;
    RingPath *self = (RingPath *)owner;
    return self->left_ip != NULL && self->right_ip != NULL
        && PyBytes_CheckExact(self->left_ip) && PyBytes_GET_SIZE(self->left_ip) == 4
        && PyBytes_CheckExact(self->right_ip) && PyBytes_GET_SIZE(self->right_ip) == 4;
}

/* The listener `handler` (`ring_path_reads_in_place`) given the TCP frame `frame` (`v` its
 * view) as its method would have been given the Datagram: None, or NULL with an exception */
static PyObject *ring_path_receive_frame(PyObject *handler, PyObject *frame,
                                         const FrameView *v) {
    RingPath *self = (RingPath *)PyCFunction_GET_SELF(handler);
    Segment s;
    segment_of_frame(&s, frame, v);
    self->in_place++;
    PyObject *r;
    if (PyCFunction_GET_FUNCTION(handler) == (PyCFunction)RingPath_on_ack) {
        r = same_ip(v->f + 26, self->right_ip) ? on_ack(self, &s)
            : segment_to_python(self, str_on_ack_py, &s);
    } else {
        r = same_ip(v->f + 26, self->left_ip) && s.size > 0 ? on_data(self, &s)
            : segment_to_python(self, str_on_data_py, &s);
    }
    segment_release(&s);
    return r;
}

/* RingWorker._write for a sender without congestion control: ReliableSender.write (the data
 * cut into mss pieces, PSH on the last) and its _fill, framed and sent as `_transmit` does */
static PyObject *RingPath_write(RingPath *self, PyObject *data) {
    if (self->reno || !PyBytes_CheckExact(data)) return call_python(self, str_write_py, data);
    Py_ssize_t size = PyBytes_GET_SIZE(data);
    if (size == 0) Py_RETURN_NONE;
    double now = loop_now(self->node);
    if (PyErr_Occurred()) return NULL;
    for (Py_ssize_t start = 0; start < size; start += self->mss) {
        Py_ssize_t stop = start + self->mss < size ? start + self->mss : size;
        PyObject *piece = PyBytes_FromStringAndSize(PyBytes_AS_STRING(data) + start,
                                                    stop - start);
        if (piece == NULL) return NULL;
        PyObject *entry = PyTuple_Pack(2, piece, start + self->mss >= size ? Py_True : Py_False);
        Py_DECREF(piece);
        if (entry == NULL) return NULL;
        PyObject *r = PyObject_CallMethodOneArg(self->unsent, str_rp_append, entry);
        Py_DECREF(entry);
        if (r == NULL) return NULL;
        Py_DECREF(r);
    }
    PyObject *segments = sender_fill(self, now);       /* write fills only, as there */
    if (segments == NULL) return NULL;
    int r = transmit(self, segments);
    Py_DECREF(segments);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- the type ---------------------------------------------------------------------------- */

static PyObject *attr_chain(PyObject *o, PyObject *a, PyObject *b) {
    PyObject *first = attr_get(o, a);
    if (first == NULL || b == NULL) return first;
    PyObject *second = attr_get(first, b);
    Py_DECREF(first);
    return second;
}

static int RingPath_init(RingPath *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"worker", "outstanding_class", "active_states", NULL};
    PyObject *worker, *outstanding_class, *active;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO", names, &worker, &outstanding_class,
                                     &active))
        return -1;
    if (!PyTuple_Check(active) || PyTuple_GET_SIZE(active) != 2) {
        PyErr_SetString(PyExc_TypeError, "RingPath: active_states is a pair of RingStates");
        return -1;
    }
    PyObject *node = PyObject_GetAttrString(worker, "node");
    if (node == NULL) return -1;
    if (!PyObject_TypeCheck(node, &HostPortType)) {
        Py_DECREF(node);
        PyErr_SetString(PyExc_TypeError, "RingPath: the worker's node is not a native host");
        return -1;
    }
    Py_XSETREF(self->node, node);
    Py_INCREF(worker); Py_XSETREF(self->worker, worker);
    Py_INCREF(outstanding_class); Py_XSETREF(self->outstanding_class, outstanding_class);
    if (outstanding_offsets(self, outstanding_class) < 0) return -1;
    Py_INCREF(PyTuple_GET_ITEM(active, 0));
    Py_XSETREF(self->active_a, PyTuple_GET_ITEM(active, 0));
    Py_INCREF(PyTuple_GET_ITEM(active, 1));
    Py_XSETREF(self->active_b, PyTuple_GET_ITEM(active, 1));
    struct { PyObject **slot; PyObject *o; PyObject *a, *b; } refs[] = {
        {&self->sender, worker, str_sender, NULL},
        {&self->receiver, worker, str_receiver, NULL},
        {&self->session, worker, str_session, NULL},
        {&self->decoder, worker, str_session, str_decoder},
        {&self->outcome, worker, str_outcome, NULL},
        {&self->rto_timer, worker, str_rto_timer, NULL},
        {&self->stall_timer, worker, str_stall_timer, NULL},
        {&self->delack_timer, worker, str_delack_timer, NULL},
        {&self->right_ip, worker, str_right_ip, NULL},
        {&self->left_ip, worker, str_left_ip, NULL},
        {&self->data_port, worker, str_data_port_attr, NULL},
        {&self->ack_port, worker, str_ack_port_attr, NULL},
        {&self->gateway_mac, node, str_addressing, str_gateway_mac},
        {&self->mac, node, str_addressing, str_mac},
        {&self->ip, node, str_addressing, str_ip},
        {&self->outstanding, worker, str_sender, str_outstanding},
        {&self->unsent, worker, str_sender, str_unsent},
        {&self->resends, worker, str_sender, str_resends},
        {&self->sender_counters, worker, str_sender, str_counters},
        {&self->session_counters, worker, str_session, str_counters},
        {&self->early, worker, str_receiver, str_early},
    };
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        PyObject *v = attr_chain(refs[i].o, refs[i].a, refs[i].b);
        if (v == NULL) return -1;
        Py_XSETREF(*refs[i].slot, v);
    }
    if (!PyDict_Check(self->early)) {
        PyErr_SetString(PyExc_TypeError, "RingPath: the receiver's _early is not a dict");
        return -1;
    }
    PyObject *config = attr_get(self->sender, str_config);
    if (config == NULL) return -1;
    PyObject *receiver_config = attr_get(self->receiver, str_config);
    if (receiver_config == NULL) { Py_DECREF(config); return -1; }
    int bad = get_ll(config, str_window_bytes, &self->window) < 0
        || get_ll(config, str_mss, &self->mss) < 0 || self->mss < 1
        || get_ll(config, str_dupthresh, &self->dupthresh) < 0
        || get_ll(receiver_config, str_ack_every, &self->ack_every) < 0
        || get_double(receiver_config, str_delayed_ack, &self->delayed_ack) < 0
        || get_double(config, str_rto_min, &self->rto_min) < 0
        || get_double(config, str_rto_max, &self->rto_max) < 0;
    Py_DECREF(config);
    Py_DECREF(receiver_config);
    if (bad || get_double(worker, str_stall_timeout, &self->stall_timeout) < 0) return -1;
    int reno = get_truth(self->sender, str_reno);
    if (reno < 0) return -1;
    self->reno = reno;
    PyObject *budget = attr_get(self->sender, str_nic_budget);
    if (budget == NULL) return -1;
    self->nic_budget = budget == Py_None ? -1 : PyLong_AsLongLong(budget);
    Py_DECREF(budget);
    if (PyErr_Occurred()) return -1;
    PyObject *on_left = PyObject_GetAttrString((PyObject *)self, "on_left");
    if (on_left == NULL) return -1;
    Py_XSETREF(self->on_left, on_left);
    return 0;
}

#define RING_PATH_REFS(X) X(worker) X(node) X(sender) X(receiver) X(session) X(decoder) \
    X(outcome) X(rto_timer) X(stall_timer) X(delack_timer) X(right_ip) X(left_ip) X(gateway_mac) X(mac) X(ip) \
    X(data_port) X(ack_port) X(outstanding) X(unsent) X(resends) X(sender_counters) \
    X(session_counters) X(early) X(outstanding_class) X(active_a) X(active_b) X(on_left)

static int RingPath_traverse(RingPath *self, visitproc visit, void *arg) {
#define VISIT(f) Py_VISIT(self->f);
    RING_PATH_REFS(VISIT)
#undef VISIT
    return 0;
}

static int RingPath_clear(RingPath *self) {
#define CLEAR(f) Py_CLEAR(self->f);
    RING_PATH_REFS(CLEAR)
#undef CLEAR
    return 0;
}

static void RingPath_dealloc(RingPath *self) {
    PyObject_GC_UnTrack(self);
    RingPath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef RingPath_methods[] = {
    {"on_data", (PyCFunction)RingPath_on_data, METH_O, "RingWorker._on_data, its common case here"},
    {"on_ack", (PyCFunction)RingPath_on_ack, METH_O, "RingWorker._on_ack, its common case here"},
    {"on_left", (PyCFunction)RingPath_on_left, METH_O, "RingWorker._on_left, its common case here"},
    {"write", (PyCFunction)RingPath_write, METH_O, "RingWorker._write, without congestion control"},
    {NULL}
};

static PyMemberDef RingPath_members[] = {
    {"in_place", T_LONGLONG, offsetof(RingPath, in_place), READONLY,
     "segments and ACKs read from their frames in place (hostport.c), not from a Datagram"},
    {NULL}
};

static PyTypeObject RingPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inaemu_sim_native.RingPath",
    .tp_basicsize = sizeof(RingPath),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RingPath_init,
    .tp_dealloc = (destructor)RingPath_dealloc,
    .tp_traverse = (traverseproc)RingPath_traverse,
    .tp_clear = (inquiry)RingPath_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = RingPath_methods,
    .tp_members = RingPath_members,
    .tp_doc = "RingPath(worker, outstanding_class, active_states): a ring rank's per-segment "
              "path in C (ring_worker.py's contract)",
};

static int ring_path_module_init(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&str_sender, "sender"}, {&str_receiver, "receiver"}, {&str_session, "session"},
        {&str_decoder, "_decoder"}, {&str_outcome, "outcome"}, {&str_rto_timer, "_rto_timer"},
        {&str_stall_timer, "_stall_timer"}, {&str_delack_timer, "_delack_timer"},
        {&str_delayed_ack, "delayed_ack"}, {&str_right_ip, "right_ip"},
        {&str_left_ip, "left_ip"}, {&str_data_port_attr, "data_port"},
        {&str_ack_port_attr, "ack_port"}, {&str_addressing, "addressing"},
        {&str_gateway_mac, "gateway_mac"}, {&str_mac, "mac"}, {&str_ip, "ip"},
        {&str_outstanding, "_outstanding"}, {&str_unsent, "_unsent"},
        {&str_resends, "_resends"}, {&str_counters, "counters"}, {&str_config, "config"},
        {&str_window_bytes, "window_bytes"}, {&str_ack_every, "ack_every"},
        {&str_rto_min, "rto_min"}, {&str_rto_max, "rto_max"}, {&str_nic_budget, "nic_budget"},
        {&str_reno, "_reno"}, {&str_stall_timeout, "stall_timeout"},
        {&str_on_data_py, "_on_data"}, {&str_on_ack_py, "_on_ack"},
        {&str_on_left_py, "_on_left"}, {&str_deliver, "_deliver"},
        {&str_read, "read"}, {&str_pending_messages, "_pending"}, {&str_source, "_source"},
        {&str_sink, "_sink"}, {&str_bounds, "_bounds"}, {&str_accumulate, "accumulate"},
        {&str_rank, "rank"}, {&str_n, "n"}, {&str_calls, "calls"}, {&str_step, "_step"},
        {&str_offset, "_offset"}, {&str_slice_values, "slice_values"},
        {&str_messages_received, "messages_received"}, {&str_messages_sent, "messages_sent"},
        {&str_bytes_sent, "bytes_sent"}, {&str_started, "_started"},
        {&str_finished_at, "finished_at"}, {&str_early, "_early"},
        {&str_next_expected, "next_expected"}, {&str_unacked, "_unacked_in_order"},
        {&str_state, "state"}, {&str_header, "_header"}, {&str_buffer, "_buffer"},
        {&str_bytes_received, "bytes_received"}, {&str_ident, "_ident"},
        {&str_deadline, "deadline"},
        {&str_set, "set"}, {&str_popleft, "popleft"}, {&str_seq, "seq"}, {&str_data, "data"},
        {&str_waiting, "waiting"}, {&str_sacked, "sacked"}, {&str_pending, "pending"},
        {&str_sacked_bytes, "_sacked_bytes"}, {&str_pending_bytes, "_pending_bytes"},
        {&str_retransmitted, "retransmitted"}, {&str_sent_at, "sent_at"},
        {&str_srtt, "_srtt"}, {&str_unbacked_rto, "_unbacked_rto"}, {&str_rttvar, "_rttvar"}, {&str_rto, "_rto"},
        {&str_acked, "_acked"}, {&str_expiries, "_expiries"}, {&str_next_seq, "_next_seq"},
        {&str_nic_bytes, "nic_bytes"}, {&str_segments_sent, "segments_sent"},
        {&str_payload_bytes_sent, "payload_bytes_sent"}, {&str_loop_attr, "loop"},
        {&str_rp_now, "now"}, {&str_rp_append, "append"},
        {&str_write_py, "_write_python"}, {&str_mss, "mss"}, {&str_psh, "psh"},
        {&str_retransmissions, "retransmissions"},
        {&str_fast_retransmissions, "fast_retransmissions"}, {&str_fast_done, "fast_done"},
        {&str_dupthresh, "dupthresh"}, {&str_duplicates, "duplicates"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *names[i].slot = PyUnicode_InternFromString(names[i].text);
        if (*names[i].slot == NULL) return -1;
    }
    return PyType_Ready(&RingPathType);
}
