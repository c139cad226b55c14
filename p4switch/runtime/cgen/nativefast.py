"""The common packet flow as one C function, `fast`, in a program's native module.

Why: around the C parser, controls and deparser, the generated Python `fast` (pygen/fastpath.py)
copies the PHV, sets a few slots, tests the divergences and makes four calls through Python
(bound partials that check their arguments each time); as one C call, those steps cost what C
costs. What stays the same: the PHV is the same two Python lists, made from the same initial
lists, written in the same order; every divergence (a clone or resubmission after ingress, a
multicast group, an egress request, a packet length egress reads) calls the same Python the
Python `fast` calls, with the same arguments. Which programs get it, and its plan (the slots
and the Python functions), is `native_fast_path` here: it is built only when all four
of parse, ingress, egress and deparse are C, the fast path needs no clock and no priority test,
and egress queues are not in use (the queued variant stays Python).
"""

from __future__ import annotations

import functools
from typing import Callable

from ..phv import layout as L
from ..pygen.fastpath import (egress_divergence_slots, live_slots, priority_test,
                              queue_slots_written)
from ..pygen.primgen import DROP_PORT

# the order of the plan tuple (native_fast_path builds it; the C reads it by these positions)
PLAN_FIELDS = ("init_fields", "init_valid", "ingress_port", "packet_length", "ingress_length",
               "divert_after_ingress", "slow_after_ingress", "mcast_grp", "multicast",
               "egress_spec", "egress_port", "zero_before_length", "zero_after_length",
               "length_after_ingress", "divert_after_egress", "slow_after_egress",
               "dropped_in_egress", "spare_phv")

METHOD = "fast"


def source() -> str:
    """The C of `ctl_fast`, to follow the module's ctl_parse, ctl_ingress, ctl_egress and
    ctl_deparse."""
    return _SOURCE.format(drop_port=DROP_PORT)


def native_fast_path(engine, python_fast: Callable) -> Callable | None:
    """`python_fast` (pygen/fastpath.py `build_fast_path`'s, not queued) as one C call, with
    its plan: the slots it writes and tests and the Python it hands a diverging packet to
    (its own `multicast` among them); None when the program has no such C (a control stayed
    Python) or its fast path reads the clock or tests the priority (those stay Python)."""
    code = engine.code
    multicast = python_fast.__globals__.get("multicast")
    anywhere = code.writes_anywhere
    if code.native_fast is None or engine.reads_time or \
            priority_test(engine, anywhere) is not None:
        return None
    egress_tests, dropped = egress_divergence_slots(engine.egress_spec,
                                                     code.writes_after_ingress, anywhere)
    to_group = engine.mcast_grp is not None
    plan = {
        "init_fields": engine.init_fields, "init_valid": engine.init_valid,
        "ingress_port": engine.ingress_port, "packet_length": engine.packet_length,
        "ingress_length": engine.ingress_length,
        "divert_after_ingress": tuple(live_slots([L.CLONE, L.RESUBMIT], anywhere)),
        "slow_after_ingress": engine.slow_after_ingress,
        "mcast_grp": engine.mcast_grp if to_group else -1,
        "multicast": multicast if to_group else None,
        "egress_spec": engine.egress_spec, "egress_port": engine.egress_port,
        "zero_before_length": (engine.egress_spec, engine.egress_rid),
        "zero_after_length": (*queue_slots_written(engine, anywhere), L.EXIT),
        "length_after_ingress": engine.length_after_ingress
        if engine.egress_reads_length else None,
        "divert_after_egress": tuple(egress_tests),
        "slow_after_egress": engine.slow_after_egress,
        "dropped_in_egress": dropped,
        "spare_phv": [None, None]}     # the last packet's f and v, when nothing kept them
    if to_group and multicast is None:
        return None
    return functools.partial(code.native_fast, tuple(plan[name] for name in PLAN_FIELDS))


