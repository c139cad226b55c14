"""The native packet code's C module: the parser, the ingress and egress controls and the
deparser, each translated where it can be (`ControlTranslator` in nativegen.py, `ParserTranslator`
in nativeparse.py, `DeparserTranslator` in nativedeparse.py, all over one `NativeGenerator`),
plus the method table. `NativeControls` is what nativebuild.py compiles and binds.

Each function is `<name>_impl` over a `Phv` (the PHV's words as C integers beside its lists,
phv/layout.py `word_slots`) and `ctl_<name>`, the same over the lists for Python (`_wrapper`);
the common flow (nativefast.py) calls the `_impl`s directly over one set of words per packet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config import Node
from ..pygen.exprgen import CodeScope
from . import nativefast
from .nativedeparse import DeparserTranslator
from ..phv.layout import word_slots
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
    words: tuple = ()   # the PHV's words (phv/layout.py `word_slots`), C integers in the C


MAX_WORDS = 1 << 14     # a PHV with more keeps its Python code: C functions hold it on the stack


def generate(scope: CodeScope, pipelines: dict[str, Node], tables: dict, actions: dict,
             parser: Node | None = None, verify: list | None = None,
             calculations: dict | None = None, deparser: Node | None = None,
             update: list | None = None) -> NativeControls:
    """C for the parser, the ingress and egress controls and the deparser, each where it can
    be translated (see the docstrings of nativegen.py, nativeparse.py and nativedeparse.py)."""
    gen = NativeGenerator(scope, tables, actions, calculations)
    words = word_slots(scope.layout, gen.vector_slots)
    word_set = frozenset(words)
    nflags = len(scope.layout.header_list)
    functions, refused, impls = [], {}, {}
    for name in ("parse", "ingress", "egress", "deparse"):
        state_before, callbacks_before = len(gen.state_names), len(gen.callbacks)
        bodies_before = set(gen._bodies)
        try:
            if max(words) >= MAX_WORDS:
                raise Untranslatable(f"a PHV of more than {MAX_WORDS} slots")
            if name == "deparse":
                if deparser is None:
                    raise Untranslatable("no deparser given")
                text = DeparserTranslator(gen, deparser, update or [], scope,
                                          calculations or {}).compile()
            elif name == "parse":
                if parser is None:
                    raise Untranslatable("no parser given")
                text = ParserTranslator(gen, parser, verify or [], scope, calculations).compile()
            else:
                text = ControlTranslator(gen, pipelines[name], f"ctl_{name}").compile()
            fields, flags = _words_used(text)
            if not fields <= word_set:      # the translators read only words; a check
                raise Untranslatable(f"slots {sorted(fields - word_set)} are not words")
            impls[name] = text
            functions.append(text + "\n\n" + _wrapper(name, fields, flags))
        except Untranslatable as why:
            refused[name] = str(why)
            del gen.state_names[state_before:]      # nothing of a refused function remains
            del gen.callbacks[callbacks_before:]
            for action_id in set(gen._bodies) - bodies_before:
                del gen._bodies[action_id]
    names = [name for name in ("parse", "ingress", "egress", "deparse") if name not in refused]
    if len(names) == 4:     # the whole common flow as one C call (nativefast.py)
        functions.append(nativefast.source(scope.layout, words, _writes_lists(impls["egress"])))
        names.append(nativefast.METHOD)
    methods = "\n".join(f"    {{\"{name}\", (PyCFunction)(void(*)(void))ctl_{name}, "
                        "METH_FASTCALL, NULL}," for name in names)
    methods += '\n    {"use_frame_source", (PyCFunction)use_frame_source, METH_O, NULL},'
    methods += '\n    {"bank_table", (PyCFunction)bank_table, METH_O, NULL},'
    source = _phv_source(words, nflags, scope.layout.num_slots) + \
        "".join(gen.definitions.values()) + "\n\n".join(functions) + \
        _bank_table_source(gen) + \
        f"\n\nstatic PyMethodDef METHODS[] = {{\n{methods}\n    {{NULL, NULL, 0, NULL}}\n}};\n"
    fields, flags = _words_used(source)
    fields |= {int(n) for n in re.findall(
        r"\b(?:run_view|run_copy|run_from_wire|run_to_wire)\(f, (\d+)", source)}
    return NativeControls(source, list(gen.state_names), "\n\n\n".join(gen.callbacks),
                          refused, max(fields, default=-1) + 1, max(flags, default=-1) + 1,
                          words)


def _bank_table_source(gen: NativeGenerator) -> str:
    """`bank_table(state)`: the Banks the controls read their register banks through (the
    prelude's `banks_of`), over the banks this module was compiled for, by state index."""
    specs = [f"{{{gen.state_names.index(name)}, {rows}, {cols}, {typenum}}}"
             for name, (rows, cols, typenum) in gen.bank_specs.items()
             if name in gen.state_names]
    table = ", ".join(specs) or "{0, 0, 0, 0}"
    return (f"\n\nstatic const BankSpec BANK_SPECS[] = {{{table}}};\n"
            "static PyObject *bank_table(PyObject *self, PyObject *state) {\n"
            "    PyObject *maker = PyObject_GetAttrString(self, \"bank_table\");\n"
            "    if (maker == NULL) return NULL;\n"
            f"    PyObject *banks = banks_of(maker, state, BANK_SPECS, {len(specs)});\n"
            "    Py_DECREF(maker);\n"
            "    return banks;\n"
            "}\n")


def _words_used(text: str) -> tuple[set[int], set[int]]:
    """The words (`PF[slot]`) and flags (`PV[index]`) a piece of generated C reads or writes."""
    return ({int(n) for n in re.findall(r"\bPF\[(\d+)\]", text)},
            {int(n) for n in re.findall(r"\bPV\[(\d+)\]", text)})


def _writes_lists(text: str) -> bool:
    """Whether a translated function may write the PHV's lists: a Python callback (it may
    write anything), a lane vector it stores or a slot setValid zeroes."""
    return re.search(r"\b(?:call3|call_truth|call_verify|run_store|run_from_wire|list_zero)\(",
                     text) \
        is not None


def _c_array(name: str, values) -> str:
    values = sorted(values)
    return f"static const int32_t {name}[] = {{{', '.join(map(str, values or [0]))}}};"


def _phv_source(words: tuple[int, ...], nflags: int, slots: int) -> str:
    """The PHV's C shape (phv/layout.py `word_slots`): NW words indexed by slot, NV flags, the
    list of every word and flag (what the common flow copies to the lists before Python runs),
    which slots are words, and the slots that are not (what the common flow resets in a
    packet's list for the next packet)."""
    nw = max(words) + 1
    is_word = ["0"] * nw
    for slot in words:
        is_word[slot] = "1"
    return "\n".join([
        f"#define NW {nw}", f"#define NV {max(nflags, 1)}",
        _c_array("ALL_WORDS", words), f"#define N_ALL_WORDS {len(words)}",
        _c_array("ALL_FLAGS", range(nflags)), f"#define N_ALL_FLAGS {nflags}",
        _c_array("NOT_WORDS", sorted(set(range(slots)) - set(words))),
        f"#define N_NOT_WORDS {slots - len(words)}",
        f"static const uint8_t IS_WORD[NW] = {{{', '.join(is_word)}}};", "", ""])


# per function: (the argument check, the call of its `_impl` over `P`, what it returns); the
# words and flags are written back to the lists between the last two
_WRAPPED = {
    "parse": ('if (nargs != 4) { PyErr_SetString(PyExc_TypeError, "native parser: expected '
              '(state, fields, flags, data)"); return NULL; }',
              "Py_ssize_t pos = parse_impl(S, &P, args[3]);\n    if (pos < 0) return NULL;",
              "return PyLong_FromSsize_t(pos);", ""),
    "deparse": ('if (nargs != 4 && nargs != 5) { PyErr_SetString(PyExc_TypeError, "native '
                'deparser: expected (state, fields, flags, payload[, memo])"); return NULL; }',
                "PyObject *out = deparse_impl(S, &P, args[3]);\n    if (out == NULL) return NULL;",
                "return out;", "Py_DECREF(out); "),
}


def _wrapper(name: str, fields: set[int], flags: set[int]) -> str:
    """`ctl_<name>(S, f, v, ...)`, the function as Python calls it: the words and flags it
    uses are read from the lists, the C runs over them, and they are written back (a slot
    that keeps its value keeps its int)."""
    check, run, finish, undo = _WRAPPED.get(name, (
        "if (nargs != 3) { PyErr_SetString(PyExc_TypeError, \"native control: expected "
        "(state, fields, flags)\"); return NULL; }",
        f"if (ctl_{name}_impl(S, &P)) return NULL;", "Py_RETURN_NONE;", ""))
    return "\n".join([
        _c_array(f"FS_{name}", fields), _c_array(f"VS_{name}", flags),
        f"static PyObject *ctl_{name}(PyObject *self, PyObject *const *args, "
        "Py_ssize_t nargs) {",
        "    PyObject *S, *f, *v;",
        "    u64 F[NW], V[NV];",
        "    " + check,
        "    if (enter(args, 3, &S, &f, &v)) return NULL;",
        f"    Phv P = {{f, v, F, V, FS_{name}, VS_{name}, {len(fields)}, {len(flags)}}};",
        "    if (phv_in(&P)) return NULL;",
        "    " + run,
        f"    if (phv_out(&P)) {{ {undo}return NULL; }}",
        "    " + finish,
        "}"])
