/* Attribute helpers for the C parts that keep their state in Python objects (ringpath.c,
 * inasession.c, inaworker.c, and switchports.c over p4switch's runtime: the Python classes
 * stay the definition, so the C reads and writes their fields by name). A missing attribute
 * or a wrong type is an error, which the caller passes on (a bug in the C, never a protocol
 * event).
 *
 * A field that is a plain slot (`__slots__`) of a class with the generic getattr and setattr
 * is read and written at its offset, as the slot's member descriptor would: PyObject_GetAttr
 * costs ~45 ns (the type's lookup, the descriptor's call), the offset ~2, and a RESULT of an
 * INA worker reads and writes ~50 fields. The offset is cached per (name, exact type) and
 * trusted only while the type's version tag is the one seen when it was cached: CPython
 * zeroes the tag whenever the class or a base changes (a field given a property, the class a
 * __setattr__) and assigns a new one at the next lookup, so the cached offset is always the
 * lookup PyObject_GetAttr would make. Anything else (an instance dict, a property, a class
 * with its own __setattr__) takes PyObject_GetAttr / PyObject_SetAttr. Names are compared by
 * address: callers pass interned names they keep (their tables of names).
 * tests/sim/test_native_attrs.py holds the cache to Python's own getattr and setattr. */

#define ATTR_CACHE_BITS 10
#define ATTR_CACHE_SIZE (1 << ATTR_CACHE_BITS)
#define ATTR_CACHE_PROBES 8         /* entries looked at from a key's home (linear probing) */

typedef struct {
    PyObject *name;                 /* an interned name (the callers' tables keep it alive) */
    PyTypeObject *type;             /* borrowed, never dereferenced: compared by address, and
                                     * the live type's version tag with `version` */
    unsigned int version;
    Py_ssize_t offset;
} AttrSlot;

static AttrSlot attr_cache[ATTR_CACHE_SIZE];
static Py_ssize_t attr_cache_misses;    /* lookups that fell back to the generic path */

static inline size_t attr_home(PyObject *name, PyTypeObject *type) {
    /* (multiplicative hashing: the high bits of the product mix both addresses) */
    unsigned long long h = (unsigned long long)(size_t)name * 0x9E3779B97F4A7C15ull
                           ^ (unsigned long long)(size_t)type * 0xC2B2AE3D27D4EB4Full;
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - ATTR_CACHE_BITS));
}

/* The lookup past the cache (a key not in it, or its class changed since): the slot as
 * `attr_slot_shared` gives it, cached in `e` (the key's entry, or the first free one probed)
 * or in the key's home entry. Kept out of line, so that the hit path stays a few instructions. */
static __attribute__((noinline)) PyObject **attr_slot_miss(PyObject *o, PyObject *name,
                                                           AttrSlot *e, size_t home) {
    PyTypeObject *type = Py_TYPE(o);
    attr_cache_misses++;
    if (type->tp_getattro != PyObject_GenericGetAttr
            || type->tp_setattro != PyObject_GenericSetAttr)
        return NULL;
    PyObject *descr = _PyType_Lookup(type, name);     /* borrowed; sets the version tag */
    if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type || type->tp_version_tag == 0)
        return NULL;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY)
            || !PyType_IsSubtype(type, ((PyDescrObject *)descr)->d_type))
        return NULL;
    if (!(e->name == NULL || (e->name == name && e->type == type)))
        e = &attr_cache[home];      /* every probed entry taken: the home one replaced */
    e->name = name;
    e->type = type;
    e->version = type->tp_version_tag;
    e->offset = member->offset;
    return (PyObject **)((char *)o + member->offset);
}

/* `o`'s slot for `name` when the field is a plain slot of its class (above), else NULL; the
 * slot itself may be empty (an unset field: the generic path raises its AttributeError).
 * A few hundred (name, type) pairs are hot in a run: a key is looked for in the entries from
 * its home on, to the first empty one, and cached in the first empty one (or its home). */
