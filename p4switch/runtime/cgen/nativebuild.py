"""Compiling the generated C module (`nativemodule.py`) and binding it to one program.

A module is built once per C source with the machine's C compiler and Python's headers, and
kept in a cache directory (`INAEMU_NATIVE_CACHE`, else `~/.cache/inaemu/native`) under the hash
of the source, the compiler flags and the Python build, so later loads of the same program cost
an import. Without a compiler, or when the build fails, the program keeps its Python controls
and `why_not` says why: native code is a speed-up, never a requirement.

On by default; `INAEMU_NATIVE=0` keeps every program on its Python code (CI runs the
differential suites both ways).
"""

from __future__ import annotations

import fcntl
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
import types
from pathlib import Path

import numpy

from .nativemodule import NativeControls
from .nativeprelude import module_source

MODULE_PREFIX = "inaemu_native_"
FLAGS = ("-O1", "-shared", "-fPIC", "-fno-strict-aliasing", "-w")
_loaded: dict[str, object] = {}
_lock = threading.Lock()
why_not: dict[str, str] = {}      # C source hash -> why it could not be built
_frame_source: object = None      # the programs' modules' source of packet bytes (a capsule)


def enabled() -> bool:
    return os.environ.get("INAEMU_NATIVE", "1") not in ("", "0")


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
    # the whole module's text (its name aside) decides: the state count, PHV sizes and the
    # helpers are in it as well as the translated code
    return _load_cached(MODULE_PREFIX, module_source(controls, "MODULE_NAME"),
                        lambda name: module_source(controls, name))


def use_frame_source(capsule) -> None:
    """Every program module's deparser, loaded or to come, makes its packets' bytes with the
    function in `capsule` (a PyCapsule named "p4switch.frame_source": a bytes object of the
    size asked for, which nothing else holds; None: new bytes objects). The simulator's native
    core gives its spare bytes (inaemu/sim/native/eventloop.c)."""
    global _frame_source
    with _lock:
        _frame_source = capsule
        for module in _loaded.values():
            if hasattr(module, "use_frame_source"):
                module.use_frame_source(capsule)


def load_source(prefix: str, source: str, link: tuple[str, ...] = (),
                flags: tuple[str, ...] = ()):
    """A hand-written C extension module (`source`, whose module name is the text
    MODULE_NAME) built and cached as the programs' modules are; None when it cannot be built
    (the reason in `why_not`). The simulator's native core is built so (inaemu/sim/native).
    `link`: the linker's arguments after the source (libraries); `flags`: compiler flags after
    FLAGS (a later -O wins: a module compiled once per machine may take -O2's longer build)."""
    return _load_cached(prefix, source, lambda name: source.replace("MODULE_NAME", name), link,
                        flags)


def _load_cached(prefix: str, text: str, named_source, link: tuple[str, ...] = (),
                 flags: tuple[str, ...] = ()):
    """The module whose text (its name left as MODULE_NAME) is `text`: loaded once per
    process, built once per cache (keyed by the text, the flags, Python and numpy), or None
    with the reason in `why_not`. `named_source(name)` gives the text to build as `name`."""
    digest = hashlib.sha256("\n".join([
        text, " ".join(FLAGS + flags + link), sys.version, numpy.__version__,
        sysconfig.get_config_var("EXT_SUFFIX") or ""]).encode()).hexdigest()[:20]
    with _lock:
        if digest in _loaded:
            return _loaded[digest]
        if digest in why_not:
            return None
        name = prefix + digest
        target = _built_path(name)
        if not target.exists():
            problem = _build_once(named_source(name), target, link, flags)
            if problem is not None:
                why_not[digest] = problem
                return None
        return _keep(digest, _import(name, target))


def _keep(digest: str, module):
    """`module` loaded once per process (under `_lock`), given the frame source if one is set."""
    _loaded[digest] = module
    if _frame_source is not None and hasattr(module, "use_frame_source"):
        module.use_frame_source(_frame_source)
    return module


