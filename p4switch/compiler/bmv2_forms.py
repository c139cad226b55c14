"""The JSON forms real BMv2 (simple_switch) accepts, and a check of a whole document against them.

BMv2 types every expression node: DATA (fields, constants, arithmetic, `b2d`), BOOL (comparisons,
`and`/`or`/`not`, `d2b`, `valid`, `bool` literals), HEADER, HEADER_STACK, UNION, UNION_STACK.
Each place an expression may appear takes some of these only, and each leaf form is allowed in
some places only (action data is `runtime_data` as a primitive parameter but `local` inside an
expression; a parser `set` takes a field, constant, lookahead or expression source; a primitive
parameter of type `expression` must be DATA or a header-like value, never BOOL). The helpers
below put a lowered value into the form its context needs; `check_document` walks a finished
document and reports, with its JSON path, anything simple_switch would refuse or abort on (and
two forms it loads but runs differently from what P4 means: primitives after an `exit` in the
same action, and `assign_union`), so such a lowering bug is an internal compiler error rather
than a JSON the reference rejects or misruns.
"""

from __future__ import annotations

BOOL_OPS = {"==", "!=", "<", ">", "<=", ">=", "and", "or", "not", "d2b", "valid", "valid_union"}
DATA_OPS = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~", "two_comp_mod", "usat_cast",
            "sat_cast", "b2d", "last_stack_index", "size_stack", "access_field"}
HEADER_OPS = {"dereference_header_stack", "dereference_stack", "access_union_header"}
UNION_OPS = {"dereference_union_stack"}
LEAF_KINDS = {"field": "data", "hexstr": "data", "local": "data", "register": "data",
              "stack_field": "data", "bool": "bool", "header": "header",
              "header_stack": "header_stack", "header_union": "union",
              "header_union_stack": "union_stack"}
UNARY_OPS = {"~", "not", "d2b", "b2d", "valid", "valid_union", "last_stack_index", "size_stack"}


