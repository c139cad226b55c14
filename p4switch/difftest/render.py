"""`Program` -> P4_16 text (v1model). One statement per line, so cases minimise line by line."""

from __future__ import annotations

from .model import Control, Program, Table


def render_program(p: Program) -> str:
    out = ["#include <core.p4>", "#include <v1model.p4>", ""]
    if p.errors:
        out.append(f"error {{ {', '.join(p.errors)} }}")
    for h in p.headers:
        fields = " ".join(f"{ty.p4()} {name};" for name, ty in h.fields)
        if h.varbit:
            fields += f" varbit<{h.varbit}> opt;"
        out.append(f"header {h.type_name} {{ {fields} }}")
    out.append("struct headers_t {")
    out += [f"    {h.type_name}{f'[{h.stack}]' if h.stack else ''} {h.name};" for h in p.headers]
    out.append("}")
    out.append("struct meta_t {")
    out += [f"    {ty.p4()} {name};" for name, ty in p.meta]
    out.append("}")
    for name, types in p.ingress.digests + p.egress.digests:
        fields = " ".join(f"{ty.p4()} d{i};" for i, ty in enumerate(types))
        out.append(f"struct {name} {{ {fields} }}")
    out.append("")
    out.append("parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, "
               "inout standard_metadata_t sm) {")
    headers = {h.name: h for h in p.headers}
    for s in p.states:
        out.append(f"    state {s.name} {{")
        header = headers[s.header]
        extracted = f"{s.header}.next" if header.stack else s.header
        length = f", {header.length_expr}" if header.varbit else ""
        out.append(f"        pkt.extract(hdr.{extracted}{length});")
        if s.advance:
            out.append(f"        pkt.advance(32w{s.advance * 8});")
        out += [f"        {line}" for line in s.sets]
        if s.verify:
            out.append(f"        {s.verify}")
        if s.keys:
            keys = ", ".join(k for k, _ in s.keys)
            out.append(f"        transition select({keys}) {{")
            for case in s.cases:
                keyset = case.values[0] if len(case.values) == 1 else \
                    "(" + ", ".join(case.values) + ")"
                out.append(f"            {keyset}: {case.target};")
            out.append(f"            default: {s.default};")
            out.append("        }")
        else:
            out.append(f"        transition {s.default};")
        out.append("    }")
    out.append("}")
    out.append("")
    out += _checksum_control("VC", p.verify)
    for sub in p.ingress.subs:
        out += _control(sub)
    out += _control(p.ingress)
    out += _control(p.egress)
    out += _checksum_control("CC", p.compute)
    out.append("control D(packet_out pkt, in headers_t hdr) {")
    out.append("    apply {")
    out += [f"        pkt.emit(hdr.{name});" for name in p.emit_order]
    out.append("    }")
    out.append("}")
    out.append("")
    out.append("V1Switch(P(), VC(), I(), E(), CC(), D()) main;")
    return "\n".join(out) + "\n"


def _checksum_control(name: str, lines: list[str]) -> list[str]:
    head = f"control {name}(inout headers_t hdr, inout meta_t meta)"
    if not lines:
        return [head + " { apply { } }"]
    return [head + " {", "    apply {"] + [f"        {line}" for line in lines] + ["    }", "}"]


def _control(c: Control) -> list[str]:
    rest = "inout standard_metadata_t sm" if c.params is None else c.params
    out = ["", f"control {c.name}(inout headers_t hdr, inout meta_t meta, {rest}) {{"]
    out += [f"    {sub.name}() {sub.name.lower()};" for sub in c.subs]
    for r in c.registers:
        out.append(f"    register<{r.elem.p4()}>({r.size}) {r.name};")
    for k in c.counters:
        out.append(f"    counter({k.size}, CounterType.{k.kind}) {k.name};")
    out += [f"    {line}" for line in c.locals]
    for a in c.actions:
        params = ", ".join([f"{direction} {ty.p4()} {name}" for name, direction, ty in a.bound]
                           + [f"{ty.p4()} {name}" for name, ty in a.params])
        out.append(f"    action {a.name}({params}) {{")
        out += a.body
        out.append("    }")
    for t in c.tables:
        out += _table(t)
    out.append("    apply {")
    out += c.apply
    out.append("    }")
    out.append("}")
    return out


def _table(t: Table) -> list[str]:
    out = [f"    table {t.name} {{", "        key = {"]
    out += [f"            {k.expr}: {k.match};" for k in t.keys]
    out.append("        }")
    listed = [f"{a}({t.bound_args[a]})" if a in t.bound_args else a for a in t.actions]
    out.append(f"        actions = {{ {' '.join(a + ';' for a in listed)} }}")

    def call(action: str, args: list[int]) -> str:
        given = ([t.bound_args[action]] if action in t.bound_args else []) + list(map(str, args))
        return f"{action}({', '.join(given)})"
    if t.const_entries is not None:
        out.append("        const entries = {")
        for keysets, action, args in t.const_entries:
            keys = keysets[0] if len(keysets) == 1 else "(" + ", ".join(keysets) + ")"
            out.append(f"            {keys}: {call(action, args)};")
        out.append("        }")
    name, args = t.default
    out.append(f"        default_action = {call(name, args)};")
    out.append("    }")
    return out