static inline __attribute__((always_inline)) PyObject **attr_slot_shared(PyObject *o,
                                                                        PyObject *name) {
    PyTypeObject *type = Py_TYPE(o);
    size_t home = attr_home(name, type);
    AttrSlot *e;
    for (size_t i = 0; i < ATTR_CACHE_PROBES; i++) {
        e = &attr_cache[(home + i) & (ATTR_CACHE_SIZE - 1)];
        if (e->name == name && e->type == type) {
            if (e->version == type->tp_version_tag && e->version != 0)
                return (PyObject **)((char *)o + e->offset);
            break;                  /* the class changed: looked up again, in this entry */
        }
        if (e->name == NULL) break;
    }
    return attr_slot_miss(o, name, e, home);
}

/* Each place in the C that reads or writes a field keeps its own entry besides (`ATTR_SITE`,
 * a static of the expansion): a place sees one name on one class nearly always, so its entry
 * answers with three compares where the shared table hashes and probes (~60 instructions,
 * ~2 M times in a 64-worker megabyte run). The entry is trusted on the same terms as the
 * table's: its name, its exact type and that type's version tag, which CPython changes with
 * the class. A miss asks the table and keeps its answer. */
#define ATTR_SITE() ({ static AttrSlot attr_site_; &attr_site_; })

/* the site's slot when its entry holds (three compares), else NULL: the part inlined into
 * each place; everything past it is out of line */
static inline __attribute__((always_inline)) PyObject **site_slot(PyObject *o, PyObject *name,
                                                                  AttrSlot *site) {
    PyTypeObject *type = Py_TYPE(o);
    if (site->name == name && site->type == type && site->version == type->tp_version_tag
            && site->version != 0)
        return (PyObject **)((char *)o + site->offset);
    return NULL;
}

static __attribute__((noinline)) PyObject **attr_slot_at(PyObject *o, PyObject *name,
                                                         AttrSlot *site) {
    PyObject **slot = site_slot(o, name, site);
    if (slot != NULL) return slot;
    PyTypeObject *type = Py_TYPE(o);
    slot = attr_slot_shared(o, name);
    if (slot != NULL) {
        site->name = name;
        site->type = type;
        site->version = type->tp_version_tag;
        site->offset = (char *)slot - (char *)o;
    }
    return slot;
}

/* o.name, a new reference (NULL with the error set) */
static __attribute__((noinline)) PyObject *attr_get_slow(PyObject *o, PyObject *name,
                                                         AttrSlot *site) {
    PyObject **slot = attr_slot_at(o, name, site);
    if (slot != NULL && *slot != NULL) return Py_NewRef(*slot);
    return PyObject_GetAttr(o, name);
}

static inline __attribute__((always_inline)) PyObject *attr_get_at(PyObject *o, PyObject *name,
                                                                   AttrSlot *site) {
    PyObject **slot = site_slot(o, name, site);
    if (slot != NULL && *slot != NULL) return Py_NewRef(*slot);
    return attr_get_slow(o, name, site);
}

/* the site's slot for a write: inline when its entry holds, else out of line */
static inline __attribute__((always_inline)) PyObject **slot_at(PyObject *o, PyObject *name,
                                                                AttrSlot *site) {
    PyObject **slot = site_slot(o, name, site);
    return slot != NULL ? slot : attr_slot_at(o, name, site);
}

