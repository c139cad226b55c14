"""Translated programs (codeshare templates) kept on disk, so a process loads ina.p4's
translation instead of making it again.

Why: codeshare translates a JSON once per process (0.5-1.2 s for ina.p4 at k = 256: lane groups,
code generation, `compile`), and every `inaemu run` and every sweep point is a new process. A
template is the private program the code was generated for plus the compiled module code; it
is written with pickle (~6 MB, zlib: ~0.2 MB) and read back in ~0.05 s. What plain pickle cannot
write is written so that reading gives the same objects back:
- code objects: `marshal`; functions that are not importable by name (closures, generated
  functions): their code, globals, defaults and closure cells, with a generated function's
  globals being the template's own namespace (one dict, written once);
- objects that live at module level in the runtime package or any of its sub-packages
  (sentinels, shared constants): by module and attribute name, so an `is` test against them
  still holds; modules and module dicts: by name;
- `struct.Struct` objects by format, and their bound `pack`/`unpack` by attribute; read-only
  numpy arrays (constants of the lane code) read-only again and owning their data; a
  one-column register bank's flat view as the view of its (pickled once) array.
Anything else that cannot be pickled makes `save` give up quietly (the template just is not
stored). The key is the template's content key (JSON + code-generator switches) and a
fingerprint of the runtime's sources (all sub-packages), the Python and numpy versions, so any
change to the runtime invalidates every entry. Entries are written to a temporary file and
renamed; an entry that cannot be read is ignored (and replaced). `INAEMU_TEMPLATE_CACHE=0`
turns the store off.

Where: `$INAEMU_CACHE_DIR/templates`, else `$XDG_CACHE_HOME/inaemu/templates`, else
`~/.cache/inaemu/templates` (the compile cache's neighbour). Pickle runs code when it reads: the
directory must be as private as the user's own cache (it is created 0700).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import marshal
import os
import pickle
import struct
import sys
import tempfile
import types
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..cgen import nativebuild
from ..state.regbanks import flat_view, is_flat_view

# the runtime package (p4switch.runtime) this module is part of, one level up: its sources, all
# sub-packages included, are fingerprinted, and its modules' objects are pickled by name
RUNTIME_PACKAGE = __name__.rsplit(".", 2)[0]
PACKAGE_DIR = Path(__file__).resolve().parent.parent
ENABLED = os.environ.get("INAEMU_TEMPLATE_CACHE", "1") != "0"
FORMAT = b"inaemu-template-1"
_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, type,
          types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def store_dir() -> Path:
    explicit = os.environ.get("INAEMU_CACHE_DIR")
    if explicit:
        return Path(explicit) / "templates"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inaemu" / "templates"


@lru_cache(maxsize=1)
def runtime_fingerprint() -> str:
    """A hash of what a template depends on besides its JSON: the runtime's sources (every
    sub-package) and the interpreter and numpy it ran on (marshal's format and bytecode differ
    between Pythons)."""
    digest = hashlib.sha256(FORMAT + b"\0" + sys.version.encode() + b"\0" +
                            np.__version__.encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(b"\0" + source.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _path(key: str, directory: Path | None) -> Path:
    name = hashlib.sha256(f"{runtime_fingerprint()}/{key}".encode()).hexdigest()[:40]
    return (directory or store_dir()) / f"{name}.pickle.z"


def load(key: str, directory: Path | None = None):
    """The stored template of `key`, or None (none stored, unreadable, or the store is off)."""
    if not ENABLED:
        return None
    try:
        data = zlib.decompress(_path(key, directory).read_bytes())
        return pickle.loads(data)
    except Exception:       # missing, damaged, or written by something else: translate again
        return None


def save(key: str, template, directory: Path | None = None) -> bool:
    """Store a template; False (nothing written) if it cannot be pickled or written."""
    if not ENABLED:
        return False
    buffer = io.BytesIO()
    try:
        _TemplatePickler(buffer).dump(template)
    except Exception:
        return False
    target = _path(key, directory)
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(zlib.compress(buffer.getvalue(), 1))
            os.replace(temporary, target)
        except BaseException:
            _unlink(temporary)
            raise
    except OSError:
        return False
    return True


def discard(key: str, directory: Path | None = None) -> None:
    """Remove a stored template (one that could not be bound)."""
    _unlink(str(_path(key, directory)))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# ------------------------------------------------------------------------------- writing
def _module_level_objects() -> dict[int, tuple[str, str, object]]:
    """id -> (module, attribute, object) of the runtime's module-level objects (every
    sub-package) that pickle would otherwise copy (so that reading gives the module's own
    object back)."""
    found: dict[int, tuple[str, str, object]] = {}
    prefix = RUNTIME_PACKAGE + "."
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(prefix):
            continue
        for attr, value in list(vars(module).items()):
            if not isinstance(value, _PLAIN):
                found.setdefault(id(value), (name, attr, value))
    return found


def _cell(contents) -> types.CellType:
    return types.CellType(contents)


def _empty_cell() -> types.CellType:
    return types.CellType()


def _function(code, globals_, name, defaults, closure, kwdefaults, qualname):
    function = types.FunctionType(code, globals_, name, defaults, closure)
    function.__kwdefaults__ = kwdefaults
    function.__qualname__ = qualname
    return function


def _importable(function: types.FunctionType) -> bool:
    found = sys.modules.get(function.__module__ or "")
    for part in function.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is function


def _frozen_array(data: bytes, dtype: str, shape: tuple) -> np.ndarray:
    """A read-only array owning its data, as it was written (codeshare shares such constants)."""
    array = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    array.flags.writeable = False
    return array


def _module_dict(name: str) -> dict:
    return importlib.import_module(name).__dict__


class _TemplatePickler(pickle.Pickler):
    def __init__(self, file) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.module_level = _module_level_objects()
        self.module_dicts = {id(m.__dict__): n for n, m in list(sys.modules.items())
                             if m is not None}

    def reducer_override(self, obj):
        kind = type(obj)
        known = self.module_level.get(id(obj))
        if known is not None and known[2] is obj:
            return getattr, (importlib.import_module(known[0]), known[1])
        if kind is dict and id(obj) in self.module_dicts:
            return _module_dict, (self.module_dicts[id(obj)],)
        if kind is types.ModuleType:
            if nativebuild.is_native_module(obj):     # loaded from a file, not by name
                return nativebuild.load_built, (obj.__name__,)
            return importlib.import_module, (obj.__name__,)
        if kind is types.BuiltinFunctionType and nativebuild.is_native_module(obj.__self__):
            return getattr, (obj.__self__, obj.__name__)
        if kind is types.CodeType:
            return marshal.loads, (marshal.dumps(obj),)
        if kind is types.CellType:
            try:
                return _cell, (obj.cell_contents,)
            except ValueError:
                return _empty_cell, ()
        if kind is types.FunctionType:
            if _importable(obj):
                return NotImplemented                   # by reference, as pickle does
            return _function, (obj.__code__, obj.__globals__, obj.__name__, obj.__defaults__,
                               obj.__closure__, obj.__kwdefaults__, obj.__qualname__)
        if kind is np.ndarray and not obj.flags.writeable:
            return _frozen_array, (obj.tobytes(), obj.dtype.str, obj.shape)
        if kind is struct.Struct:
            return struct.Struct, (obj.format,)
        if kind is memoryview and is_flat_view(obj):
            return flat_view, (obj.obj,)       # a one-column bank's view of its array
        if kind is types.BuiltinFunctionType and isinstance(obj.__self__, struct.Struct):
            return getattr, (obj.__self__, obj.__name__)
        return NotImplemented
