"""The C that inaemu builds runs free of undefined behaviour, checked by GCC's sanitizer.

The switch's C is generated from P4 programs, the simulator's core is hand-written; both are
compiled at first use with the machine's compiler (p4switch/runtime/cgen/nativebuild.py, which
takes `CC`). Undefined behaviour there (a shift past the width, a signed overflow, a misaligned
read) gives wrong packets silently on one compiler and not on another. Here a compiler wrapper
adds `-fsanitize=undefined -fno-sanitize-recover=undefined`, so the first such operation ends
the process with the sanitizer's report, and the corpus's STF tests and the simulator's core
differential run under it. A second test shows the wrapper does stop a module that has some.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAGS = "-fsanitize=undefined -fno-sanitize-recover=undefined"

PROBE = r"""
#include <Python.h>
static PyObject *add_ints(PyObject *self, PyObject *args) {
    int a, b;
    if (!PyArg_ParseTuple(args, "ii", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);      /* signed: undefined past INT_MAX */
}
static PyMethodDef methods[] = {{"add_ints", add_ints, METH_VARARGS, ""}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "MODULE_NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_MODULE_NAME(void) { return PyModule_Create(&module); }
"""


def sanitizing_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a process whose native modules are built with the sanitizer, into a
    cache of their own (the cache's key does not hold the compiler)."""
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed (./bootstrap.sh setup installs it)"
    wrapper = tmp_path / "cc-ubsan"
    wrapper.write_text(f'#!/bin/sh\nexec {gcc} "$@" {FLAGS}\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, CC=str(wrapper), INAEMU_NATIVE="1",
               INAEMU_NATIVE_CACHE=str(tmp_path / "native-cache"),
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_the_sanitizer_stops_a_module_with_undefined_behaviour(tmp_path: Path) -> None:
    code = ("from p4switch.runtime.cgen import nativebuild\n"
            f"m = nativebuild.load_source('inaemu_ubsan_probe_', {PROBE!r})\n"
            "assert m is not None, nativebuild.why_not\n"
            "print(m.add_ints(1, 2), flush=True)\n"
            "print(m.add_ints(2**31 - 1, 1), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code], env=sanitizing_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == ["3"], done.stdout + done.stderr
    assert done.returncode != 0
    assert "runtime error: signed integer overflow" in done.stderr, done.stderr


@pytest.mark.slow
def test_the_corpus_and_the_native_core_run_free_of_undefined_behaviour(tmp_path: Path) -> None:
    """Every corpus program's STF test (tests/p4, p4src) on its C, and the native simulator
    core against the Python one (INA and ring, with and without loss), all built sanitized."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/p4/test_corpus.py", "tests/sim/test_cores.py", "-k", "not wall_time"],
        cwd=ROOT, env=sanitizing_env(tmp_path), capture_output=True, text=True, timeout=1800)
    out = done.stdout + done.stderr
    assert "runtime error" not in out, out[-6000:]
    assert done.returncode == 0, out[-6000:]
    assert " passed" in out and "failed" not in out, out[-3000:]
