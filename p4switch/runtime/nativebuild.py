"""Compiling the generated C controls (`nativegen.py`) and binding them to one program.

A module is built once per C source with the machine's C compiler and Python's headers, and
kept in a cache directory (`INAEMU_NATIVE_CACHE`, else `~/.cache/inaemu/native`) under the hash
of the source, the compiler flags and the Python build, so later loads of the same program cost
an import. Without a compiler, or when the build fails, the program keeps its Python controls
and `why_not` says why: native code is a speed-up, never a requirement.

`INAEMU_NATIVE=1` turns it on (off by default until it has run every differential test in CI).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from .nativegen import NativeControls

FLAGS = ("-O2", "-shared", "-fPIC", "-fno-strict-aliasing", "-w")
_loaded: dict[str, object] = {}
_lock = threading.Lock()
why_not: dict[str, str] = {}      # C source hash -> why it could not be built


def enabled() -> bool:
    return os.environ.get("INAEMU_NATIVE", "0") not in ("", "0")


PRELUDE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
typedef uint64_t u64;

static PyObject *EMPTY;

static inline PyObject *empty_params(void) { return EMPTY; }

/* a field, validity flag or register cell (an int that fits 64 bits) */
static inline int rd(PyObject *list, Py_ssize_t i, u64 *out) {
    PyObject *x = PyList_GET_ITEM(list, i);
    u64 r = PyLong_AsUnsignedLongLong(x);
    if (r == (u64)-1 && PyErr_Occurred()) return -1;
    *out = r;
    return 0;
}

static inline int wr(PyObject *list, Py_ssize_t i, u64 value) {
    PyObject *x = PyLong_FromUnsignedLongLong(value);
    if (x == NULL) return -1;
    PyObject *old = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, x);
    Py_DECREF(old);
    return 0;
}

static inline int add_to(PyObject *list, Py_ssize_t i, u64 value) {
    PyObject *old = PyList_GET_ITEM(list, i), *by, *sum;
    if (PyLong_CheckExact(old)) {
        int overflow = 0;
        long long now = PyLong_AsLongLongAndOverflow(old, &overflow);
        if (!overflow && now >= 0 && (u64)now < ((u64)1 << 62) && value < ((u64)1 << 62))
            return wr(list, i, (u64)now + value);
    }
    by = PyLong_FromUnsignedLongLong(value);
    if (by == NULL) return -1;
    sum = PyNumber_Add(old, by);
    Py_DECREF(by);
    if (sum == NULL) return -1;
    PyList_SET_ITEM(list, i, sum);
    Py_DECREF(old);
    return 0;
}

static inline int rdp(PyObject *params, Py_ssize_t i, u64 *out) {
    if (!PyTuple_Check(params) || i >= PyTuple_GET_SIZE(params)) {
        PyErr_SetString(PyExc_IndexError, "action data index out of range");
        return -1;
    }
    u64 r = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(params, i));
    if (r == (u64)-1 && PyErr_Occurred()) return -1;
    *out = r;
    return 0;
}

static inline u64 shl(u64 a, u64 s) { return s >= 64 ? 0 : a << s; }
static inline u64 shr(u64 a, u64 s) { return s >= 64 ? 0 : a >> s; }

/* (action, params, entry) -> a (-1 for None) and p (a new reference replacing the old) */
static int result(PyObject *res, long *a, PyObject **p) {
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 3) {
        PyErr_SetString(PyExc_TypeError, "a table result must be (action, params, entry)");
        return -1;
    }
    PyObject *action = PyTuple_GET_ITEM(res, 0), *params = PyTuple_GET_ITEM(res, 1);
    if (action == Py_None) {
        *a = -1;
    } else {
        *a = PyLong_AsLong(action);
        if (*a == -1 && PyErr_Occurred()) return -1;
    }
    if (!PyTuple_Check(params)) {
        params = PySequence_Tuple(params);
        if (params == NULL) return -1;
    } else {
        Py_INCREF(params);
    }
    Py_SETREF(*p, params);
    return 0;
}

static int dict_get(PyObject *dict, u64 key, PyObject **r) {
    PyObject *k = PyLong_FromUnsignedLongLong(key);
    if (k == NULL) return -1;
    PyObject *got = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    if (got == NULL && PyErr_Occurred()) return -1;
    Py_XINCREF(got);
    *r = got;
    return 0;
}

static int dict_get_obj(PyObject *dict, PyObject *cb, PyObject *f, PyObject *v, PyObject **r) {
    PyObject *args[2] = {f, v};
    PyObject *k = PyObject_Vectorcall(cb, args, 2, NULL);
    if (k == NULL) return -1;
    PyObject *got = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    if (got == NULL && PyErr_Occurred()) return -1;
    Py_XINCREF(got);
    *r = got;
    return 0;
}

static int call_lookup(PyObject *table, const char *method, u64 key, PyObject **r) {
    PyObject *k = PyLong_FromUnsignedLongLong(key);
    if (k == NULL) return -1;
    PyObject *got = PyObject_CallMethod(table, method, "O", k);
    Py_DECREF(k);
    if (got == NULL) return -1;
    *r = got;
    return 0;
}

static int call_lookup_obj(PyObject *table, const char *method, PyObject *cb, PyObject *f,
                           PyObject *v, PyObject **r) {
    PyObject *args[2] = {f, v};
    PyObject *k = PyObject_Vectorcall(cb, args, 2, NULL);
    if (k == NULL) return -1;
    PyObject *got = PyObject_CallMethod(table, method, "O", k);
    Py_DECREF(k);
    if (got == NULL) return -1;
    *r = got;
    return 0;
}

static inline int call3(PyObject *cb, PyObject *f, PyObject *v, PyObject *p) {
    PyObject *args[3] = {f, v, p};
    PyObject *got = PyObject_Vectorcall(cb, args, 3, NULL);
    if (got == NULL) return -1;
    Py_DECREF(got);
    return 0;
}

static int call_truth(PyObject *cb, PyObject *f, PyObject *v, int *out) {
    PyObject *args[2] = {f, v};
    PyObject *got = PyObject_Vectorcall(cb, args, 2, NULL);
    if (got == NULL) return -1;
    int t = PyObject_IsTrue(got);
    Py_DECREF(got);
    if (t < 0) return -1;
    *out = t;
    return 0;
}

static Py_ssize_t STATE_SIZE, FIELDS, FLAGS;

static int enter(PyObject *const *args, Py_ssize_t nargs, PyObject **S, PyObject **f,
                 PyObject **v) {
    if (nargs != 3 || !PyTuple_CheckExact(args[0]) ||
            PyTuple_GET_SIZE(args[0]) != STATE_SIZE || !PyList_CheckExact(args[1]) ||
            PyList_GET_SIZE(args[1]) < FIELDS || !PyList_CheckExact(args[2]) ||
            PyList_GET_SIZE(args[2]) < FLAGS) {
        PyErr_SetString(PyExc_TypeError, "native control: expected (state, fields, flags)");
        return -1;
    }
    *S = args[0]; *f = args[1]; *v = args[2];
    return 0;
}
"""