/* `value` (a reference the slot takes over) into a slot found, the old one released */
static inline void slot_replace(PyObject **slot, PyObject *value) {
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

/* o.name = value (value borrowed); 0, or -1 with the error set */
static inline int attr_set_at(PyObject *o, PyObject *name, PyObject *value, AttrSlot *site) {
    PyObject **slot = slot_at(o, name, site);
    if (slot == NULL) return PyObject_SetAttr(o, name, value);
    slot_replace(slot, Py_NewRef(value));
    return 0;
}

/* o.name = value, a new reference the call takes over (NULL: -1, the error already set) */
static inline int attr_give_at(PyObject *o, PyObject *name, PyObject *value,
                               PyObject **slot) {
    if (value == NULL) return -1;
    if (slot != NULL) {
        slot_replace(slot, value);
        return 0;
    }
    int r = PyObject_SetAttr(o, name, value);
    Py_DECREF(value);
    return r;
}

/* ---- numbers held in fields -------------------------------------------------------------
 * A counter or a time the C updates per packet is a new int or float object each time: an
 * allocation and the old value's release (~150 instructions; ~40 such writes a RESULT). When
 * the field holds the only reference to an exact float, or to an exact int of one digit that
 * the new value also fits, the object is given the new value in place: nothing else holds it,
 * so nothing can tell the difference (floats and ints have no weak references and cache no
 * hash). Ints' digits are CPython's private layout, so they are written in place only for the
 * versions whose layout this knows (3.11's `ob_size`, 3.12-3.14's `lv_tag`), and not in a
 * free-threaded build, whose reference counts are not one number;
 * tests/sim/test_native_attrs.py checks each case against Python's own getattr. */

#if defined(Py_GIL_DISABLED)
#define NUMBERS_IN_PLACE 0
#else
#define NUMBERS_IN_PLACE 1
#endif

#if NUMBERS_IN_PLACE && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define LONG_IN_PLACE 1
/* a positive int of one digit: its digit (3.11: the size is the sign times the digits) */
static inline int long_one_digit(PyObject *v) { return Py_SIZE(v) == 1; }
static inline digit *long_digits(PyObject *v) { return ((PyLongObject *)v)->ob_digit; }
#elif NUMBERS_IN_PLACE && PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030F0000
#define LONG_IN_PLACE 1
/* (3.12-3.14: the tag is the digits' count above three bits of sign, 0 for positive) */
static inline int long_one_digit(PyObject *v) {
    return ((PyLongObject *)v)->long_value.lv_tag == ((uintptr_t)1 << 3);
}
static inline digit *long_digits(PyObject *v) { return ((PyLongObject *)v)->long_value.ob_digit; }
#else
#define LONG_IN_PLACE 0
#endif

/* 1: `held` (a field's value, may be NULL), an exact float only the field holds, now holds
 * `value`; 0: not done (the caller stores a new float) */
static inline int float_in_place(PyObject *held, double value) {
    if (!NUMBERS_IN_PLACE || held == NULL || !PyFloat_CheckExact(held) || Py_REFCNT(held) != 1)
        return 0;
    ((PyFloatObject *)held)->ob_fval = value;
    return 1;
}

/* 1: `held` (a field's value, may be NULL), an exact int of one positive digit only the field
 * holds, now holds `value`; 0: not done (the caller stores a new int) */
static inline int long_in_place(PyObject *held, long long value) {
#if LONG_IN_PLACE
    if (value <= 0 || value >= ((long long)1 << PyLong_SHIFT) || held == NULL
            || !PyLong_CheckExact(held) || Py_REFCNT(held) != 1 || !long_one_digit(held))
        return 0;
    long_digits(held)[0] = (digit)value;
    return 1;
#else
    (void)held; (void)value;
    return 0;
#endif
}

/* an exact int of at most one digit: 1 and its value; 0 for any other (read as Python does) */
static inline __attribute__((always_inline)) int small_long(PyObject *v, long long *out) {
    if (!PyLong_CheckExact(v)) return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Long_IsCompact((PyLongObject *)v)) return 0;
    *out = PyUnstable_Long_CompactValue((PyLongObject *)v);
    return 1;
#else
    Py_ssize_t size = Py_SIZE(v);
    if (size < -1 || size > 1) return 0;
    *out = size ? (long long)size * (long long)((PyLongObject *)v)->ob_digit[0] : 0;
    return 1;
#endif
}

/* A dict's PEP 509 version (changed by every insertion, replacement, deletion and clear), by
 * which the C parts remember what they read from it (hostport.c's listeners, switchports.c's
 * egress links): 1 and the version for an exact dict where CPython keeps one, else 0 (3.14
 * dropped it: then nothing read from a dict may be remembered) */
static inline int dict_version(PyObject *d, uint64_t *version) {
#if PY_VERSION_HEX < 0x030E0000
    if (PyDict_CheckExact(d)) {
        *version = ((PyDictObject *)d)->ma_version_tag;
        return 1;
    }
#endif
    (void)d; (void)version;
    return 0;
}

/* `a op b` as PyObject_RichCompareBool gives it (-1 on an error): two exact ints of one digit
 * (chunk numbers, slots) compared as C numbers, anything else by Python */
static inline int int_compare(PyObject *a, PyObject *b, int op) {
    long long x, y;
    if (small_long(a, &x) && small_long(b, &y)) {
        switch (op) {
        case Py_LT: return x < y;
        case Py_LE: return x <= y;
        case Py_EQ: return x == y;
        case Py_NE: return x != y;
        case Py_GT: return x > y;
        case Py_GE: return x >= y;
        }
    }
    return PyObject_RichCompareBool(a, b, op);
}