_SOURCE = r"""
/* The common packet flow as one C call (pygen/fastpath.py `build_fast_path`, and
   `native_fast_path` in cgen/nativefast.py): the same steps as the generated Python `fast`, in the same order, over the same PHV lists,
   with the parser, controls and deparser of this module called directly. Every divergence
   (clone, resubmit, multicast, an egress request) hands the packet to the same Python code
   the Python `fast` hands it to. */
enum {{ PL_INIT_F, PL_INIT_V, PL_IN_PORT, PL_PKT_LEN, PL_IN_LEN, PL_DIVERT, PL_SLOW_INGRESS,
       PL_MCAST, PL_MULTICAST, PL_SPEC, PL_EPORT, PL_ZERO, PL_ZERO_AFTER, PL_NEW_LENGTH, PL_EDIVERT,
       PL_SLOW_EGRESS, PL_DROPPED, PL_SPARE, PL_SIZE }};

static inline int set_item(PyObject *list, Py_ssize_t i, PyObject *x) {{
    Py_INCREF(x);
    PyObject *old = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, x);
    Py_DECREF(old);
    return 0;
}}

/* a slot of the plan: -1 (and no error) for "none", -1 with an error for one out of the PHV */
static inline Py_ssize_t plan_slot(PyObject *plan, int at, PyObject *f) {{
    Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, at));
    if (s >= PyList_GET_SIZE(f)) {{
        PyErr_SetString(PyExc_IndexError, "fast path slot beyond the PHV");
        return -1;
    }}
    return s;
}}

/* whether any of the slots in the tuple holds a true value (Python's `f[a] or f[b]`) */
static int any_true(PyObject *f, PyObject *slots) {{
    Py_ssize_t i;
    for (i = 0; i < PyTuple_GET_SIZE(slots); i++) {{
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, i));
        if (s < 0 || s >= PyList_GET_SIZE(f)) {{
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "fast path slot");
            return -1;
        }}
        int t = PyObject_IsTrue(PyList_GET_ITEM(f, s));
        if (t != 0) return t;
    }}
    return 0;
}}

static int zero_slots(PyObject *f, PyObject *slots) {{
    Py_ssize_t i;
    for (i = 0; i < PyTuple_GET_SIZE(slots); i++) {{
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, i));
        if (s < 0 || s >= PyList_GET_SIZE(f)) {{
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "fast path slot");
            return -1;
        }}
        if (wr(f, s, 0)) return -1;
    }}
    return 0;
}}

/* Python's `x == value` for a field's value */
static inline int equals(PyObject *x, u64 value) {{
    u64 got;
    if (small_value(x, &got)) return got == value;
    PyObject *y = from_u64(value);
    if (y == NULL) return -1;
    int r = PyObject_RichCompareBool(x, y, Py_EQ);
    Py_DECREF(y);
    return r;
}}

/* A fresh PHV list: a copy of the initial one, or the last packet's list (one nothing else
   holds, `keep_phv`) made equal to it again, item by item where they differ (a packet changes
   a few dozen of its slots; the copy and the free touch all of them). */
static PyObject *fresh_phv(PyObject *plan, int init_at, Py_ssize_t spare_at) {{
    PyObject *init = PyTuple_GET_ITEM(plan, init_at);
    PyObject *spare = PyTuple_GET_ITEM(plan, PL_SPARE);
    PyObject *list = PyList_GET_ITEM(spare, spare_at);
    Py_ssize_t i, n = PyList_GET_SIZE(init);
    if (list == Py_None || PyList_GET_SIZE(list) != n)
        return PyList_GetSlice(init, 0, PY_SSIZE_T_MAX);
    Py_INCREF(Py_None);
    PyList_SET_ITEM(spare, spare_at, Py_None);     /* the reference moves to the caller */
    for (i = 0; i < n; i++) {{
        PyObject *want = PyList_GET_ITEM(init, i), *held = PyList_GET_ITEM(list, i);
        if (held != want) {{
            Py_INCREF(want);
            PyList_SET_ITEM(list, i, want);
            Py_DECREF(held);
        }}
    }}
    return list;
}}

/* keep a packet's PHV list for the next packet if no one else holds it (a queue, a clone, a
   frame); the reference is taken either way */
static void keep_phv(PyObject *plan, Py_ssize_t spare_at, PyObject *list) {{
    PyObject *spare = PyTuple_GET_ITEM(plan, PL_SPARE);
    if (Py_REFCNT(list) == 1 && PyList_GET_ITEM(spare, spare_at) == Py_None) {{
        PyList_SET_ITEM(spare, spare_at, list);
        Py_DECREF(Py_None);
        return;
    }}
    Py_DECREF(list);
}}

static PyObject *call_py(PyObject *fn, PyObject **args, Py_ssize_t n) {{
    return PyObject_Vectorcall(fn, args, n, NULL);
}}

static PyObject *ctl_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {{
    PyObject *S, *plan, *port, *data, *f = NULL, *v = NULL, *pos = NULL, *length = NULL,
             *payload = NULL, *eport = NULL, *out = NULL, *got, *call[8];
    Py_ssize_t slot, i;
    int t;
    if (nargs != 4 || !PyTuple_CheckExact(args[1]) || PyTuple_GET_SIZE(args[1]) != PL_SIZE) {{
        PyErr_SetString(PyExc_TypeError, "native fast path: expected (state, plan, port, data)");
        return NULL;
    }}
    S = args[0]; plan = args[1]; port = args[2]; data = args[3];
    f = fresh_phv(plan, PL_INIT_F, 0);
    v = fresh_phv(plan, PL_INIT_V, 1);
    if (f == NULL || v == NULL) goto fail;
    if ((slot = plan_slot(plan, PL_IN_PORT, f)) < 0) goto fail;
    set_item(f, slot, port);
    {{
        Py_ssize_t n = PyObject_Length(data);
        if (n < 0) goto fail;
        length = PyLong_FromSsize_t(n);
        if (length == NULL) goto fail;
    }}
    if ((slot = plan_slot(plan, PL_PKT_LEN, f)) < 0) goto fail;
    set_item(f, slot, length);
    if ((slot = plan_slot(plan, PL_IN_LEN, f)) < 0) goto fail;
    set_item(f, slot, length);
    {{
        PyObject *a[4] = {{S, f, v, data}};
        pos = ctl_parse(NULL, a, 4);
        if (pos == NULL) goto fail;
    }}
    {{
        PyObject *a[3] = {{S, f, v}};
        got = ctl_ingress(NULL, a, 3);
        if (got == NULL) goto fail;
        Py_DECREF(got);
    }}
    if ((t = any_true(f, PyTuple_GET_ITEM(plan, PL_DIVERT))) != 0) {{
        if (t < 0) goto fail;
        call[0] = f; call[1] = v; call[2] = data; call[3] = pos; call[4] = port;
        out = call_py(PyTuple_GET_ITEM(plan, PL_SLOW_INGRESS), call, 5);
        goto done;
    }}
    Py_ssize_t start = PyLong_AsSsize_t(pos);
    if (start == -1 && PyErr_Occurred()) goto fail;
    PyObject *new_length = PyTuple_GET_ITEM(plan, PL_NEW_LENGTH);
    if ((slot = plan_slot(plan, PL_MCAST, f)) >= 0) {{
        PyObject *mgid = PyList_GET_ITEM(f, slot);
        Py_INCREF(mgid);
        t = PyObject_IsTrue(mgid);
        if (t != 0) {{
            PyObject *zero = NULL, *multicast_length = length;
            if (t < 0) {{ Py_DECREF(mgid); goto fail; }}
            payload = PySequence_GetSlice(data, start, PY_SSIZE_T_MAX);
            zero = PyLong_FromLong(0);
            if (payload == NULL || zero == NULL) {{ Py_XDECREF(zero); Py_DECREF(mgid); goto fail; }}
            Py_INCREF(multicast_length);
            if (new_length != Py_None) {{
                Py_ssize_t n = PyObject_Length(data);
                PyObject *rest = n < 0 ? NULL : PyLong_FromSsize_t(n - start);
                Py_DECREF(multicast_length);
                multicast_length = NULL;
                if (rest != NULL) {{
                    call[0] = f; call[1] = v; call[2] = rest;
                    multicast_length = call_py(new_length, call, 3);
                    Py_DECREF(rest);
                }}
                if (multicast_length == NULL) {{ Py_DECREF(zero); Py_DECREF(mgid); goto fail; }}
            }}
            call[0] = f; call[1] = v; call[2] = payload; call[3] = port;
            call[4] = multicast_length; call[5] = zero; call[6] = mgid;
            out = call_py(PyTuple_GET_ITEM(plan, PL_MULTICAST), call, 7);
            Py_DECREF(multicast_length);
            Py_DECREF(zero);
            Py_DECREF(mgid);
            goto done;
        }}
        Py_DECREF(mgid);
    }} else if (PyErr_Occurred()) {{
        goto fail;
    }}
    if ((slot = plan_slot(plan, PL_SPEC, f)) < 0) goto fail;
    eport = PyList_GET_ITEM(f, slot);
    Py_INCREF(eport);
    if ((t = equals(eport, {drop_port}ULL)) != 0) {{
        if (t < 0) goto fail;
        out = PyList_New(0);
        goto done;
    }}
    if (new_length != Py_None) {{
        Py_ssize_t n = PyObject_Length(data);
        if (n < 0) goto fail;
        PyObject *rest = PyLong_FromSsize_t(n - start);
        if (rest == NULL) goto fail;
        call[0] = f; call[1] = v; call[2] = rest;
        got = call_py(new_length, call, 3);
        Py_DECREF(rest);
        if (got == NULL) goto fail;
        Py_SETREF(length, got);
    }}
    if ((slot = plan_slot(plan, PL_EPORT, f)) < 0) goto fail;
    set_item(f, slot, eport);
    if (zero_slots(f, PyTuple_GET_ITEM(plan, PL_ZERO))) goto fail;
    if ((slot = plan_slot(plan, PL_PKT_LEN, f)) < 0) goto fail;
    set_item(f, slot, length);
    if (zero_slots(f, PyTuple_GET_ITEM(plan, PL_ZERO_AFTER))) goto fail;
    {{
        PyObject *a[3] = {{S, f, v}};
        got = ctl_egress(NULL, a, 3);
        if (got == NULL) goto fail;
        Py_DECREF(got);
    }}
    payload = PySequence_GetSlice(data, start, PY_SSIZE_T_MAX);
    if (payload == NULL) goto fail;
    if ((t = any_true(f, PyTuple_GET_ITEM(plan, PL_EDIVERT))) != 0) {{
        if (t < 0) goto fail;
        call[0] = f; call[1] = v; call[2] = payload; call[3] = eport; call[4] = length;
        call[5] = port;
        out = call_py(PyTuple_GET_ITEM(plan, PL_SLOW_EGRESS), call, 6);
        goto done;
    }}
    if (PyTuple_GET_ITEM(plan, PL_DROPPED) == Py_True) {{
        if ((slot = plan_slot(plan, PL_SPEC, f)) < 0) goto fail;
        if ((t = equals(PyList_GET_ITEM(f, slot), {drop_port}ULL)) != 0) {{
            if (t < 0) goto fail;
            out = PyList_New(0);
            goto done;
        }}
    }}
    {{
        PyObject *a[4] = {{S, f, v, payload}};
        PyObject *bytes = ctl_deparse(NULL, a, 4);
        if (bytes == NULL) goto fail;
        PyObject *pair = PyTuple_Pack(2, eport, bytes);
        Py_DECREF(bytes);
        if (pair == NULL) goto fail;
        out = PyList_New(1);
        if (out == NULL) {{ Py_DECREF(pair); goto fail; }}
        PyList_SET_ITEM(out, 0, pair);
    }}
done:
    if (out != NULL) {{
        keep_phv(plan, 0, f);
        keep_phv(plan, 1, v);
        f = v = NULL;
    }}
fail:
    Py_XDECREF(f); Py_XDECREF(v); Py_XDECREF(pos); Py_XDECREF(length);
    Py_XDECREF(payload); Py_XDECREF(eport);
    return out;
}}
"""