def module_source(controls: NativeControls, name: str) -> str:
    return PRELUDE + "\n" + controls.c_source + f"""
static struct PyModuleDef MODULE = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, METHODS}};

PyMODINIT_FUNC PyInit_{name}(void) {{
    STATE_SIZE = {len(controls.state_names)};
    FIELDS = {controls.fields};
    FLAGS = {controls.flags};
    EMPTY = PyTuple_New(0);
    if (EMPTY == NULL) return NULL;
    return PyModule_Create(&MODULE);
}}
"""


def _cache_dir() -> Path:
    configured = os.environ.get("INAEMU_NATIVE_CACHE")
    if configured:
        return Path(configured)
    return Path(os.path.expanduser("~")) / ".cache" / "inaemu" / "native"


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def load(controls: NativeControls):
    """The compiled module for these controls, or None (the reason in `why_not`)."""
    digest = hashlib.sha256("\n".join([
        controls.c_source, str(controls.fields), str(controls.flags), " ".join(FLAGS), sys.version,
        sysconfig.get_config_var("EXT_SUFFIX") or ""]).encode()).hexdigest()[:20]
    with _lock:
        if digest in _loaded:
            return _loaded[digest]
        if digest in why_not:
            return None
        name = f"inaemu_native_{digest}"
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        cache = _cache_dir()
        target = cache / (name + suffix)
        if not target.exists():
            problem = _build(module_source(controls, name), target)
            if problem is not None:
                why_not[digest] = problem
                return None
        spec = importlib.util.spec_from_file_location(
            name, target, loader=importlib.machinery.ExtensionFileLoader(name, str(target)))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[digest] = module
        return module


def _build(source: str, target: Path) -> str | None:
    compiler = _compiler()
    if compiler is None:
        return "no C compiler (cc, gcc or clang) on PATH"
    include = sysconfig.get_paths().get("include")
    if not include or not Path(include, "Python.h").exists():
        return f"no Python headers (Python.h) in {include}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the cache directory {target.parent}: {exc}"
    with tempfile.TemporaryDirectory(prefix="inaemu-native-") as tmp:
        c_file = Path(tmp) / "controls.c"
        c_file.write_text(source)
        built = Path(tmp) / target.name
        run = subprocess.run([compiler, *FLAGS, f"-I{include}", str(c_file), "-o", str(built)],
                             capture_output=True, text=True, check=False)
        if run.returncode != 0:
            return f"{Path(compiler).name} failed: {run.stderr.strip()[-2000:]}"
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        shutil.copyfile(built, partial)
        os.replace(partial, target)   # atomic: concurrent loaders see the whole file or none
    return None


def bind(module, controls: NativeControls, namespace: dict) -> dict:
    """{"ingress": fn, "egress": fn} over this program's state (its own namespace objects)."""
    state = tuple(namespace[name] for name in controls.state_names)
    return {name: functools.partial(getattr(module, name), state)
            for name in ("ingress", "egress") if name not in controls.refused}
