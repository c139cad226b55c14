"""The common packet flow as one C function, `fast`, in a program's native module.

Why: around the C parser, controls and deparser, the generated Python `fast` (pygen/fastpath.py)
copies the PHV, sets a few slots, tests the divergences and makes four calls through Python
(bound partials that check their arguments each time); as one C call, those steps cost what C
costs. The PHV's words (phv/layout.py `word_slots`: unsigned fields of at most 64 bits, the
hidden request slots, every validity flag) stay C integers from the parser to the deparser;
the lists `f` and `v` hold the rest (lane vectors, wide or signed fields) and take the words
only where Python code runs: a callback (nativeprelude.py `phv_out`/`phv_in`) or a packet that
leaves the common path. What stays the same: every divergence (a clone or resubmission after
ingress, an egress request, a packet length egress reads, a multicast replica whose egress
diverges) calls the same Python the Python `fast` calls, with the same arguments and the PHV
lists as they would be. Multicast replicas run here too (`multicast_c`, the generated Python
`multicast` step for step: each replica its own copy of the words, and of the lists when
egress can write them). Which programs get it, and its plan (the slots and the Python
functions), is `native_fast_path` here: it is built only when all four of parse, ingress,
egress and deparse are C, the fast path needs no clock and no priority test, and egress
queues are not in use (the queued variant stays Python).
"""

from __future__ import annotations

import functools
from array import array
from typing import Callable

from ..phv import layout as L
from ..pygen.fastpath import (REPLICATION, egress_divergence_slots, live_slots, priority_test,
                              queue_slots_written)
from ..pygen.primgen import DROP_PORT

# the order of the plan tuple (native_fast_path builds it; the C reads it by these positions)
PLAN_FIELDS = ("init_words", "init_flags", "init_fields", "init_valid", "slow_after_ingress",
               "multicast", "length_after_ingress", "slow_after_egress", "dropped_in_egress",
               "spare_phv", "replicas_of", "slow_after_replica", "c_multicast",
               "cached_replicas", "slots")
# the slots the C reads as C integers, in this order in the plan's `slots` (then the lengths of
# the slot lists of SLOT_LISTS, then those lists' slots): `_slots_bytes`
SLOT_FIELDS = ("ingress_port", "packet_length", "ingress_length", "mcast_grp", "egress_spec",
               "egress_port", "instance_type", "egress_rid")
SLOT_LISTS = ("divert_after_ingress", "zero_before_length", "zero_after_length",
              "divert_after_egress")

METHOD = "fast"
U64 = (1 << 64) - 1


def source(layout, words: tuple[int, ...], egress_writes_lists: bool) -> str:
    """The C of `ctl_fast`, to follow the module's parse, ingress, egress and deparse
    functions: the replicas' clearing of invalid headers for this layout, and the flow."""
    return _SOURCE.format(
        drop_port=DROP_PORT, replication=REPLICATION,
        clear_invalid=_clear_invalid_c(layout, frozenset(words)),
        egress_lists=1 if egress_writes_lists else 0)