class FormError(Exception):
    """A lowered document holds a form BMv2 does not accept (a compiler bug)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


# ---- kinds ----------------------------------------------------------------------------------
def kind(j) -> str:
    """BMv2's type of an expression node: data, bool, header, header_stack, union, union_stack
    (or 'unknown' for what BMv2 would not accept inside an expression)."""
    if not isinstance(j, dict):
        return "unknown"
    t = j.get("type")
    if t == "expression":
        v = j.get("value")
        if isinstance(v, dict) and "op" not in v:
            return kind(v)  # a wrapped leaf
        op = v.get("op") if isinstance(v, dict) else None
        if op == "?":
            return kind(v.get("left"))
        if op in BOOL_OPS:
            return "bool"
        if op in DATA_OPS:
            return "data"
        if op in HEADER_OPS:
            return "header"
        if op in UNION_OPS:
            return "union"
        return "unknown"
    return LEAF_KINDS.get(t, "unknown")


# ---- putting values into the form a context needs -------------------------------------------
def operand(j):
    """A child of an expression node: action data is read as `local` there."""
    if isinstance(j, dict) and j.get("type") == "runtime_data":
        return {"type": "local", "value": j["value"]}
    return j


def as_data(j):
    """A value where BMv2 wants DATA: a BOOL becomes `b2d(...)`."""
    if kind(j) == "bool":
        if j.get("type") == "bool":
            return {"type": "hexstr", "value": "0x01" if j["value"] else "0x00"}
        return _node("b2d", None, j)
    return j


def as_bool(j):
    """A value where BMv2 wants BOOL (a condition): DATA becomes `d2b(...)`."""
    if kind(operand(j)) == "data":
        return _node("d2b", None, operand(j))
    return j


def primitive_param(j):
    """A primitive's parameter. Leaves BMv2 takes directly stay (`runtime_data` for action
    data); an expression is wrapped once more, as `{"type": "expression", "value": <node>}`,
    and must not be BOOL (booleans are passed as `b2d`); a `bool` literal is a constant."""
    if not isinstance(j, dict):
        return j
    t = j.get("type")
    if t == "local":
        return {"type": "runtime_data", "value": j["value"]}
    if t == "bool":
        return as_data(j)
    if t == "expression" and isinstance(j.get("value"), dict) and "op" in j["value"]:
        return {"type": "expression", "value": as_data(j)}
    return j


def parser_set_source(j):
    """The source of a parser `set`: a field, constant or lookahead as is, anything else (a
    `stack_field`, arithmetic, a boolean as `b2d`) as an expression."""
    if not isinstance(j, dict):
        return j
    t = j.get("type")
    if t in ("field", "hexstr", "lookahead"):
        return j
    if t == "expression" and isinstance(j.get("value"), dict) and "op" not in j["value"]:
        return j  # already wrapped
    return {"type": "expression", "value": as_data(j)}


def parser_length(j):
    """An `advance` amount: a field or constant as is, anything else as an expression."""
    if isinstance(j, dict) and j.get("type") in ("field", "hexstr"):
        return j
    return parser_set_source(j)


def _node(name, left, right) -> dict:
    return {"type": "expression", "value": {"op": name, "left": left, "right": right}}


# ---- checking a whole document --------------------------------------------------------------
PARAM_ROLES = {
    # primitive: roles of its parameters (see _check_param)
    "assign": ("dst", "data"), "assign_VL": ("field", "field"),
    "assign_header": ("header", "header"),
    "assign_header_stack": ("header_stack", "header_stack"),
    "add_header": ("header",), "remove_header": ("header",), "mark_to_drop": ("header",),
    "push": ("any_stack", "data"), "pop": ("any_stack", "data"),
    "count": ("counter_array", "data"), "execute_meter": ("meter_array", "data", "field"),
    "register_read": ("field", "register_array", "data"),
    "register_write": ("register_array", "data", "data"),
    "modify_field_with_hash_based_offset": ("dst", "data", "calculation", "data"),
    "modify_field_rng_uniform": ("dst", "data", "data"),
    "clone_ingress_pkt_to_egress": ("data", "data"),
    "clone_egress_pkt_to_egress": ("data", "data"),
    "resubmit": ("data",), "recirculate": ("data",), "truncate": ("data",),
    "generate_digest": ("data", "data"), "log_msg": ("string", "vector"),
    "assert": ("data",), "assume": ("data",), "exit": (), "drop": (),
    "_jump_if_zero": ("data", "data"), "_jump": ("data",),
}
DATA_LEAVES = {"hexstr", "field", "runtime_data", "stack_field", "register"}
DST_LEAVES = {"field", "stack_field", "register"}


def check_document(doc: dict) -> None:
    """Raise FormError at the first place simple_switch would refuse or abort on."""
    for i, action in enumerate(doc.get("actions", [])):
        n_data = len(action.get("runtime_data", []))
        prims = action.get("primitives", [])
        for k, prim in enumerate(prims):
            where = f"actions[{i}]({action['name']}).primitives[{k}]"
            _check_primitive(prim, where, n_data)
            if prim.get("op") == "exit" and k + 1 < len(prims) and not (
                    prims[k + 1].get("op") == "_jump"
                    and prims[k + 1]["parameters"][0].get("value") in _ends(len(prims))):
                # BMv2's exit only flags the packet; what follows in the action would run
                raise FormError(where, "an exit must end the action (or jump to its end)")
    for p, parser in enumerate(doc.get("parsers", [])):
        for s, state in enumerate(parser.get("parse_states", [])):
            where = f"parsers[{p}].parse_states[{s}]({state['name']})"
            for k, pop in enumerate(state.get("parser_ops", [])):
                _check_parser_op(pop, f"{where}.parser_ops[{k}]")
            for k, key in enumerate(state.get("transition_key", [])):
                if key.get("type") not in ("field", "stack_field", "union_stack_field",
                                           "lookahead"):
                    raise FormError(f"{where}.transition_key[{k}]",
                                    f"a parser select key cannot be '{key.get('type')}'")
    for p, pipe in enumerate(doc.get("pipelines", [])):
        for c, cond in enumerate(pipe.get("conditionals", [])):
            _check_expr(cond.get("expression"), f"pipelines[{p}].conditionals[{c}].expression",
                        want="bool")
        for t, table in enumerate(pipe.get("tables", [])):
            _check_table(table, f"pipelines[{p}].tables[{t}]({table['name']})", doc)
    for c, calc in enumerate(doc.get("calculations", [])):
        for i, item in enumerate(calc.get("input", [])):
            if item.get("type") not in ("field", "hexstr", "header", "payload"):
                raise FormError(f"calculations[{c}]({calc['name']}).input[{i}]",
                                f"a calculation cannot take a '{item.get('type')}'")
    for what in ("field_lists", "learn_lists"):
        for n, fl in enumerate(doc.get(what, [])):
            for i, item in enumerate(fl.get("elements", [])):
                if item.get("type") != "field":
                    raise FormError(f"{what}[{n}].elements[{i}]",
                                    f"a field list holds fields only, not '{item.get('type')}'")
    for c, ck in enumerate(doc.get("checksums", [])):
        if ck.get("if_cond") is not None:
            _check_expr(ck["if_cond"], f"checksums[{c}].if_cond", want="bool")


def _ends(n: int) -> set:
    """The ways a jump to primitive index n (the action's end) may be written."""
    return {hex(n), f"0x{n:02x}", f"0x{n:04x}", f"0x{n:08x}"}


def _check_primitive(prim: dict, where: str, n_data: int, in_parser: bool = False) -> None:
    name = prim.get("op")
    if name == "assign_union":
        # a header_union argument does not make BMv2 keep its members' field values up to
        # date, so simple_switch copies stale values: copy member by member (assign_header)
        raise FormError(where, "assign_union copies stale field values on simple_switch")
    roles = PARAM_ROLES.get(name)
    params = prim.get("parameters", [])
    if roles is None:
        raise FormError(where, f"primitive '{name}' is not one simple_switch implements here")
    if len(params) != len(roles):
        raise FormError(where, f"primitive '{name}' takes {len(roles)} parameters, "
                               f"not {len(params)}")
    for i, (param, role) in enumerate(zip(params, roles)):
        _check_param(param, role, f"{where}.parameters[{i}]", n_data, in_parser)


def _check_param(param: dict, role: str, where: str, n_data: int, in_parser: bool) -> None:
    t = param.get("type") if isinstance(param, dict) else None
    if t == "runtime_data":
        if in_parser or not isinstance(param.get("value"), int) or param["value"] >= n_data:
            raise FormError(where, "action data beyond the action's parameters")
    if role == "vector":
        if t != "parameters_vector":
            raise FormError(where, "expected a parameters_vector")
        for i, item in enumerate(param.get("value") or []):
            _check_param(item, "data", f"{where}.value[{i}]", n_data, in_parser)
        return
    if role in ("string", "calculation", "counter_array", "meter_array", "register_array"):
        if t != role:
            raise FormError(where, f"expected a '{role}' parameter, got '{t}'")
        return
    if t == "expression" and role != "field":
        inner = param.get("value")
        if not (isinstance(inner, dict) and inner.get("type") in set(LEAF_KINDS) | {"expression"}):
            raise FormError(where, "an expression parameter must wrap an expression node")
        k = _check_expr(inner, where + ".value", n_data=n_data)
        wanted = {"dst": "data", "data": "data"}.get(role, role)
        if k != wanted:
            raise FormError(where, f"a primitive's expression parameter here must be {wanted}, "
                                   f"not {k}")
        if role == "dst" and not _is_lvalue(inner):
            raise FormError(where, "the destination expression is not a location")
        return
    allowed = {"dst": DST_LEAVES, "field": {"field"}, "data": DATA_LEAVES, "header": {"header"},
               "header_stack": {"header_stack"}, "union": {"header_union"},
               "any_stack": {"header_stack", "header_union_stack"}}[role]
    if t not in allowed:
        raise FormError(where, f"a '{t}' cannot be passed where the primitive wants {role}")


def _is_lvalue(node: dict) -> bool:
    if node.get("type") in DST_LEAVES:
        return True
    v = node.get("value")
    return node.get("type") == "expression" and isinstance(v, dict) and v.get("op") == \
        "access_field"


def _check_expr(node, where: str, want: str | None = None, n_data: int = 0) -> str:
    """Check an expression tree; returns its kind."""
    if not isinstance(node, dict):
        raise FormError(where, "expected an expression object")
    t = node.get("type")
    if t != "expression":
        if t == "runtime_data":
            raise FormError(where, "action data inside an expression must be 'local'")
        if t not in LEAF_KINDS:
            raise FormError(where, f"'{t}' cannot appear in an expression")
        if t == "local" and (not isinstance(node.get("value"), int) or node["value"] >= n_data):
            raise FormError(where, "'local' beyond the action's parameters")
        k = LEAF_KINDS[t]
    else:
        v = node.get("value")
        if isinstance(v, dict) and "op" not in v:
            k = _check_expr(v, where + ".value", n_data=n_data)
        else:
            k = _check_node(v, where + ".value", n_data)
    if want is not None and k != want:
        raise FormError(where, f"expected a {want} expression here, got {k}")
    return k


def _check_node(v, where: str, n_data: int) -> str:
    if not isinstance(v, dict) or "op" not in v:
        raise FormError(where, "expected an expression node with 'op'")
    op = v["op"]
    left, right = v.get("left"), v.get("right")
    if op == "?":
        _check_expr(v.get("cond"), where + ".cond", want="bool", n_data=n_data)
        lk = _check_expr(left, where + ".left", n_data=n_data)
        _check_expr(right, where + ".right", want=lk, n_data=n_data)
        return lk
    if op in ("access_field", "access_union_header"):
        lk = _check_expr(left, where + ".left", n_data=n_data)
        if lk != ("header" if op == "access_field" else "union"):
            raise FormError(where, f"{op} needs a header on its left")
        if not isinstance(right, int):
            raise FormError(where, f"{op} needs an integer offset on its right")
        return "data" if op == "access_field" else "header"
    if op in ("==", "!="):
        lk = _check_expr(left, where + ".left", n_data=n_data)
        _check_expr(right, where + ".right", want=lk, n_data=n_data)
        if lk not in ("data", "bool", "header", "union"):
            raise FormError(where, f"cannot compare {lk} values")
        return "bool"
    operand_kind = {"and": "bool", "or": "bool", "not": "bool", "b2d": "bool",
                    "valid": "header", "valid_union": "union", "last_stack_index": "header_stack",
                    "size_stack": "header_stack", "dereference_header_stack": None,
                    "dereference_stack": None, "dereference_union_stack": None}
    if op not in BOOL_OPS | DATA_OPS | HEADER_OPS | UNION_OPS:
        raise FormError(where, f"unknown expression operator '{op}'")
    want = operand_kind.get(op, "data")
    if op in ("dereference_header_stack", "dereference_stack"):
        _check_expr(left, where + ".left", want="header_stack", n_data=n_data)
        _check_expr(right, where + ".right", want="data", n_data=n_data)
        return "header"
    if op == "dereference_union_stack":
        _check_expr(left, where + ".left", want="union_stack", n_data=n_data)
        _check_expr(right, where + ".right", want="data", n_data=n_data)
        return "union"
    if op in UNARY_OPS:
        if left is not None:
            raise FormError(where, f"unary '{op}' has a left operand")
        _check_expr(right, where + ".right", want=want, n_data=n_data)
    elif op == "-" and left is None:
        _check_expr(right, where + ".right", want="data", n_data=n_data)
    else:
        _check_expr(left, where + ".left", want=want, n_data=n_data)
        _check_expr(right, where + ".right", want=want, n_data=n_data)
    return kind({"type": "expression", "value": v})


def _check_parser_op(pop: dict, where: str) -> None:
    name = pop.get("op")
    params = pop.get("parameters", [])
    if name in ("extract", "extract_VL"):
        if len(params) != (1 if name == "extract" else 2):
            raise FormError(where, f"'{name}' has the wrong number of parameters")
        if params[0].get("type") not in ("regular", "stack", "union_stack"):
            raise FormError(where, f"cannot extract into '{params[0].get('type')}'")
        if name == "extract_VL":
            if params[1].get("type") != "expression":
                raise FormError(where, "the extract_VL length must be an expression")
            _check_expr(params[1]["value"], where + ".parameters[1].value", want="data")
    elif name == "set":
        if len(params) != 2 or params[0].get("type") != "field":
            raise FormError(where, "a parser 'set' writes one field")
        src = params[1]
        if src.get("type") == "expression":
            _check_expr(src["value"], where + ".parameters[1].value", want="data")
        elif src.get("type") not in ("field", "hexstr", "lookahead"):
            raise FormError(where, f"a parser 'set' cannot read a '{src.get('type')}'")
    elif name == "verify":
        if len(params) != 2:
            raise FormError(where, "'verify' takes a condition and an error")
        _check_expr(params[0], where + ".parameters[0]", want="bool")
        _check_expr(params[1], where + ".parameters[1]", want="data")
    elif name == "advance":
        if len(params) != 1:
            raise FormError(where, "'advance' takes one amount")
        src = params[0]
        if src.get("type") == "expression":
            _check_expr(src["value"], where + ".parameters[0].value", want="data")
        elif src.get("type") not in ("field", "hexstr"):
            raise FormError(where, f"'advance' cannot take a '{src.get('type')}'")
    elif name == "primitive":
        if len(params) != 1:
            raise FormError(where, "a parser 'primitive' op wraps one primitive")
        _check_primitive(params[0], where + ".parameters[0]", 0, in_parser=True)
    else:
        raise FormError(where, f"parser op '{name}' is not one BMv2 implements")


def _field_widths(doc: dict) -> dict:
    types = {t["name"]: {f[0]: f[1] for f in t["fields"]} for t in doc.get("header_types", [])}
    out = {}
    for h in doc.get("headers", []):
        for fname, width in types.get(h["header_type"], {}).items():
            out[(h["name"], fname)] = width
        out[(h["name"], "$valid$")] = 1
    return out


def _check_table(table: dict, where: str, doc: dict) -> None:
    widths = _field_widths(doc)
    for k, key in enumerate(table.get("key", [])):
        mt = key.get("match_type")
        if mt not in ("exact", "lpm", "ternary", "range", "valid"):
            raise FormError(f"{where}.key[{k}]", f"BMv2 has no match type '{mt}'")
        target = tuple(key.get("target", ()))
        width = widths.get(target)
        if width is None:
            raise FormError(f"{where}.key[{k}]", f"unknown key field {list(target)}")
        mask = key.get("mask")
        if mask is not None and (len(mask) - 2) // 2 != (width + 7) // 8:
            raise FormError(f"{where}.key[{k}]", f"the mask {mask} must be as many bytes as the "
                                                 f"{width}-bit field")
    names = table.get("actions", [])
    if len(set(names)) != len(names):
        raise FormError(where, f"an action is listed twice: {names}")
    nexts = table.get("next_tables", {})
    if set(nexts) not in ({"__HIT__", "__MISS__"}, set(names)):
        raise FormError(where, "next_tables must name every action (or __HIT__ and __MISS__)")
    for e, entry in enumerate(table.get("entries", []) or []):
        for m, mk in enumerate(entry.get("match_key", [])):
            if mk.get("match_type") not in ("exact", "lpm", "ternary", "range", "valid"):
                raise FormError(f"{where}.entries[{e}].match_key[{m}]",
                                f"BMv2 has no match type '{mk.get('match_type')}'")


__all__ = ["FormError", "check_document", "kind", "operand", "as_data", "as_bool",
           "primitive_param", "parser_set_source", "parser_length"]
