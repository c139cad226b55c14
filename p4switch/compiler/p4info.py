"""Stage 6: P4Info, the controller's view of the program, with p4c's ids and names.

Ids follow p4c: the resource type in the top byte and, in the low 24 bits, the Jenkins
one-at-a-time hash of the fully qualified name (an `@id` annotation wins; a clash moves to the
next free value). Aliases are the shortest dot-separated suffix that is unique in the program.
"""

from __future__ import annotations

import re

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from . import ast as A

from .constfold import fold
from .p4info_order import ListingOrder
from .types import BOOL, ERROR, NEW_TYPES, BitT, EnumT, StructT, TupleT, bit_width, original_type

P = p4info_pb2.P4Ids
MATCH_TYPES = {"exact": p4info_pb2.MatchField.EXACT, "lpm": p4info_pb2.MatchField.LPM,
               "ternary": p4info_pb2.MatchField.TERNARY, "range": p4info_pb2.MatchField.RANGE,
               "optional": p4info_pb2.MatchField.OPTIONAL}
CONSUMED_ANNOTATIONS = {"name", "id", "hidden", "defaultonly", "tableonly", "brief",
                        "description", "field_list", "metadata", "alias"}


def jenkins_one_at_a_time(text: str) -> int:
    h = 0
    for byte in text.encode():
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


class IdAllocator:
    def __init__(self):
        self.used: set[int] = set()

    def allocate(self, prefix: int, name: str, annotations=()) -> int:
        ann = A.find_annotation(annotations, "id")
        if ann is not None and ann.args and isinstance(ann.args[0], A.Expr) and fold(ann.args[0]) is not None:
            value = fold(ann.args[0])
            pid = value if value >> 24 else (prefix << 24) | value
            self.used.add(pid)
            return pid
        low = jenkins_one_at_a_time(name) & 0xFFFFFF
        while (prefix << 24) | low in self.used:
            low = (low + 1) & 0xFFFFFF
        pid = (prefix << 24) | low
        self.used.add(pid)
        return pid


def control_plane_name(decl) -> str:
    """A parameter's or field's name for the controller: its @name if it has one."""
    name = A.name_annotation(getattr(decl, "annotations", None))
    return name if name is not None else decl.name


SELECTOR_ANNOTATIONS = ("max_group_size", "selector_size_semantics", "max_member_weight")


def field_ids(annotation_lists: list, reporter, where) -> list[int]:
    """Ids of match fields, action parameters or packet metadata fields, as p4c allocates
    them: an `@id(n)` is kept; the others, in order, take their position (1-based) or, if an
    `@id` took it, the next free number. `@id(0)` and an id used twice are refused."""
    given: dict[int, int] = {}
    for i, anns in enumerate(annotation_lists):
        ann = A.find_annotation(anns, "id")
        if ann is None:
            continue
        value = fold(ann.args[0]) if ann.args and isinstance(ann.args[0], A.Expr) else None
        if not isinstance(value, int) or isinstance(value, bool):
            raise reporter.error(ann.loc, "@id needs an integer")
        if value == 0:
            raise reporter.error(ann.loc, "0 is not a valid @id value")
        if value in given.values():
            raise reporter.error(ann.loc, f"@id {value} is used more than once here")
        given[i] = value
    used, ids, index = set(given.values()), [], 1
    for i in range(len(annotation_lists)):
        if i in given:
            ids.append(given[i])
            index += 1
            continue
        while index in used:
            index += 1
        ids.append(index)
        used.add(index)
    return ids


def set_doc(msg, annotations) -> None:
    """`doc` from `@brief("...")` and `@description("...")`, as p4c sets it."""
    for ann in annotations or ():
        if ann.name in ("brief", "description") and ann.args and \
                isinstance(ann.args[0], A.StrLit):
            setattr(msg.doc, ann.name, ann.args[0].value)


PKGINFO_KEYS = ("name", "version", "organization", "contact", "url", "arch")
PLATFORM_PROPERTIES = ("multicast_group_table_size", "multicast_group_table_total_replicas",
                       "multicast_group_table_max_replicas_per_entry")