static __attribute__((noinline)) int get_ll_slow(PyObject *o, PyObject *name, long long *out,
                                                 AttrSlot *site) {
    PyObject *v = attr_get_slow(o, name, site);
    if (v == NULL) return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static inline __attribute__((always_inline)) int get_ll_at(PyObject *o, PyObject *name,
                                                           long long *out, AttrSlot *site) {
    PyObject **slot = site_slot(o, name, site);
    if (slot != NULL && *slot != NULL && small_long(*slot, out)) return 0;
    return get_ll_slow(o, name, out, site);
}

static inline int set_ll_at(PyObject *o, PyObject *name, long long value, AttrSlot *site) {
    PyObject **slot = slot_at(o, name, site);
    if (slot != NULL && long_in_place(*slot, value)) return 0;
    return attr_give_at(o, name, PyLong_FromLongLong(value), slot);
}

static __attribute__((noinline)) int get_double_slow(PyObject *o, PyObject *name, double *out,
                                                     AttrSlot *site) {
    PyObject *v = attr_get_slow(o, name, site);
    if (v == NULL) return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static inline __attribute__((always_inline)) int get_double_at(PyObject *o, PyObject *name,
                                                               double *out, AttrSlot *site) {
    PyObject **slot = site_slot(o, name, site);
    if (slot != NULL && *slot != NULL && PyFloat_CheckExact(*slot)) {
        *out = PyFloat_AS_DOUBLE(*slot);
        return 0;
    }
    return get_double_slow(o, name, out, site);
}

static inline int set_double_at(PyObject *o, PyObject *name, double value, AttrSlot *site) {
    PyObject **slot = slot_at(o, name, site);
    if (slot != NULL && float_in_place(*slot, value)) return 0;
    return attr_give_at(o, name, PyFloat_FromDouble(value), slot);
}

/* 1 if the attribute is truthy, 0 if not, -1 on error */
static inline int get_truth_at(PyObject *o, PyObject *name, AttrSlot *site) {
    PyObject *v = attr_get_at(o, name, site);
    if (v == NULL) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* 1 if the attribute is None, 0 if not, -1 on error */
static inline int attr_is_none_at(PyObject *o, PyObject *name, AttrSlot *site) {
    PyObject *v = attr_get_at(o, name, site);
    if (v == NULL) return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

static inline int add_ll_at(PyObject *o, PyObject *name, long long delta, AttrSlot *site) {
    long long v;
    PyObject **slot = site_slot(o, name, site);     /* (one look at the site for both) */
    if (slot != NULL && *slot != NULL && small_long(*slot, &v)) {
        if (long_in_place(*slot, v + delta)) return 0;
        return attr_give_at(o, name, PyLong_FromLongLong(v + delta), slot);
    }
    if (get_ll_at(o, name, &v, site) < 0) return -1;
    return set_ll_at(o, name, v + delta, site);
}

/* the readers and writers, each use with its own cached entry (ATTR_SITE) */
#define attr_get(o, name) attr_get_at((o), (name), ATTR_SITE())
#define attr_set(o, name, value) attr_set_at((o), (name), (value), ATTR_SITE())
#define get_ll(o, name, out) get_ll_at((o), (name), (out), ATTR_SITE())
#define set_ll(o, name, value) set_ll_at((o), (name), (value), ATTR_SITE())
#define add_ll(o, name, delta) add_ll_at((o), (name), (delta), ATTR_SITE())
#define get_double(o, name, out) get_double_at((o), (name), (out), ATTR_SITE())
#define set_double(o, name, value) set_double_at((o), (name), (value), ATTR_SITE())
#define get_truth(o, name) get_truth_at((o), (name), ATTR_SITE())
#define attr_is_none(o, name) attr_is_none_at((o), (name), ATTR_SITE())

/* The offsets of class `cls`'s slots, which must be `names` (`count` of them) in that order:
 * for C that makes or reads such objects by offset (inaworker.c's Flights, ringpath.c's
 * outstanding segments); a class changed under the C fails loudly, naming `what`. */
static int slot_offsets(PyObject *cls, const char *const *names, int count,
                        Py_ssize_t *offsets, const char *what) {
    PyObject *slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL) return -1;
    int same = PyTuple_Check(slots) && PyTuple_GET_SIZE(slots) == count;
    for (int i = 0; same && i < count; i++)
        same = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(slots, i), names[i]) == 0;
    Py_DECREF(slots);
    if (!same) {
        PyErr_Format(PyExc_TypeError, "%s's slots are not the ones the native core writes",
                     what);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        PyObject *descr = PyObject_GetAttrString(cls, names[i]);
        if (descr == NULL) return -1;
        int member = Py_TYPE(descr) == &PyMemberDescr_Type;
        if (member) offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!member) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", what, names[i]);
            return -1;
        }
    }
    return 0;
}

