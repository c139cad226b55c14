/* Host framing in C: inaemu/sim/frames.py's `parse` and `Addressing.udp_frame`/`tcp_frame`,
 * byte for byte.
 *
 * `parse_frame` gives frames.py's `Datagram` (a named tuple, filled in place as the tuple
 * subclass it is) or None, with the same checks in the same order; a frame that is not
 * `bytes` goes to the Python `parse` (its slices keep the frame's type there). The builders
 * write the Ethernet, IPv4 (version/IHL 0x45, DF, TTL 64, the header checksum) and UDP or TCP
 * headers and the payload into one new `bytes`, where the Python ones pack and join. Their
 * arguments are checked as `struct.pack` checks them (ports, window and flags are 16 bits);
 * the ident is masked to 16 bits and TCP's sequence numbers to 32, as frames.py masks them.
 */

static PyObject *datagram_class, *python_parse, *empty_bytes;

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

static unsigned long be32(const unsigned char *p) {
    return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

static void put16(unsigned char *p, unsigned v) { p[0] = v >> 8; p[1] = v & 0xFF; }

static void put32(unsigned char *p, unsigned long v) {
    p[0] = v >> 24; p[1] = (v >> 16) & 0xFF; p[2] = (v >> 8) & 0xFF; p[3] = v & 0xFF;
}

/* Datagram(proto, src_ip, dst_ip, sport, dport, payload, seq, ack, flags, options), taking
 * the references given (any NULL: fails, releasing the others) */
static PyObject *make_datagram(PyObject *items[10]) {
    PyObject *d = NULL;
    for (int i = 0; i < 10; i++) if (items[i] == NULL) goto fail;
    d = ((PyTypeObject *)datagram_class)->tp_alloc((PyTypeObject *)datagram_class, 10);
    if (d == NULL) goto fail;
    for (int i = 0; i < 10; i++) PyTuple_SET_ITEM(d, i, items[i]);
    return d;
fail:
    for (int i = 0; i < 10; i++) Py_XDECREF(items[i]);
    return NULL;
}

/* Where a frame's IPv4 UDP or TCP content lies, as frames.parse reads it: the checks of
 * `parse` itself, without making anything (the hosts' ports read a RESULT in place) */
typedef struct {
    const unsigned char *f;     /* the frame's bytes */
    unsigned proto;             /* 17 (UDP) or 6 (TCP) */
    Py_ssize_t l4;              /* the transport header's first byte */
    Py_ssize_t data, size;      /* the payload's first byte and its length */
} FrameView;

/* 1: an exact bytes frame `parse` reads as a Datagram (v filled); 0: one it gives None for */
static int frame_view(PyObject *frame, FrameView *v) {
    const unsigned char *f = (const unsigned char *)PyBytes_AS_STRING(frame);
    Py_ssize_t n = PyBytes_GET_SIZE(frame);
    if (n < 14 + 20 || f[12] != 0x08 || f[13] != 0x00) return 0;
    unsigned version_ihl = f[14], ihl = (version_ihl & 0x0F) * 4;
    if (version_ihl >> 4 != 4 || ihl < 20) return 0;
    Py_ssize_t total = be16(f + 16), end = 14 + total;
    if (end > n || total < (Py_ssize_t)ihl) return 0;
    v->f = f;
    v->proto = f[23];
    v->l4 = 14 + ihl;
    if (v->proto == 17) {
        if (end - v->l4 < 8) return 0;
        Py_ssize_t length = be16(f + v->l4 + 4);
        if (length < 8 || v->l4 + length > end) return 0;
        v->data = v->l4 + 8;
        v->size = length - 8;
        return 1;
    }
    if (v->proto == 6) {
        if (end - v->l4 < 20) return 0;
        Py_ssize_t data = v->l4 + (be16(f + v->l4 + 12) >> 12) * 4;
        if (data > end || data < v->l4 + 20) return 0;
        v->data = data;
        v->size = end - data;
        return 1;
    }
    return 0;
}

/* frames.parse: the IPv4 UDP or TCP content of a frame, or None */
static PyObject *parse_frame(PyObject *frame) {
    if (!PyBytes_CheckExact(frame)) return PyObject_CallOneArg(python_parse, frame);
    FrameView v;
    if (!frame_view(frame, &v)) Py_RETURN_NONE;
    const unsigned char *f = v.f;
    Py_ssize_t l4 = v.l4;
    PyObject *items[10];
    items[5] = PyBytes_FromStringAndSize((const char *)f + v.data, v.size);
    if (v.proto == 17) {
        items[6] = PyLong_FromLong(0);
        items[7] = PyLong_FromLong(0);
        items[8] = PyLong_FromLong(0);
        Py_INCREF(empty_bytes);
        items[9] = empty_bytes;
    } else {
        items[6] = PyLong_FromUnsignedLong(be32(f + l4 + 4));
        items[7] = PyLong_FromUnsignedLong(be32(f + l4 + 8));
        items[8] = PyLong_FromLong(be16(f + l4 + 12) & 0x3F);
        items[9] = PyBytes_FromStringAndSize((const char *)f + l4 + 20, v.data - l4 - 20);
    }
    items[0] = PyLong_FromLong(v.proto);
    items[1] = PyBytes_FromStringAndSize((const char *)f + 26, 4);
    items[2] = PyBytes_FromStringAndSize((const char *)f + 30, 4);
    items[3] = PyLong_FromLong(be16(f + l4));
    items[4] = PyLong_FromLong(be16(f + l4 + 2));
    return make_datagram(items);
}

static PyObject *Frames_parse(PyObject *module, PyObject *frame) { return parse_frame(frame); }

/* a `bytes` argument of exactly `size` bytes (size < 0: any), or an error naming it */
static int exact_bytes(PyObject *o, Py_ssize_t size, const char *what) {
    if (!PyBytes_Check(o) || (size >= 0 && PyBytes_GET_SIZE(o) != size)) {
        if (size >= 0) PyErr_Format(PyExc_ValueError, "%s must be %zd bytes", what, size);
        else PyErr_Format(PyExc_TypeError, "%s must be bytes", what);
        return -1;
    }
    return 0;
}

static int u16(PyObject *o, const char *what, unsigned *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v > 0xFFFF) {
        PyErr_Format(PyExc_ValueError, "%s must be 0..65535, got %ld", what, v);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* Ethernet + IPv4 headers of a frame of `l4_size` bytes past them, into `p` (34 bytes) */
static int put_ipv4(unsigned char *p, PyObject *gateway_mac, PyObject *mac, PyObject *src_ip,
                    PyObject *dst_ip, unsigned proto, Py_ssize_t l4_size, PyObject *ident) {
    if (exact_bytes(gateway_mac, 6, "the gateway MAC") < 0 || exact_bytes(mac, 6, "the MAC") < 0
            || exact_bytes(src_ip, 4, "the source IPv4 address") < 0
            || exact_bytes(dst_ip, 4, "the destination IPv4 address") < 0)
        return -1;
    unsigned long long id = PyLong_AsUnsignedLongLongMask(ident);
    if (id == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    Py_ssize_t total = 20 + l4_size;
    if (total > 0xFFFF) {
        PyErr_Format(PyExc_ValueError, "an IPv4 packet of %zd bytes is too long", total);
        return -1;
    }
    memcpy(p, PyBytes_AS_STRING(gateway_mac), 6);
    memcpy(p + 6, PyBytes_AS_STRING(mac), 6);
    put16(p + 12, 0x0800);
    unsigned char *ip = p + 14;
    ip[0] = 0x45; ip[1] = 0;
    put16(ip + 2, (unsigned)total);
    put16(ip + 4, (unsigned)(id & 0xFFFF));
    put16(ip + 6, 0x4000);
    ip[8] = 64; ip[9] = (unsigned char)proto;
    memcpy(ip + 12, PyBytes_AS_STRING(src_ip), 4);
    memcpy(ip + 16, PyBytes_AS_STRING(dst_ip), 4);
    unsigned long sum = 0x4500 + 0x4000 + (64 << 8 | proto) + total + (id & 0xFFFF)
        + be16(ip + 12) + be16(ip + 14) + be16(ip + 16) + be16(ip + 18);
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    put16(ip + 10, ~sum & 0xFFFF);
    return 0;
}

/* udp_frame(gateway_mac, mac, src_ip, dst_ip, sport, dport, payload, ident) */
static PyObject *Frames_udp(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "udp_frame(gateway_mac, mac, src_ip, dst_ip, sport, "
                        "dport, payload, ident)");
        return NULL;
    }
    unsigned sport, dport;
    if (u16(args[4], "the source port", &sport) < 0
            || u16(args[5], "the destination port", &dport) < 0
            || exact_bytes(args[6], -1, "the payload") < 0)
        return NULL;
    Py_ssize_t size = PyBytes_GET_SIZE(args[6]);
    if (8 + size > 0xFFFF) {
        PyErr_Format(PyExc_ValueError, "a UDP payload of %zd bytes is too long", size);
        return NULL;
    }
    PyObject *frame = bytes_of_size(42 + size);
    if (frame == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(frame);
    if (put_ipv4(p, args[0], args[1], args[2], args[3], 17, 8 + size, args[7]) < 0) {
        Py_DECREF(frame);
        return NULL;
    }
    put16(p + 34, sport);
    put16(p + 36, dport);
    put16(p + 38, (unsigned)(8 + size));
    put16(p + 40, 0);
    memcpy(p + 42, PyBytes_AS_STRING(args[6]), size);
    return frame;
}

/* tcp_frame(gateway_mac, mac, src_ip, dst_ip, sport, dport, seq, ack, flags, options,
 *           payload, ident, window) */
static PyObject *Frames_tcp(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "tcp_frame(gateway_mac, mac, src_ip, dst_ip, sport, "
                        "dport, seq, ack, flags, options, payload, ident, window)");
        return NULL;
    }
    unsigned sport, dport, window;
    if (u16(args[4], "the source port", &sport) < 0
            || u16(args[5], "the destination port", &dport) < 0
            || u16(args[12], "the window", &window) < 0
            || exact_bytes(args[9], -1, "the options") < 0
            || exact_bytes(args[10], -1, "the payload") < 0)
        return NULL;
    unsigned long long seq = PyLong_AsUnsignedLongLongMask(args[6]);
    if (seq == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    unsigned long long ack = PyLong_AsUnsignedLongLongMask(args[7]);
    if (ack == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    long flags = PyLong_AsLong(args[8]);
    if (flags == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t options = PyBytes_GET_SIZE(args[9]), size = PyBytes_GET_SIZE(args[10]);
    long offset_flags = (long)((20 + options) / 4) << 12 | flags;
    if (flags < 0 || offset_flags > 0xFFFF) {
        PyErr_Format(PyExc_ValueError, "TCP offset and flags 0x%lx do not fit 16 bits",
                     offset_flags);
        return NULL;
    }
    PyObject *frame = bytes_of_size(54 + options + size);   /* (a spare one: eventloop.c) */
    if (frame == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(frame);
    if (put_ipv4(p, args[0], args[1], args[2], args[3], 6, 20 + options + size, args[11]) < 0) {
        Py_DECREF(frame);
        return NULL;
    }
    put16(p + 34, sport);
    put16(p + 36, dport);
    put32(p + 38, (unsigned long)(seq & 0xFFFFFFFFULL));
    put32(p + 42, (unsigned long)(ack & 0xFFFFFFFFULL));
    put16(p + 46, (unsigned)offset_flags);
    put16(p + 48, window);
    put16(p + 50, 0);
    put16(p + 52, 0);
    memcpy(p + 54, PyBytes_AS_STRING(args[9]), options);
    memcpy(p + 54 + options, PyBytes_AS_STRING(args[10]), size);
    return frame;
}

static int frames_module_init(void) {
    PyObject *frames = PyImport_ImportModule("inaemu.sim.frames");
    if (frames == NULL) return -1;
    datagram_class = PyObject_GetAttrString(frames, "Datagram");
    python_parse = PyObject_GetAttrString(frames, "parse");
    Py_DECREF(frames);
    empty_bytes = PyBytes_FromStringAndSize(NULL, 0);
    if (datagram_class == NULL || python_parse == NULL || empty_bytes == NULL) return -1;
    if (!PyType_Check(datagram_class)
            || !PyType_IsSubtype((PyTypeObject *)datagram_class, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "frames.Datagram must be a named tuple");
        return -1;
    }
    return 0;
}