def _clear_invalid_c(layout, words: frozenset) -> str:
    """`clear_invalid` (pygen/fastpath.py `build_clear_invalid`) over a `Phv`: every field of
    an invalid non-metadata header zeroed, in the words or in the list."""
    lines = ["static int clear_invalid_phv(Phv *P) {", "    Py_ssize_t n = PyList_GET_SIZE(P->f);",
             "    (void)n;"]
    for inst in layout.header_list:
        if inst.metadata:
            continue
        slots = list(range(inst.base, inst.base + len(inst.htype.fields)))
        if inst.varbit_len_slot is not None:
            slots.append(inst.varbit_len_slot)
        body = [f"P->F[{s}] = 0;" if s in words else
                f"if ({s} < n && zero_item(P->f, {s})) return -1;" for s in slots]
        if body:
            lines += [f"    if (!P->V[{inst.index}]) {{"] + ["        " + b for b in body] + \
                ["    }"]
    return "\n".join(lines + ["    return 0;", "}", ""])


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
    words = frozenset(code.native.words)
    init_words = _init_words(engine.init_fields, words)
    if init_words is None:
        return None
    plan = {
        "init_words": init_words,
        "init_flags": array("Q", list(engine.init_valid) or [0]).tobytes(),
        "init_fields": engine.init_fields, "init_valid": engine.init_valid,
        "ingress_port": engine.ingress_port, "packet_length": engine.packet_length,
        "ingress_length": engine.ingress_length,
        "divert_after_ingress": tuple(live_slots([L.CLONE, L.RESUBMIT, L.LEARN], anywhere)),
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
        "spare_phv": [None, None],     # the last packet's f and v, when nothing kept them
        "replicas_of": engine.pre.replicas, "instance_type": engine.instance_type,
        "egress_rid": engine.egress_rid, "slow_after_replica": engine.slow_after_replica,
        "c_multicast": True, "cached_replicas": engine.pre.cached_replicas}
    if to_group and multicast is None:
        return None
    # the slots the C tests are words; every slot is in the PHV
    tested = [*plan["divert_after_ingress"], *plan["divert_after_egress"], engine.egress_spec]
    if to_group:
        tested.append(engine.mcast_grp)
    length = len(engine.init_fields)
    slots = [engine.ingress_port, engine.packet_length, engine.ingress_length,
             engine.egress_port, engine.egress_rid, engine.instance_type,
             *plan["zero_before_length"], *plan["zero_after_length"], *tested]
    if any(s not in words for s in tested) or any(not 0 <= s < length for s in slots):
        return None
    plan["slots"] = _slots_bytes(plan)
    return functools.partial(code.native_fast, tuple(plan[name] for name in PLAN_FIELDS))


def _slots_bytes(plan: dict) -> bytes:
    """The plan's slots as the C reads them once per packet instead of the ints of the plan
    (int64s): SLOT_FIELDS, the lengths of SLOT_LISTS, then their slots."""
    lists = [tuple(plan[name]) for name in SLOT_LISTS]
    return array("q", [*(plan[name] for name in SLOT_FIELDS), *map(len, lists),
                       *(slot for slots in lists for slot in slots)]).tobytes()


def _init_words(init_fields: list, words: frozenset) -> bytes | None:
    """The initial words (0 for the slots that are not words), as the C copies them; None if
    an initial value is not a word's (never, for layouts' initial states)."""
    if not words or max(words) >= len(init_fields):
        return None
    values = []
    for slot in range(max(words) + 1):
        value = init_fields[slot] if slot in words else 0
        if type(value) is not int or not 0 <= value <= U64:
            return None
        values.append(value)
    return array("Q", values).tobytes()