/* ---- the cache's contract, for tests/sim/test_native_attrs.py ---------------------------- */

static PyObject *attr_test_names;       /* the names the test functions were given, kept alive:
                                         * the cache compares names by address */

static PyObject *attr_test_name(PyObject *name) {
    if (!PyUnicode_CheckExact(name)) {
        PyErr_SetString(PyExc_TypeError, "an attribute name must be a str");
        return NULL;
    }
    if (attr_test_names == NULL && (attr_test_names = PyDict_New()) == NULL) return NULL;
    PyObject *kept = PyDict_SetDefault(attr_test_names, name, name);    /* borrowed */
    return kept;
}

static PyObject *Attrs_get(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "attr_get(obj, name)");
        return NULL;
    }
    PyObject *name = attr_test_name(args[1]);
    return name == NULL ? NULL : attr_get(args[0], name);
}

static PyObject *Attrs_set(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "attr_set(obj, name, value)");
        return NULL;
    }
    PyObject *name = attr_test_name(args[1]);
    if (name == NULL || attr_set(args[0], name, args[2]) < 0) return NULL;
    Py_RETURN_NONE;
}

/* attr_set_number(obj, name, value, add=False): the numeric writers the C parts use per
 * packet (set_ll or add_ll for an int, set_double for a float), for the tests of their
 * in-place writes */
static PyObject *Attrs_set_number(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "attr_set_number(obj, name, value, add=False)");
        return NULL;
    }
    PyObject *name = attr_test_name(args[1]);
    if (name == NULL) return NULL;
    int add = nargs == 4 ? PyObject_IsTrue(args[3]) : 0;
    if (add < 0) return NULL;
    int r;
    if (PyFloat_CheckExact(args[2]) && !add) {
        r = set_double(args[0], name, PyFloat_AS_DOUBLE(args[2]));
    } else {
        long long value = PyLong_AsLongLong(args[2]);
        if (value == -1 && PyErr_Occurred()) return NULL;
        r = add ? add_ll(args[0], name, value) : set_ll(args[0], name, value);
    }
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* attr_get_number(obj, name, as_float): the field as the C parts read a counter (get_ll) or
 * a time (get_double) */
static PyObject *Attrs_get_number(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "attr_get_number(obj, name, as_float)");
        return NULL;
    }
    PyObject *name = attr_test_name(args[1]);
    int as_float = name == NULL ? -1 : PyObject_IsTrue(args[2]);
    if (as_float < 0) return NULL;
    if (as_float) {
        double value;
        return get_double(args[0], name, &value) < 0 ? NULL : PyFloat_FromDouble(value);
    }
    long long value;
    return get_ll(args[0], name, &value) < 0 ? NULL : PyLong_FromLongLong(value);
}

/* int_compare(a, b, op): `int_compare` (above) for tests; op is one of Py_LT..Py_GE (0-5) */
static PyObject *Attrs_int_compare(PyObject *unused, PyObject *const *args, Py_ssize_t nargs) {
    long op = nargs == 3 ? PyLong_AsLong(args[2]) : -2;
    if (op == -1 && PyErr_Occurred()) return NULL;
    if (op < Py_LT || op > Py_GE) {
        PyErr_SetString(PyExc_TypeError, "int_compare(a, b, op): op in 0..5 (Py_LT..Py_GE)");
        return NULL;
    }
    int r = int_compare(args[0], args[1], (int)op);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *Attrs_misses(PyObject *unused, PyObject *noargs) {
    return PyLong_FromSsize_t(attr_cache_misses);
}