def is_native_module(module) -> bool:
    return isinstance(module, types.ModuleType) and module.__name__.startswith(MODULE_PREFIX)


def load_built(name: str):
    """The built module `name` from the cache, for a translation read back from the template
    store in another process (a module loaded from a file cannot be imported by name there);
    FileNotFoundError when the cache no longer has it (the template is then not used)."""
    digest = name.removeprefix(MODULE_PREFIX)
    with _lock:
        if digest not in _loaded:
            target = _built_path(name)
            if not target.exists():
                raise FileNotFoundError(f"native module {name} is not in {target.parent}")
            _keep(digest, _import(name, target))
        return _loaded[digest]


def _built_path(name: str) -> Path:
    return _cache_dir() / (name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))


def _import(name: str, target: Path):
    spec = importlib.util.spec_from_file_location(
        name, target, loader=importlib.machinery.ExtensionFileLoader(name, str(target)))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_once(source: str, target: Path, link: tuple[str, ...] = (),
                flags: tuple[str, ...] = ()) -> str | None:
    """Build `target` unless another process is building it or has built it: switches of one
    topology start together and would otherwise all compile the same module at once."""
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = open(target.with_suffix(".lock"), "a")
    except OSError as exc:
        return f"cannot use the cache directory {target.parent}: {exc}"
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return None
        return _build(source, target, link, flags)


def toolchain_problem() -> str | None:
    """Why no program can be built as C on this machine (no compiler, no headers), or None: a
    cheap check, also for a run to say which packet code its switches use (with `enabled()`)."""
    if _compiler() is None:
        return "no C compiler (cc, gcc or clang) on PATH"
    include = sysconfig.get_paths().get("include")
    if not include or not Path(include, "Python.h").exists():
        return f"no Python headers (Python.h) in {include}"
    numpy_include = numpy.get_include()
    if not Path(numpy_include, "numpy", "arrayobject.h").exists():
        return f"no numpy headers in {numpy_include}"
    return None


def _build(source: str, target: Path, link: tuple[str, ...] = (),
           flags: tuple[str, ...] = ()) -> str | None:
    problem = toolchain_problem()
    if problem is not None:
        return problem
    compiler = _compiler()
    include = sysconfig.get_paths().get("include")
    numpy_include = numpy.get_include()
    with tempfile.TemporaryDirectory(prefix="inaemu-native-") as tmp:
        c_file = Path(tmp) / "controls.c"
        c_file.write_text(source)
        built = Path(tmp) / target.name
        run = subprocess.run([compiler, *FLAGS, *flags, f"-I{include}", f"-I{numpy_include}",
                              str(c_file), "-o", str(built), *link],
                             capture_output=True, text=True, check=False)
        if run.returncode != 0:
            return f"{Path(compiler).name} failed: {run.stderr.strip()[-2000:]}"
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        shutil.copyfile(built, partial)
        os.replace(partial, target)   # atomic: concurrent loaders see the whole file or none
    return None


def bound_state(module, controls: NativeControls, namespace: dict) -> tuple:
    """The tuple the module's functions take: the state objects in order, then their register
    banks checked once (`bank_table`; TypeError where one is not as the module was compiled
    for)."""
    state = tuple(namespace[name] for name in controls.state_names)
    return state + (module.bank_table(state),)


def bind_fast(module, controls: NativeControls, namespace: dict):
    """`fast(plan, port, data)` over this program's state (nativefast.py), or None when the
    module has none (a control stayed Python)."""
    if not hasattr(module, "fast"):
        return None
    return functools.partial(module.fast, bound_state(module, controls, namespace))


def bind(module, controls: NativeControls, namespace: dict) -> dict:
    """{"ingress": fn, "egress": fn} over this program's state (its own namespace objects)."""
    state = bound_state(module, controls, namespace)
    return {name: functools.partial(getattr(module, name), state)
            for name in ("parse", "ingress", "egress", "deparse") if name not in controls.refused}