_SOURCE = r"""
/* The common packet flow as one C call (pygen/fastpath.py `build_fast_path`, and
   `native_fast_path` in cgen/nativefast.py): the same steps as the generated Python `fast`, in
   the same order, with the PHV's words as C integers from the parser to the deparser and the
   module's parser, controls and deparser called directly. Every divergence hands the packet,
   its lists made whole (`phv_out`), to the same Python code the Python `fast` hands it to. */
enum {{ PL_INIT_W, PL_INIT_FL, PL_INIT_F, PL_INIT_V, PL_SLOW_INGRESS, PL_MULTICAST,
       PL_NEW_LENGTH, PL_SLOW_EGRESS, PL_DROPPED, PL_SPARE, PL_REPLICAS, PL_SLOW_REPLICA,
       PL_C_MULTICAST, PL_CACHED_REPLICAS, PL_SLOTS, PL_SIZE }};
/* the plan's `slots` (nativefast.py `_slots_bytes`): its SLOT_FIELDS, then SLOT_LISTS */
enum {{ S_IN_PORT, S_PKT_LEN, S_IN_LEN, S_MCAST, S_SPEC, S_EPORT, S_ITYPE, S_RID, S_FIELDS }};
enum {{ L_DIVERT, L_ZERO, L_ZERO_AFTER, L_EDIVERT, L_COUNT }};

/* egress (or the deparser) may write the lists: every replica but the last gets its own */
#define EGRESS_LISTS {egress_lists}

/* The plan's slots as C integers (a view of its `slots` bytes, read once a packet instead of
   the plan's ints; native_fast_path checked every slot is in the PHV) */
typedef struct {{
    const int64_t *slot;                    /* S_IN_PORT .. S_RID */
    const int64_t *list[L_COUNT];           /* L_DIVERT .. L_EDIVERT */
    Py_ssize_t n[L_COUNT];
}} Slots;

static int plan_slots(PyObject *plan, Slots *D) {{
    PyObject *b = PyTuple_GET_ITEM(plan, PL_SLOTS);
    Py_ssize_t size, at = S_FIELDS + L_COUNT;
    const int64_t *w;
    if (!PyBytes_CheckExact(b) || (size = PyBytes_GET_SIZE(b)) % 8 ||
            size / 8 < at || (uintptr_t)PyBytes_AS_STRING(b) % 8)
        goto bad;
    w = (const int64_t *)PyBytes_AS_STRING(b);
    D->slot = w;
    for (int i = 0; i < L_COUNT; i++) {{
        D->n[i] = (Py_ssize_t)w[S_FIELDS + i];
        if (D->n[i] < 0 || D->n[i] > size / 8 - at) goto bad;
        D->list[i] = w + at;
        at += D->n[i];
    }}
    if (at == size / 8) return 0;
bad:
    PyErr_SetString(PyExc_TypeError, "native fast path: a plan's slots of another layout");
    return -1;
}}

/* a slot's value: a word's, or the list's for a slot that is not one (the scratch slot) */
static inline int get(Phv *P, Py_ssize_t s, u64 *x) {{
    if (s >= 0 && s < NW && IS_WORD[s]) {{ *x = P->F[s]; return 0; }}
    if (s < 0 || s >= PyList_GET_SIZE(P->f)) {{
        PyErr_SetString(PyExc_IndexError, "fast path slot beyond the PHV");
        return -1;
    }}
    return rd(P->f, s, x);
}}

static inline int put(Phv *P, Py_ssize_t s, u64 x) {{
    if (s >= 0 && s < NW && IS_WORD[s]) {{ P->F[s] = x; return 0; }}
    if (s < 0 || s >= PyList_GET_SIZE(P->f)) {{
        PyErr_SetString(PyExc_IndexError, "fast path slot beyond the PHV");
        return -1;
    }}
    return wr(P->f, s, x);
}}

/* whether any of the slots holds a true value (Python's `f[a] or f[b]`) */
static int any_true(Phv *P, const Slots *D, int which) {{
    u64 x;
    for (Py_ssize_t i = 0; i < D->n[which]; i++) {{
        if (get(P, (Py_ssize_t)D->list[which][i], &x)) return -1;
        if (x) return 1;
    }}
    return 0;
}}

static int zero_slots(Phv *P, const Slots *D, int which) {{
    for (Py_ssize_t i = 0; i < D->n[which]; i++)
        if (put(P, (Py_ssize_t)D->list[which][i], 0)) return -1;
    return 0;
}}

/* a list slot takes the int 0 (Python's `f[s] = 0`) */
static int zero_item(PyObject *list, Py_ssize_t i) {{
    PyObject *old = PyList_GET_ITEM(list, i), *zero;
    u64 value;              /* (an int's size is not Py_SIZE's since 3.12: small_value) */
    if (small_value(old, &value) && value == 0) return 0;
    zero = PyLong_FromLong(0);
    if (zero == NULL) return -1;
    PyList_SET_ITEM(list, i, zero);
    Py_DECREF(old);
    return 0;
}}

/* A fresh PHV list: a copy of the initial one, or the last packet's list (one nothing else
   held, `keep_phv`) made equal to it again where it matters: its slots that are not words
   (lane vectors, wide fields; `others`), item by item where they differ. Its words need
   nothing: no code reads a word from this list before the list has taken all the packet's
   words (`phv_out`, before any Python runs). */
static PyObject *fresh_phv(PyObject *plan, int init_at, Py_ssize_t spare_at,
                           const int32_t *others, Py_ssize_t n_others) {{
    PyObject *init = PyTuple_GET_ITEM(plan, init_at);
    PyObject *spare = PyTuple_GET_ITEM(plan, PL_SPARE);
    PyObject *list = PyList_GET_ITEM(spare, spare_at);
    Py_ssize_t j, n = PyList_GET_SIZE(init);
    if (list == Py_None || PyList_GET_SIZE(list) != n)
        return PyList_GetSlice(init, 0, PY_SSIZE_T_MAX);
    Py_INCREF(Py_None);
    PyList_SET_ITEM(spare, spare_at, Py_None);     /* the reference moves to the caller */
    for (j = 0; j < n_others && others[j] < n; j++) {{
        PyObject *want = PyList_GET_ITEM(init, others[j]), *held = PyList_GET_ITEM(list, others[j]);
        if (held != want) {{
            Py_INCREF(want);
            PyList_SET_ITEM(list, others[j], want);
            lane_release(held);
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

/* the packet length egress reads, from the plan's Python `new_length(f, v, rest)` (the
   words written to the lists first): a program whose parser leaves `rest` bytes unparsed */
static int length_after_ingress(PyObject *new_length, Phv *P, Py_ssize_t rest_bytes,
                                u64 *length) {{
    PyObject *rest = PyLong_FromSsize_t(rest_bytes), *call[3], *got;
    if (rest == NULL || phv_out(P)) {{ Py_XDECREF(rest); return -1; }}
    call[0] = P->f; call[1] = P->v; call[2] = rest;
    got = call_py(new_length, call, 3);
    Py_DECREF(rest);
    if (got == NULL) return -1;
    int t = as_u64(got, length);
    Py_DECREF(got);
    return t;
}}

/* the bytes the parser left, `data[pos:]` (a new reference): read directly from bytes, which
   the ports give (most often none are left: the empty bytes); anything else is sliced */
static PyObject *unparsed_rest(PyObject *data, Py_ssize_t pos) {{
    if (!PyBytes_CheckExact(data)) return PySequence_GetSlice(data, pos, PY_SSIZE_T_MAX);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (pos >= n) return PyBytes_FromStringAndSize(NULL, 0);
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(data) + pos, n - pos);
}}

/* the new reference of a list's copy, or of the list itself */
static PyObject *copy_or_share(PyObject *list, int copy) {{
    if (copy) return PyList_GetSlice(list, 0, PY_SSIZE_T_MAX);
    Py_INCREF(list);
    return list;
}}

{clear_invalid}
/* The generated Python `multicast` (pygen/fastpath.py `_multicast_source`) over the words:
   the replicas of group `mgid` in order, each with its own copy of the words made after
   the packet's replication set-up (and of the lists, when egress can write them), egress_port
   and egress_rid set, egress, and the deparser unless it was dropped. A replica whose egress
   diverges goes, with the replicas after it, to the Python general flow
   (`slow_after_replica`) as the Python does. */
static PyObject *multicast_c(PyObject *S, Phv *P, PyObject *plan, const Slots *D,
                             PyObject *payload, PyObject *port, u64 length, u64 mgid) {{
    PyObject *replicas = NULL, *out = NULL, *group = NULL, *length_obj = NULL, *got;
    PyObject *call[10];
    u64 BF[NW], BV[NV], F[NW], V[NV], x;
    Py_ssize_t i, count;
    group = from_u64(mgid);
    if (group == NULL) return NULL;
    /* the group's copies as `replicas_of` gave them last (its cache, cleared on any change),
       else asked for */
    replicas = PyDict_GetItemWithError(PyTuple_GET_ITEM(plan, PL_CACHED_REPLICAS), group);
    if (replicas != NULL) {{
        Py_INCREF(replicas);
    }} else if (!PyErr_Occurred()) {{
        call[0] = group;
        replicas = call_py(PyTuple_GET_ITEM(plan, PL_REPLICAS), call, 1);
    }}
    Py_DECREF(group);
    if (replicas == NULL) return NULL;
    if (!PyList_CheckExact(replicas)) {{
        PyErr_SetString(PyExc_TypeError, "replicas_of must give a list of (port, rid)");
        goto fail;
    }}
    if (put(P, D->slot[S_ITYPE], {replication}) || clear_invalid_phv(P) ||
            put(P, D->slot[S_SPEC], 0) || put(P, D->slot[S_PKT_LEN], length) ||
            zero_slots(P, D, L_ZERO_AFTER))
        goto fail;
    copy_words(BF, P->F, sizeof(BF));
    memcpy(BV, P->V, sizeof(BV));
    out = PyList_New(0);
    if (out == NULL) goto fail;
    count = PyList_GET_SIZE(replicas);
    for (i = 0; i < count; i++) {{
        PyObject *item = PyList_GET_ITEM(replicas, i), *eport, *rid, *bytes, *pair;
        u64 e, r;
        int t;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {{
            PyErr_SetString(PyExc_TypeError, "a replica must be (port, rid)");
            goto fail;
        }}
        eport = PyTuple_GET_ITEM(item, 0);
        rid = PyTuple_GET_ITEM(item, 1);
        if (as_u64(eport, &e) || as_u64(rid, &r)) goto fail;
        copy_words(F, BF, sizeof(F));
        memcpy(V, BV, sizeof(V));
        Phv R = *P;
        R.F = F;
        R.V = V;
        R.f = copy_or_share(P->f, EGRESS_LISTS && i < count - 1);
        R.v = copy_or_share(P->v, EGRESS_LISTS && i < count - 1);
        if (R.f == NULL || R.v == NULL) {{ Py_XDECREF(R.f); Py_XDECREF(R.v); goto fail; }}
        if (put(&R, D->slot[S_EPORT], e) || put(&R, D->slot[S_RID], r) ||
                ctl_egress_impl(S, &R) ||
                (t = any_true(&R, D, L_EDIVERT)) < 0) {{
            Py_DECREF(R.f); Py_DECREF(R.v);
            goto fail;
        }}
        if (t) {{
            /* this replica and the rest to the general flow: its lists made whole, and the
               packet before egress (base) as lists for the rest */
            PyObject *base_f = NULL, *base_v = NULL, *rest = NULL;
            Phv B = *P;
            B.F = BF;
            B.V = BV;
            if (phv_out(&R)) goto replica_fail;
            base_f = PyList_GetSlice(P->f, 0, PY_SSIZE_T_MAX);
            base_v = PyList_GetSlice(P->v, 0, PY_SSIZE_T_MAX);
            rest = PyList_GetSlice(replicas, i + 1, count);
            length_obj = from_u64(length);
            if (base_f == NULL || base_v == NULL || rest == NULL || length_obj == NULL)
                goto replica_fail;
            B.f = base_f;
            B.v = base_v;
            if (phv_out(&B)) goto replica_fail;
            call[0] = R.f; call[1] = R.v; call[2] = base_f; call[3] = base_v;
            call[4] = payload; call[5] = eport; call[6] = rid; call[7] = length_obj;
            call[8] = port; call[9] = rest;
            got = call_py(PyTuple_GET_ITEM(plan, PL_SLOW_REPLICA), call, 10);
            if (got == NULL) goto replica_fail;
            Py_SETREF(out, PySequence_InPlaceConcat(out, got));
            Py_DECREF(got);
            Py_DECREF(base_f); Py_DECREF(base_v); Py_DECREF(rest);
            Py_DECREF(R.f); Py_DECREF(R.v);
            Py_DECREF(replicas); Py_DECREF(length_obj);
            return out;
        replica_fail:
            Py_XDECREF(base_f); Py_XDECREF(base_v); Py_XDECREF(rest);
            Py_DECREF(R.f); Py_DECREF(R.v);
            goto fail;
        }}
        if (e == {drop_port}ULL || get(&R, D->slot[S_SPEC], &x) ||
                x == {drop_port}ULL) {{
            Py_DECREF(R.f); Py_DECREF(R.v);
            if (PyErr_Occurred()) goto fail;
            continue;
        }}
        bytes = deparse_impl(S, &R, payload);
        Py_DECREF(R.f); Py_DECREF(R.v);
        if (bytes == NULL) goto fail;
        pair = PyTuple_Pack(2, eport, bytes);
        Py_DECREF(bytes);
        if (pair == NULL || PyList_Append(out, pair)) {{ Py_XDECREF(pair); goto fail; }}
        Py_DECREF(pair);
    }}
    Py_DECREF(replicas);
    return out;
fail:
    Py_XDECREF(replicas); Py_XDECREF(out); Py_XDECREF(length_obj);
    return NULL;
}}

static PyObject *ctl_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {{
    PyObject *S, *plan, *port, *data, *f = NULL, *v = NULL, *pos_obj = NULL, *length_obj = NULL,
             *payload = NULL, *eport_obj = NULL, *out = NULL, *call[8];
    u64 F[NW], V[NV], x, length, eport;
    Py_ssize_t slot, pos, n;
    int t;
    Phv P = {{NULL, NULL, F, V, ALL_WORDS, ALL_FLAGS, N_ALL_WORDS, N_ALL_FLAGS}};
    if (nargs != 4 || !state_ok(args[0]) || !PyTuple_CheckExact(args[1]) ||
            PyTuple_GET_SIZE(args[1]) != PL_SIZE) {{
        PyErr_SetString(PyExc_TypeError, "native fast path: expected (state, plan, port, data)");
        return NULL;
    }}
    S = args[0]; plan = args[1]; port = args[2]; data = args[3];
    Slots DS;
    const Slots *D = &DS;
    if (plan_slots(plan, &DS)) return NULL;
    {{
        PyObject *w = PyTuple_GET_ITEM(plan, PL_INIT_W), *fl = PyTuple_GET_ITEM(plan, PL_INIT_FL);
        if (!PyBytes_CheckExact(w) || PyBytes_GET_SIZE(w) != (Py_ssize_t)sizeof(F) ||
                !PyBytes_CheckExact(fl) || PyBytes_GET_SIZE(fl) > (Py_ssize_t)sizeof(V)) {{
            PyErr_SetString(PyExc_TypeError, "native fast path: initial words of another PHV");
            return NULL;
        }}
        copy_words(F, PyBytes_AS_STRING(w), sizeof(F));
        memset(V, 0, sizeof(V));
        memcpy(V, PyBytes_AS_STRING(fl), PyBytes_GET_SIZE(fl));
    }}
    f = fresh_phv(plan, PL_INIT_F, 0, NOT_WORDS, N_NOT_WORDS);
    v = fresh_phv(plan, PL_INIT_V, 1, NULL, 0);     /* flags are all words */
    if (f == NULL || v == NULL) goto fail;
    if (PyList_GET_SIZE(f) < NW || PyList_GET_SIZE(v) < N_ALL_FLAGS) {{
        PyErr_SetString(PyExc_TypeError, "native fast path: a PHV shorter than its words");
        goto fail;
    }}
    P.f = f;
    P.v = v;
    if (as_u64(port, &x) || put(&P, D->slot[S_IN_PORT], x)) goto fail;
    if ((n = PyObject_Length(data)) < 0) goto fail;
    length = (u64)n;
    if (put(&P, D->slot[S_PKT_LEN], length) ||
            put(&P, D->slot[S_IN_LEN], length)) goto fail;
    if ((pos = parse_impl(S, &P, data)) < 0) goto fail;
    if (ctl_ingress_impl(S, &P)) goto fail;
    if ((t = any_true(&P, D, L_DIVERT)) != 0) {{
        if (t < 0 || phv_out(&P) || (pos_obj = PyLong_FromSsize_t(pos)) == NULL) goto fail;
        call[0] = f; call[1] = v; call[2] = data; call[3] = pos_obj; call[4] = port;
        out = call_py(PyTuple_GET_ITEM(plan, PL_SLOW_INGRESS), call, 5);
        goto done;
    }}
    PyObject *new_length = PyTuple_GET_ITEM(plan, PL_NEW_LENGTH);
    if ((slot = D->slot[S_MCAST]) >= 0) {{
        u64 mgid, multicast_length = length;
        if (get(&P, slot, &mgid)) goto fail;
        if (mgid) {{
            payload = unparsed_rest(data, pos);
            if (payload == NULL) goto fail;
            if (new_length != Py_None &&
                    length_after_ingress(new_length, &P, n - pos, &multicast_length))
                goto fail;
            if (PyTuple_GET_ITEM(plan, PL_C_MULTICAST) == Py_True) {{
                out = multicast_c(S, &P, plan, D, payload, port, multicast_length, mgid);
                goto done;
            }}
            /* the generated Python `multicast`, over the lists */
            PyObject *zero = PyLong_FromLong(0), *group = from_u64(mgid);
            length_obj = from_u64(multicast_length);
            if (zero == NULL || group == NULL || length_obj == NULL || phv_out(&P)) {{
                Py_XDECREF(zero); Py_XDECREF(group);
                goto fail;
            }}
            call[0] = f; call[1] = v; call[2] = payload; call[3] = port;
            call[4] = length_obj; call[5] = zero; call[6] = group;
            out = call_py(PyTuple_GET_ITEM(plan, PL_MULTICAST), call, 7);
            Py_DECREF(zero);
            Py_DECREF(group);
            goto done;
        }}
    }}
    if (get(&P, D->slot[S_SPEC], &eport)) goto fail;
    if (eport == {drop_port}ULL) {{
        out = PyList_New(0);
        goto done;
    }}
    if (new_length != Py_None && length_after_ingress(new_length, &P, n - pos, &length))
        goto fail;
    if (put(&P, D->slot[S_EPORT], eport) ||
            zero_slots(&P, D, L_ZERO) ||
            put(&P, D->slot[S_PKT_LEN], length) ||
            zero_slots(&P, D, L_ZERO_AFTER))
        goto fail;
    if (ctl_egress_impl(S, &P)) goto fail;
    eport_obj = from_u64(eport);
    if (eport_obj == NULL) goto fail;
    if ((t = any_true(&P, D, L_EDIVERT)) != 0) {{
        if (t < 0 || phv_out(&P) || (length_obj = from_u64(length)) == NULL) goto fail;
        if ((payload = unparsed_rest(data, pos)) == NULL) goto fail;
        call[0] = f; call[1] = v; call[2] = payload; call[3] = eport_obj; call[4] = length_obj;
        call[5] = port;
        out = call_py(PyTuple_GET_ITEM(plan, PL_SLOW_EGRESS), call, 6);
        goto done;
    }}
    if (PyTuple_GET_ITEM(plan, PL_DROPPED) == Py_True) {{
        if (get(&P, D->slot[S_SPEC], &x)) goto fail;
        if (x == {drop_port}ULL) {{
            out = PyList_New(0);
            goto done;
        }}
    }}
    {{
        /* the bytes the parser left go from the packet's bytes straight into the frame */
        PyObject *bytes;
        if (PyBytes_CheckExact(data)) {{
            bytes = deparse_rest(S, &P, (const uint8_t *)PyBytes_AS_STRING(data) + pos,
                                 pos < n ? n - pos : 0);
        }} else {{
            if ((payload = unparsed_rest(data, pos)) == NULL) goto fail;
            bytes = deparse_impl(S, &P, payload);
        }}
        if (bytes == NULL) goto fail;
        PyObject *pair = PyTuple_Pack(2, eport_obj, bytes);
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
    Py_XDECREF(f); Py_XDECREF(v); Py_XDECREF(pos_obj); Py_XDECREF(length_obj);
    Py_XDECREF(payload); Py_XDECREF(eport_obj);
    return out;
}}
"""