_KEY_VALUE = re.compile(r'\s*(\w+)\s*=\s*("(?:\\.|[^"\\])*"|[^,]+?)\s*(?:,|$)', re.S)


def key_values(ann) -> list[tuple[str, str, object]]:
    """A key-value annotation's pairs (`@pkginfo(name = "x", version = "1")`), each value as
    written (a string with its quotes) and located at the annotation; ValueError if the body
    is not such pairs."""
    pairs, pos, raw = [], 0, ann.raw.strip()
    while pos < len(raw):
        m = _KEY_VALUE.match(raw, pos)
        if m is None:
            raise ValueError(f"@{ann.name} takes key = value pairs, separated by commas")
        pairs.append((m.group(1), m.group(2).strip(), ann.loc))
        pos = m.end()
    return pairs


def _unquote(text: str) -> str:
    return text[1:-1]


def annotation_texts(annotations, keep=()) -> list[str]:
    """Annotations as P4Info's text lists them: all but those p4c consumes (and `keep`s)."""
    out = []
    for a in annotations or ():
        if a.name in CONSUMED_ANNOTATIONS and a.name not in keep:
            continue
        out.append(f"@{a.name}({a.raw})" if a.raw or a.args else f"@{a.name}")
    return out


def canonical_bytes(value: int, width: int) -> bytes:
    """A value as p4c writes it in P4Info: big-endian over the whole bytes of its width."""
    return value.to_bytes(max(1, (width + 7) // 8), "big")


def is_hidden(decl) -> bool:
    return A.find_annotation(getattr(decl, "annotations", ()), "hidden") is not None


class P4InfoBuilder:
    def __init__(self, program, ctx, bmv2):
        self.program = program
        self.ctx = ctx
        self.bmv2 = bmv2
        self.ids = IdAllocator()
        self.info = p4info_pb2.P4Info()
        self.preambles: list = []
        self.line_order = getattr(ctx, "line_order", {})
        self.listing = ListingOrder(program, ctx, self.order)

    def order(self, decl):
        """Declaration order in the preprocessed program (includes first, as p4c lists)."""
        loc = decl.loc
        return (self.line_order.get((loc.file, loc.line), 0), loc.col)

    def preamble(self, msg, prefix: int, name: str, decl, exclude=()) -> int:
        anns = getattr(decl, "annotations", ()) if decl is not None else ()
        pid = self.ids.allocate(prefix, name, anns)
        msg.preamble.id = pid
        msg.preamble.name = name
        msg.preamble.annotations.extend(annotation_texts(a for a in anns if a.name not in exclude))
        set_doc(msg.preamble, anns)
        self.preambles.append(msg.preamble)
        return pid

    def build(self) -> p4info_pb2.P4Info:
        info = self.info
        self.pkg_info()
        self.action_ids = self.actions()
        self.extern_ids = {}
        self.profiles()
        self.counters_and_meters()
        self.tables()
        self.registers()
        self.controller_headers()
        self.value_sets()
        self.digests()
        if self.describes_types():
            info.type_info.SetInParent()
        self.aliases()
        return info

    def describes_types(self) -> bool:
        """Does p4c write `type_info` (empty or not)? It makes one whenever it converts a type
        for the controller: an action parameter, a match field list (any table), a packet
        metadata field, an extern instance, or an extern function called in a control."""
        info = self.info
        if info.HasField("type_info") or len(info.tables) or len(info.controller_packet_metadata):
            return True
        if any(len(a.params) for a in info.actions):
            return True
        if any(len(getattr(info, kind)) for kind in (
                "counters", "direct_counters", "meters", "direct_meters", "registers",
                "action_profiles", "digests", "value_sets")):
            return True
        bodies = [d.apply for d in self.program.decls if isinstance(d, A.ControlDecl)]
        bodies += [local for d in self.program.decls if isinstance(d, A.ControlDecl)
                   for local in d.locals
                   if isinstance(local, A.ActionDecl) and id(local) in self.used_actions]
        bodies += [d for d in self.program.decls
                   if isinstance(d, A.ActionDecl) and id(d) in self.used_actions]
        return any(isinstance(getattr(node, "callee", None), A.ExternFunctionDecl)
                   for body in bodies for node in A.walk(body))

    # ---- actions ----------------------------------------------------------------------------
    def actions(self) -> dict:
        used = {}
        for _, _, acts in self.ctx.built_tables:
            for decl, (_, name) in acts:
                used.setdefault(name, decl)
        for ref, _, _ in self.ctx.built_tables:
            implicit = getattr(ref.decl, "implicit_noaction", None)
            if implicit is not None:
                used.setdefault("NoAction", implicit)
        in_tables = set(used)
        for decl, name in getattr(self.ctx, "action_meta", {}).values():
            used.setdefault(name, decl)  # also called directly from an apply block, as p4c
        for decl, name in self.direct_action_calls():
            used.setdefault(name, decl)
        self.refuse_shared_action_names(used)
        self.used_actions = {id(decl) for decl in used.values()}
        ids = {}
        for name, decl in sorted(used.items(), key=lambda kv: self.listing.action_rank(*kv)):
            if is_hidden(decl):
                continue
            msg = self.info.actions.add()
            ids[name] = self.preamble(msg, P.ACTION, name, decl)
            # an action only called directly has its arguments bound at the call: p4c lists it
            # without parameters
            data = [p for p in decl.params if not p.direction] if name in in_tables else []
            ids_of = field_ids([p.annotations for p in data], self.ctx.reporter, decl)
            for p, param_id in zip(data, ids_of):
                param = msg.params.add()
                param.id = param_id
                param.name = control_plane_name(p)
                param.bitwidth = controller_width(p.type)
                self.type_name(param, p.type)
                param.annotations.extend(annotation_texts(p.annotations))
                set_doc(param, p.annotations)
        return ids

    def refuse_shared_action_names(self, used: dict) -> None:
        """Two different actions may not share a control-plane name (e.g. both
        `@name("._drop")`, in two controls): p4c refuses it, as a controller could not tell
        them apart."""
        seen = dict(used)
        for _, _, acts in self.ctx.built_tables:
            for decl, (_, name) in acts:
                first = seen.get(name)
                if first is not None and first is not decl and name != "NoAction" and \
                        not is_hidden(decl):
                    where = getattr(first, "loc", None)
                    raise self.ctx.checker.r.error(
                        decl.loc, f"action '{decl.name}' has the control-plane name '{name}', "
                                  f"as another action has"
                                  + (f" (line {where.line})" if where is not None else "")
                                  + ": p4c refuses it (give one a different @name)")

    def direct_action_calls(self):
        """Actions called directly from the apply block of one of main's controls (p4c lists
        them, though lowering may have inlined the call into straight-line code)."""
        main = next((d for d in self.program.decls
                     if isinstance(d, A.InstanceDecl) and d.name == "main"), None)
        names = {a.value.func.name for a in (main.args if main else ())
                 if isinstance(a.value, A.Call) and isinstance(a.value.func, A.Name)}
        for d in self.program.decls:
            if not (isinstance(d, A.ControlDecl) and d.name in names and d.apply is not None):
                continue
            for call in A.statement_calls(d.apply):
                act = getattr(call.func, "decl", None)
                if isinstance(act, A.ActionDecl):
                    prefix = "" if act not in d.locals else d.name
                    yield act, self.ctx.qualified(prefix, act)

    # ---- tables -----------------------------------------------------------------------------
    def tables(self) -> None:
        built = sorted(self.ctx.built_tables,
                       key=lambda b: self.listing.rank(b[0], b[0].decl))
        self.table_ids = {}
        for ref, table, _ in built:
            if is_hidden(ref.decl):
                continue
            self.table_ids[ref.name] = self.ids.allocate(P.TABLE, ref.name, ref.decl.annotations)
        self.ids.used -= set(self.table_ids.values())
        for ref, table, acts in built:
            if is_hidden(ref.decl):
                continue
            self.table(ref, table, acts)
        for ap in self.info.action_profiles:
            names = self.profile_tables.get(ap.preamble.name, [])
            ap.table_ids.extend(self.table_ids[n] for n in names if n in self.table_ids)

    def table(self, ref, table, acts) -> None:
        d = ref.decl
        msg = self.info.tables.add()
        self.preamble(msg, P.TABLE, ref.name, d)
        keys = [k for k in (d.props["key"].value if "key" in d.props else [])
                if k.match_kind != "selector"]
        key_ids = field_ids([k.annotations for k in keys], self.ctx.reporter, d)
        for k, jk, key_id in zip(keys, table["key"], key_ids):
            mf = msg.match_fields.add()
            mf.id = key_id
            mf.name = jk["name"]
            if isinstance(k.expr.type, EnumT) and k.expr.type.underlying is None:
                raise self.ctx.checker.r.error(
                    k.expr.loc, f"a table key of {k.expr.type.describe()} has no width P4Runtime "
                                "can name (p4c refuses it): give the enum an underlying type, "
                                "e.g. enum bit<8>")
            mf.bitwidth = controller_width(k.expr.type)
            self.type_name(mf, k.expr.type)
            mf.annotations.extend(annotation_texts(k.annotations, keep=("hidden",)))  # as p4c
            set_doc(mf, k.annotations)
            if k.match_kind in MATCH_TYPES:
                mf.match_type = MATCH_TYPES[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
        listed = {}
        for (decl, (_, name)), (_, aref) in zip(acts, d.action_decls):
            listed[name] = (decl, aref.annotations)
        implicit = getattr(d, "implicit_noaction", None)
        for name, (decl, anns) in listed.items():
            self.action_ref(msg, name, anns)
        if implicit is not None and "NoAction" not in listed:
            ar = msg.action_refs.add()
            ar.id = self.action_ids["NoAction"]
            ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
            ar.annotations.append("@defaultonly")
        default = d.props.get("default_action")
        if default is not None:
            call = default.value
            name_expr = call.func if isinstance(call, A.Call) else call
            act_name = [n for (decl, (_, n)) in acts if decl is name_expr.decl][0]
            act_id = self.action_ids[act_name]
            if default.const:
                msg.const_default_action_id = act_id
            msg.initial_default_action.action_id = act_id
            params = [p for p in name_expr.decl.params if not p.direction]
            args = call.args[-len(params):] if isinstance(call, A.Call) and params else []
            param_ids = field_ids([p.annotations for p in params], self.ctx.reporter,
                                  name_expr.decl)
            for p, a, param_id in zip(params, args, param_ids):
                arg = msg.initial_default_action.arguments.add()
                arg.param_id = param_id
                width = 1 if p.type == BOOL else bit_width(p.type)
                arg.value = canonical_bytes(int(fold(a.value)) & ((1 << width) - 1), width)
        elif implicit is not None:
            msg.initial_default_action.action_id = self.action_ids["NoAction"]
        impl = d.props.get("implementation")
        if impl is not None:
            pname = table.get("action_profile")
            if pname in self.extern_ids:
                msg.implementation_id = self.extern_ids[pname]
                self.profile_tables.setdefault(pname, []).append(ref.name)
        for attr in ("direct_counter", "direct_meter"):
            inst = getattr(d, attr, None)
            if inst is not None and inst.name in self.extern_ids:
                msg.direct_resource_ids.append(self.extern_ids[inst.name])
                self.direct_bindings[inst.name] = ref.name
        msg.size = getattr(d, "size_value", None) or 1024
        if table.get("support_timeout"):
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        if "entries" in d.props:
            if d.props["entries"].value:   # an empty list is no entries (p4c)
                msg.has_initial_entries = True
            if d.props["entries"].const:
                msg.is_const_table = True
        for dr in list(self.info.direct_counters) + list(self.info.direct_meters):
            if self.direct_bindings.get(dr.preamble.name) == ref.name:
                dr.direct_table_id = msg.preamble.id

    def pkg_info(self) -> None:
        """`pkg_info` from the main instance's annotations, as p4c fills it: `@pkginfo(key =
        "string", ...)` for name, version, organization, contact, url (and arch, which the
        compiler sets, with a warning); `@platform_property(key = int, ...)`; the others as
        the package's annotations."""
        pkg = self.info.pkg_info
        pkg.arch = "v1model"
        main = next((d for d in self.program.decls
                     if isinstance(d, A.InstanceDecl) and d.name == "main"), None)
        anns = getattr(main, "annotations", None) or []
        reporter = self.ctx.reporter
        for ann in anns:
            if ann.name in ("pkginfo", "platform_property"):
                try:
                    pairs = key_values(ann)
                except ValueError as exc:
                    raise reporter.error(ann.loc, str(exc)) from None
            if ann.name == "pkginfo":
                for key, value, where in pairs:
                    if key not in PKGINFO_KEYS:
                        reporter.warn(where, f"unknown key '{key}' in @pkginfo: ignored")
                        continue
                    if not (len(value) >= 2 and value[0] == value[-1] == '"'):
                        raise reporter.error(where, f"the value of '{key}' in @pkginfo must be "
                                                    "a string")
                    if key == "arch":
                        reporter.warn(where, "'arch' in @pkginfo is set by the compiler, not "
                                             "by the program (the program's value is used)")
                    setattr(pkg, key, _unquote(value))
            elif ann.name == "platform_property":
                for key, value, where in pairs:
                    if key not in PLATFORM_PROPERTIES:
                        reporter.warn(where, f"unknown key '{key}' in @platform_property: "
                                             "ignored")
                        continue
                    try:
                        number = int(value.replace("_", ""), 0)
                    except ValueError:
                        raise reporter.error(where, f"the value of '{key}' in "
                                                    "@platform_property must be an integer") \
                            from None
                    setattr(pkg.platform_properties, key, number)
        pkg.annotations.extend(annotation_texts(
            [a for a in anns if a.name not in ("pkginfo", "platform_property")]))
        set_doc(pkg, anns)

    def action_ref(self, msg, name: str, anns) -> None:
        ar = msg.action_refs.add()
        ar.id = self.action_ids[name]
        if A.find_annotation(anns, "defaultonly"):
            ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
        elif A.find_annotation(anns, "tableonly"):
            ar.scope = p4info_pb2.ActionRef.TABLE_ONLY
        ar.annotations.extend(f"@{a.name}" + (f"({a.raw})" if a.raw else "")
                              for a in anns if a.name not in ("name", "id"))

    # ---- externs ----------------------------------------------------------------------------
    def profiles(self) -> None:
        self.profile_tables: dict = {}
        self.direct_bindings: dict = {}
        profiles = {name: ("selector" in entry, entry["max_size"], inst)
                    for name, (entry, _, inst) in self.ctx.action_profiles.items()}
        for name, inst in self.ctx.extern_refs.items():   # declared, used by no table: p4c
            if inst.kind in ("action_profile", "action_selector") and name not in profiles:
                size = fold(inst.decl.args[1 if inst.kind == "action_selector" else 0].value)
                profiles[name] = (inst.kind == "action_selector", size, inst)
        for name, (with_selector, size, inst) in sorted(
                profiles.items(), key=lambda kv: self.listing.rank(kv[1][2], kv[1][2].decl)):
            msg = self.info.action_profiles.add()
            self.extern_ids[name] = self.preamble(msg, P.ACTION_PROFILE, name, inst.decl,
                                                  exclude=SELECTOR_ANNOTATIONS)
            msg.with_selector = with_selector
            msg.size = size
            self.selector_annotations(msg, inst.decl)

    def selector_annotations(self, msg, decl) -> None:
        """An action selector's `@max_group_size(n)`, `@selector_size_semantics("sum_of_weights"
        | "sum_of_members")` and `@max_member_weight(n)` (with sum_of_members) as fields, not
        annotations, as p4c writes them; on a profile without a selector they are ignored
        with a warning."""
        reporter = self.ctx.reporter
        for ann in (A.find_annotation(decl.annotations, n) for n in SELECTOR_ANNOTATIONS):
            if ann is None:
                continue
            if not msg.with_selector:
                reporter.warn(ann.loc, f"@{ann.name} on an action profile without a selector: "
                                       "ignored")
                continue
            value = ann.args[0] if len(ann.args) == 1 else None
            if ann.name == "selector_size_semantics":
                text = value.value.lower() if isinstance(value, A.StrLit) else None
                if text not in ("sum_of_weights", "sum_of_members"):
                    raise reporter.error(ann.loc, '@selector_size_semantics takes '
                                                  '"sum_of_weights" or "sum_of_members"')
                getattr(msg, text).SetInParent()
                continue
            number = fold(value) if isinstance(value, A.Expr) else None
            if not isinstance(number, int) or isinstance(number, bool):
                raise reporter.error(ann.loc, f"@{ann.name} takes an integer")
            if ann.name == "max_group_size":
                msg.max_group_size = number
            elif msg.HasField("sum_of_members"):
                msg.sum_of_members.max_member_weight = number
            else:
                reporter.warn(ann.loc, "@max_member_weight without "
                                       '@selector_size_semantics("sum_of_members"): ignored')

    def counters_and_meters(self) -> None:
        ext = self.ctx.externs
        units = {0: p4info_pb2.CounterSpec.PACKETS, 1: p4info_pb2.CounterSpec.BYTES,
                 2: p4info_pb2.CounterSpec.BOTH}
        decls = self.ctx_instances()
        for arr in sorted(ext.counter_arrays, key=lambda a: self.instance_rank(decls, a)):
            inst = decls[arr["name"]]
            kind = fold(inst.decl.args[-1].value)
            if arr["is_direct"]:
                msg = self.info.direct_counters.add()
            else:
                msg = self.info.counters.add()
                msg.size = arr["size"]
            pid = self.preamble(msg, P.DIRECT_COUNTER if arr["is_direct"] else P.COUNTER,
                                arr["name"], inst.decl)
            msg.spec.unit = units[kind]
            self.extern_ids[arr["name"]] = pid
        munits = {0: p4info_pb2.MeterSpec.PACKETS, 1: p4info_pb2.MeterSpec.BYTES}
        for arr in sorted(ext.meter_arrays, key=lambda a: self.instance_rank(decls, a)):
            inst = decls[arr["name"]]
            kind = fold(inst.decl.args[-1].value)
            if arr["is_direct"]:
                msg = self.info.direct_meters.add()
            else:
                msg = self.info.meters.add()
                msg.size = arr["size"]
            pid = self.preamble(msg, P.DIRECT_METER if arr["is_direct"] else P.METER,
                                arr["name"], inst.decl)
            msg.spec.unit = munits[kind]
            self.extern_ids[arr["name"]] = pid

    def instance_rank(self, decls: dict, array: dict) -> tuple:
        """Where p4c lists the extern instance of a JSON array (`decls`: name -> ExternRef)."""
        ref = decls[array["name"]]
        return self.listing.rank(ref, ref.decl)

    def ctx_instances(self) -> dict:
        return self.ctx.extern_refs

    def registers(self) -> None:
        decls = self.ctx_instances()
        for arr in sorted(self.ctx.externs.register_arrays,
                          key=lambda a: self.instance_rank(decls, a)):
            inst = decls[arr["name"]]
            msg = self.info.registers.add()
            self.preamble(msg, P.REGISTER, arr["name"], inst.decl)
            args = getattr(getattr(inst.decl, "type", None), "type_args", ())
            if args:
                self.type_spec(msg.type_spec, args[0])
            else:
                msg.type_spec.bitstring.bit.bitwidth = arr["bitwidth"]
            msg.size = arr["size"]

    def controller_headers(self) -> None:
        seen = set()
        for d in self.ctx.program.decls:
            if not (isinstance(d, A.StructLikeDecl) and d.kind == "header"):
                continue
            ann = A.find_annotation(d.annotations, "controller_header")
            if ann is None or not ann.args:
                continue
            name = ann.args[0].value if isinstance(ann.args[0], A.StrLit) else str(ann.args[0])
            if name in seen:
                continue
            seen.add(name)
            msg = self.info.controller_packet_metadata.add()
            pid = self.ids.allocate(P.CONTROLLER_HEADER, d.name, ())  # p4c hashes the type
            msg.preamble.id = pid
            msg.preamble.name = name
            msg.preamble.annotations.append(f"@controller_header({ann.raw})")
            self.preambles.append(msg.preamble)
            t = self.ctx.checker.decl_type(d)
            metadata_ids = field_ids([fanns for _, _, fanns in t.fields], self.ctx.reporter, d)
            # a struct inside the header: its leaves by their paths (`b.b`), as p4c names them
            dotted = {flat: ".".join(path) for path, flat in getattr(t, "flat", {}).items()}
            for (fname, ft, fanns), field_id in zip(t.fields, metadata_ids):
                m = msg.metadata.add()
                m.id = field_id
                m.name = dotted.get(fname, fname)
                m.bitwidth = controller_width(ft)
                self.type_name(m, ft)
                m.annotations.extend(annotation_texts(fanns))
                set_doc(m, fanns)

    def value_sets(self) -> None:
        for vs in self.ctx.value_sets:
            decl = vs["decl"]
            msg = self.info.value_sets.add()
            self.preamble(msg, P.VALUE_SET, vs["p4info_name"], decl)
            t = decl.type
            fields = t.fields if isinstance(t, StructT) else [(vs["name"], t, [])]
            for i, (fname, ft, fanns) in enumerate(fields):
                mf = msg.match.add()
                mf.id = i + 1
                mf.name = fname if isinstance(t, StructT) else ""
                mf.bitwidth = bit_width(ft)
                match = A.find_annotation(fanns, "match")   # @match(ternary) on a field
                kind = str(match.args[0].name if isinstance(match.args[0], A.Name)
                           else match.args[0]) if match is not None and match.args else "exact"
                if kind in MATCH_TYPES:
                    mf.match_type = MATCH_TYPES[kind]
                else:
                    mf.other_match_type = kind
            msg.size = decl.size_value

    def digests(self) -> None:
        # p4c lists digests in the order of their calls in the program; the lowering meets
        # the calls in a branch after the straight-line code around it, so the source order
        # decides (where the calls are all in one file)
        calls = list(self.ctx.digests)
        places = [getattr(data, "loc", None) for _, _, data in calls]
        if all(place is not None for place in places) and len({p.file for p in places}) == 1:
            calls.sort(key=lambda call: (call[2].loc.line, call[2].loc.col))
        for name, t, _ in calls:
            msg = self.info.digests.add()
            self.preamble(msg, P.DIGEST, name, getattr(t, "decl", None))
            if isinstance(t, TupleT):   # as p4c: the members' specs in place
                for item in t.items:
                    self.type_spec(msg.type_spec.tuple.members.add(), item)
            else:
                self.type_spec(msg.type_spec, t)

    def struct_info(self, name: str, t: StructT) -> None:
        """type_info.structs[name]: each member's type spec (a struct inside by its name)."""
        if name in self.info.type_info.structs:
            return
        st = self.info.type_info.structs[name]
        for fname, ft, _ in t.fields:
            member = st.members.add()
            member.name = fname
            self.type_spec(member.type_spec, ft)

    def header_info(self, t: StructT) -> None:
        """type_info.headers[name]: each field's bits (int<W> as signed)."""
        if t.name in self.info.type_info.headers:
            return
        hd = self.info.type_info.headers[t.name]
        for fname, ft, _ in t.fields:
            member = hd.members.add()
            member.name = fname
            if isinstance(ft, BitT) and ft.signed:
                member.type_spec.int.bitwidth = ft.width
            else:
                member.type_spec.bit.bitwidth = bit_width(ft)

    def type_spec(self, spec, t) -> None:
        """A P4DataTypeSpec for a register's or a digest field's type: a type made by `type`,
        an enum or the error type by name (described in type_info), a bool, or bits (int<W>
        as signed), as p4c."""
        if isinstance(t, NEW_TYPES):
            spec.new_type.name = t.name
            self.new_type_info(t)
        elif isinstance(t, EnumT) and t.underlying is not None:
            spec.serializable_enum.name = t.name
            self.serializable_enum_info(t)
        elif isinstance(t, StructT) and t.kind == "struct":
            spec.struct.name = t.name
            self.struct_info(t.name, t)
        elif isinstance(t, StructT) and t.kind == "header":
            spec.header.name = t.name
            self.header_info(t)
        elif isinstance(t, EnumT):   # an enum without a width: by name, its members listed
            spec.enum.name = t.name
            if t.name not in self.info.type_info.enums:
                desc = self.info.type_info.enums[t.name]
                for name in t.members:
                    desc.members.add().name = name
        elif t == ERROR:             # the error type: every error, in declaration order
            spec.error.SetInParent()
            if not self.info.type_info.HasField("error"):
                self.info.type_info.error.members.extend(self.ctx.checker.errors)
        elif t == BOOL:
            spec.bool.SetInParent()
        elif isinstance(t, BitT) and t.signed:
            spec.bitstring.int.bitwidth = t.width
        else:
            spec.bitstring.bit.bitwidth = bit_width(t)

    def new_type_info(self, t) -> None:
        """type_info.new_types for a type made by `type`: what the controller sees, either the
        translated type of its @p4runtime_translation or the bit<>/int<>/bool it renames."""
        if t.name in self.info.type_info.new_types:
            return
        desc = self.info.type_info.new_types[t.name]
        desc.annotations.extend(annotation_texts(
            a for a in t.annotations if a.name != "p4runtime_translation"))
        if t.translation:
            uri, sdn = t.translation
            desc.translated_type.uri = uri
            if sdn == "string":
                desc.translated_type.sdn_string.SetInParent()
            else:
                desc.translated_type.sdn_bitwidth = sdn
            return
        base = original_type(t)
        if base == BOOL:
            desc.original_type.bool.SetInParent()
        elif base.signed:
            desc.original_type.bitstring.int.bitwidth = base.width
        else:
            desc.original_type.bitstring.bit.bitwidth = base.width

    def type_name(self, msg, t) -> None:
        """A named type in a P4Info-visible place: a type made by `type` is named (type_name)
        and described in type_info; a serializable enum is described there only (p4c 1.2.5
        does not name it with `type_name` at the place itself)."""
        if isinstance(t, NEW_TYPES):
            msg.type_name.name = t.name
            self.new_type_info(t)
            return
        if isinstance(t, EnumT) and t.underlying is not None:
            self.serializable_enum_info(t)

    def serializable_enum_info(self, t: EnumT) -> None:
        """type_info.serializable_enums for a serializable enum: its width and members."""
        if t.name in self.info.type_info.serializable_enums:
            return
        desc = self.info.type_info.serializable_enums[t.name]
        desc.underlying_type.bitwidth = t.underlying.width
        for name, value in t.members.items():
            member = desc.members.add()
            member.name = name
            member.value = canonical_bytes(value, t.underlying.width)

    # ---- aliases ----------------------------------------------------------------------------
    def aliases(self) -> None:
        names = [p.name for p in self.preambles]
        suffix_count: dict[str, int] = {}
        for n in set(names):
            parts = n.split(".")
            for i in range(len(parts)):
                s = ".".join(parts[i:])
                suffix_count[s] = suffix_count.get(s, 0) + 1
        for p in self.preambles:
            parts = p.name.split(".")
            alias = p.name
            for i in range(len(parts) - 1, -1, -1):
                s = ".".join(parts[i:])
                if suffix_count.get(s) == 1:
                    alias = s
                    break
            p.alias = alias


def build_p4info(program, ctx, bmv2) -> p4info_pb2.P4Info:
    return P4InfoBuilder(program, ctx, bmv2).build()


def p4info_to_text(info) -> str:
    header = ("# proto-file: p4/config/v1/p4info.proto\n"
              "# proto-message: p4.config.v1.P4Info\n\n")
    # non-ASCII escaped as octal bytes, as p4c writes it (newer protobufs default to UTF-8)
    return header + text_format.MessageToString(info, as_utf8=False)


__all__ = ["build_p4info", "p4info_to_text", "jenkins_one_at_a_time"]


def controller_width(t) -> int:
    """The width the controller uses for a value of type t: a translated type's SDN width
    (0 for a string), else the data plane's."""
    translation = getattr(t, "translation", ())
    if translation:
        return 0 if translation[1] == "string" else translation[1]
    return 1 if t == BOOL else bit_width(t)
