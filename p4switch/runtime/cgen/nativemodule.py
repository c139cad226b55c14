"""The native packet code's C module: the parser, the ingress and egress controls and the
deparser, each translated where it can be (`ControlTranslator` in nativegen.py, `ParserTranslator`
in nativeparse.py, `DeparserTranslator` in nativedeparse.py, all over one `NativeGenerator`),
plus the method table. `NativeControls` is what nativebuild.py compiles and binds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config import Node
from ..pygen.exprgen import CodeScope
from . import nativefast
from .nativedeparse import DeparserTranslator
from .nativeexpr import Untranslatable
from .nativegen import ControlTranslator, NativeGenerator
from .nativeparse import ParserTranslator


@dataclass
class NativeControls:
    """What `generate` made: the C source, the namespace names of the state objects the C
    code takes (in order, as one tuple), and the Python source of its callbacks."""

    c_source: str
    state_names: list[str]
    python_source: str
    refused: dict[str, str] = field(default_factory=dict)   # control -> why it stays Python
    fields: int = 0     # the C code reads and writes f[0:fields] and v[0:flags] directly
    flags: int = 0


def generate(scope: CodeScope, pipelines: dict[str, Node], tables: dict, actions: dict,
             parser: Node | None = None, verify: list | None = None,
             calculations: dict | None = None, deparser: Node | None = None,
             update: list | None = None) -> NativeControls:
    """C for the parser, the ingress and egress controls and the deparser, each where it can
    be translated (see the docstrings of nativegen.py, nativeparse.py and nativedeparse.py)."""
    gen = NativeGenerator(scope, tables, actions)
    functions, refused = [], {}
    for name in ("parse", "ingress", "egress", "deparse"):
        state_before, callbacks_before = len(gen.state_names), len(gen.callbacks)
        bodies_before = set(gen._bodies)
        try:
            if name == "deparse":
                if deparser is None:
                    raise Untranslatable("no deparser given")
                functions.append(DeparserTranslator(gen, deparser, update or [], scope,
                                                    calculations or {}).compile())
            elif name == "parse":
                if parser is None:
                    raise Untranslatable("no parser given")
                functions.append(ParserTranslator(gen, parser, verify or [], scope,
                                                  calculations).compile())
            else:
                functions.append(ControlTranslator(gen, pipelines[name],
                                                   f"ctl_{name}").compile())
        except Untranslatable as why:
            refused[name] = str(why)
            del gen.state_names[state_before:]      # nothing of a refused function remains
            del gen.callbacks[callbacks_before:]
            for action_id in set(gen._bodies) - bodies_before:
                del gen._bodies[action_id]
    names = [name for name in ("parse", "ingress", "egress", "deparse") if name not in refused]
    if len(names) == 4:     # the whole common flow as one C call (nativefast.py)
        functions.append(nativefast.source())
        names.append(nativefast.METHOD)
    methods = "\n".join(f"    {{\"{name}\", (PyCFunction)(void(*)(void))ctl_{name}, "
                        "METH_FASTCALL, NULL}," for name in names)
    source = "\n\n".join(functions) + f"\n\nstatic PyMethodDef METHODS[] = {{\n{methods}\n" \
        "    {NULL, NULL, 0, NULL}\n};\n"
    fields = [int(n) for n in re.findall(r"\b(?:rd|wr|run_view|run_copy|run_from_wire|run_to_wire)\(f, (\d+)",
                                         source)]
    flags = [int(n) for n in re.findall(r"\b(?:rd|wr)\(v, (\d+)", source)]
    return NativeControls(source, list(gen.state_names), "\n\n\n".join(gen.callbacks),
                          refused, max(fields, default=-1) + 1, max(flags, default=-1) + 1)
