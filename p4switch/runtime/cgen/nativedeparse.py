"""The deparser as C (part of the native packet code, `nativegen.py`): update checksums, then every valid header of
the deparse order, then the payload, into one new bytes object.

Translated when every emitted header has whole bytes of unsigned fields of at most 64 bits
(lane vectors included) and every update checksum is a csum16 over fields and constants
(`nativeparse.checksum_c`); a deparser with primitives, or any other header or checksum, keeps
the Python deparser. The same C function stands for `deparse_replica` (multicast copies): the
Python one only caches, in `memo`, bytes that every replica would compute alike, so computing
them again gives the same packet.
"""

from __future__ import annotations

from ..config import Node
from ..pygen.deparsergen import deparse_order
from ..pygen.exprgen import CodeScope
from .nativeexpr import RUN_TYPENUMS, ExprTranslator, Untranslatable, _Block, run_ctype
from .nativegen import PHV_LOCALS, NativeGenerator
from .nativeparse import checksum_c


class DeparserTranslator:
    def __init__(self, gen: NativeGenerator, deparser: Node, checksums: list, scope: CodeScope,
                 calculations: dict):
        self.gen = gen
        self.node = deparser
        self.checksums = checksums
        self.scope = scope
        self.layout = scope.layout
        self.calculations = calculations
        self.runs = scope.namespace.get("__vector_runs__") or {}

    def compile(self) -> str:
        if self.node.has("primitives") and self.node["primitives"].items():
            raise Untranslatable("a deparser with primitives")
        updates = [line for node, _ in self.checksums for line in self._update(node)]
        order = deparse_order(self.node, self.scope)
        sizes, emit = [], []
        for inst in order:
            sizes.append(f"if (PV[{inst.index}]) n += {self._header_bytes(inst)};")
            emit += [f"if (PV[{inst.index}]) {{"] + \
                ["    " + line for line in self._emit(inst)] + ["}"]
        # deparse_rest: the headers, then `rest` (the payload's bytes, which the caller holds);
        # deparse_impl: the same for a payload object (any buffer)
        return "\n".join([
            "static PyObject *deparse_rest(PyObject *S, Phv *P, const uint8_t *rest, "
            "Py_ssize_t rest_len) {",
            "    " + PHV_LOCALS,
            "    PyObject *p = NULL, *out = NULL; (void)p;",
            "    Py_ssize_t n = 0; uint8_t *o;",
        ] + ["    " + line for line in updates] + \
            ["    " + line for line in sizes] + [
            "    out = frame_source(n + rest_len);",
            "    if (out == NULL) goto fail;",
            "    o = (uint8_t *)PyBytes_AS_STRING(out);",
        ] + ["    " + line for line in emit] + [
            "    if (rest_len) memcpy(o, rest, rest_len);",
            "    return out;",
            "fail:",
            "    Py_XDECREF(out);",
            "    return NULL;",
            "}",
            "",
            "static PyObject *deparse_impl(PyObject *S, Phv *P, PyObject *payload) {",
            "    Py_buffer B;",
            "    if (PyObject_GetBuffer(payload, &B, PyBUF_SIMPLE) < 0) return NULL;",
            "    PyObject *out = deparse_rest(S, P, (const uint8_t *)B.buf, B.len);",
            "    PyBuffer_Release(&B);",
            "    return out;",
            "}"])

    def _header_bytes(self, inst) -> int:
        htype = inst.htype
        if htype.varbit_index is not None or htype.fixed_bits % 8 or \
                any(w > 64 or signed for _, w, signed in htype.fields):
            raise Untranslatable("a varbit, signed or wide header")
        return htype.fixed_bits // 8

    def _emit(self, inst) -> list[str]:
        nbytes = self._header_bytes(inst)
        runs = {run.first: run for run in self.runs.get(inst.index, [])}
        lines = []
        whole = True        # every byte is written whole by one field or run: no zeroing
        bit = 0
        slot = inst.base
        for _, width, _ in inst.htype.fields:
            run = runs.get(slot)
            if run is not None:
                if run.signed or run.first not in self.gen.run_of or bit % 8:
                    raise Untranslatable("a lane vector C does not hold")
                ctype = run_ctype(run)
                whole = whole and run.width % 8 == 0
                lines.append(f"if (run_to_wire(f, {slot}, o + {bit // 8}, {run.count}, "
                             f"{RUN_TYPENUMS[ctype]}, {run.width // 8})) goto fail;")
            elif slot in self.gen.vector_slots:
                pass                        # inside a run: the array holds it
            elif bit % 8 == 0 and width % 8 == 0:
                lines.append(f"put_be(o + {bit // 8}, {width // 8}, PF[{slot}]);")
            else:
                whole = False               # put_bits ors its bits into zeroed bytes
                lines.append(f"put_bits(o, {bit}, {width}, PF[{slot}]);")
            bit += width
            slot += 1
        zero = [] if whole else [f"memset(o, 0, {nbytes});"]
        return zero + lines + [f"o += {nbytes};"]

    def _update(self, node: Node) -> list[str]:
        block = _Block(self.gen, None)
        ex = ExprTranslator(self.scope, block)
        ref, body = checksum_c(node, self.calculations, self.layout, block)
        body.append(block.store(ref.slot, ref.width,
                                _Sum("cs_result(cs_sum)")))
        if node.has("if_cond"):
            cond = ex.truth(node["if_cond"])
            body = [f"if ({cond}) {{"] + ["    " + b for b in body] + ["}"]
        return block.wrap(["{"] + ["    " + b for b in body] + ["}"])


class _Sum:
    """A csum16 result: 16 bits."""

    def __init__(self, code: str):
        self.code = code
        self.bits = 16
