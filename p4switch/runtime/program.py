"""Loading a BMv2 JSON program: build its state objects once and generate its packet code.

`Program(doc)` validates the document while building the PHV layout, the stateful externs, the
tables (with the program's const and default entries), action profiles and calculations, then
generates Python source for the parser, both controls and the deparser and compiles it with
`compile()`. The traced variant is generated only when a trace is attached. Control-plane state is
shared by both variants: generated code refers to the live objects.
"""

from __future__ import annotations

import dataclasses
import time
import types
from dataclasses import dataclass, field
from typing import Callable

from .cgen import nativebuild
from .cgen.nativemodule import NativeControls, generate as generate_native
from .config import MAX_ARRAY_SIZE, MAX_WIDTH, Node, load_bmv2_json
from .errors import AssertionFailure, ConfigError, P4SwitchError
from .keys import ExactKey, LpmKey, OptionalKey, RangeKey, TernaryKey
from .learning import LearnList, read_learn_lists
from .phv import layout as L
from .phv.vheaders import VH_HELPERS, all_runs, candidate_runs, only_sanctioned
from .phv.writes import WriteSet, code_writes, union
from .pygen.calcgen import compile_calculation
from .pygen.controlgen import ActionDef, ControlCompiler
from .pygen.deparsergen import (compile_deparser, compile_replica_deparser, deparse_order,
                                serialize_varbit)
from .pygen.exprgen import EXPR_HELPERS, CodeScope
from .pygen.lanes import bank_registers
from .pygen.parsergen import (ParserCompiler, ParserError, error_code, make_extract_varbit,
                              make_lookahead, peek_padded)
from .pygen.primgen import PRIM_HELPERS
from .share import codeshare
from .state.externs import CounterArray, MeterArray, ParseValueSet, RegisterArray
from .state.hashes import bits_to_bytes, standard_algorithms
from .state.profiles import ActionProfile
from .state.regbanks import RegisterBank, bank_scalar_registers
from .state.tables import BMV2_PRIORITY_PIVOT, ActionSpec, KeyField, Table, priority_from_bmv2

MATCH_TYPES = ("exact", "lpm", "ternary", "range", "optional", "valid")


@dataclass
class PacketCode:
    """The compiled functions of one variant (traced or not) and their globals."""

    parse: Callable
    ingress: Callable
    egress: Callable
    deparse: Callable
    namespace: dict
    source: str
    deparse_replica: Callable | None = None  # see compile_replica_deparser
    replica_memo_size: int = 0
    writes_after_ingress: WriteSet = field(default_factory=lambda: WriteSet(anything=True))
    writes_anywhere: WriteSet = field(default_factory=lambda: WriteSet(anything=True))
    code: types.CodeType | None = None   # the module code (codeshare.py runs it again)
    native: NativeControls | None = None  # the controls as C (nativegen.py), when asked for
    native_in_use: tuple[str, ...] = ()   # the controls that run as C in this program
    native_fast: Callable | None = None   # `fast(plan, port, data)` in C (cgen/nativefast.py)


def with_native(code: PacketCode) -> PacketCode:
    """`code` with its controls replaced by their C versions, where there are any and they
    build (nativebuild.py); otherwise `code` as it is."""
    if code.native is None:
        return code
    module = nativebuild.load(code.native)
    if module is None:
        return code
    bound = nativebuild.bind(module, code.native, code.namespace)
    deparse = bound.get("deparse")
    return dataclasses.replace(code, parse=bound.get("parse", code.parse),
                               deparse=deparse or code.deparse,
                               deparse_replica=code.deparse_replica
                               if deparse is None or code.deparse_replica is None else deparse,
                               ingress=bound.get("ingress", code.ingress),
                               egress=bound.get("egress", code.egress),
                               native_in_use=tuple(bound),
                               native_fast=nativebuild.bind_fast(module, code.native,
                                                                 code.namespace)
                               if len(bound) == 4 else None)


@dataclass(frozen=True)
class TableSpec:
    """A table as the JSON describes it, read and checked once (`Program._table_spec`); every
    program built from the same JSON makes its own table from it (`Program._make_table`)."""

    name: str
    key_fields: tuple[KeyField, ...]        # copied per table: Table sets their shifts
    actions: tuple[ActionSpec, ...]
    max_size: int
    kind: str
    base_default_next: str | None
    with_counters: bool
    direct_meters: str | None
    profile: str | None                     # indirect tables: their action profile
    default: tuple | None                   # (action index, params, const, entry const)
    entries: tuple | None                   # const entries: (keys, priority, index, params)
    support_timeout: bool = False           # entries age: each remembers its last hit


@dataclass(frozen=True)
class StateSpec:
    """Every state object of a program as read from its JSON: what a further program of the
    same JSON is made from without walking the JSON again (codeshare.Template.state)."""

    registers: tuple[tuple[str, int, int], ...]
    counters: tuple[tuple[str, int, str | None], ...]
    meters: tuple[tuple, ...]               # MeterArray's arguments
    vsets: tuple[tuple[str, int, int | None], ...]
    field_lists: tuple[tuple[int, tuple[int, ...]], ...]
    pipelines: tuple[tuple[tuple[tuple[str, int], ...], tuple[TableSpec, ...]], ...]


class Program:
    """A loaded program: its state objects and its generated packet code.

    With `share` (the default) a JSON text is translated once per content (codeshare.py): the
    program builds its own state from the JSON and binds the code generated for a private
    template program to it, instead of generating and compiling the same code again."""

    def __init__(self, source: str | bytes | dict, share: bool = True):
        shareable = codeshare.content_key(source) if share else None
        if shareable is not None:
            key, text = shareable
            template = codeshare.template_for(key, lambda: Program(text, share=False))
            if template is not None:
                try:
                    self._bind(template)
                    return
                except codeshare.Unshareable as why:
                    codeshare.forget(key, str(why))
        self._translate(load_bmv2_json(source))

    def _translate(self, doc: dict) -> None:
        """Build the state from the JSON and generate the packet code for it."""
        root = self._start(doc)
        self.layout = L.build_layout(root)
        for required in ("ingress_port", "egress_spec"):
            if self.layout.std(required) is None:
                raise ConfigError("headers", f"simple_switch needs standard_metadata.{required}")
        self.algorithms = standard_algorithms()
        self._build_externs(root)
        self.learn_lists = read_learn_lists(root, self.layout)
        self._build_actions(root)
        self._build_custom_crcs(root)
        lane_runs = bank_registers(self.actions.values(), self.registers, self.layout)
        bank_scalar_registers(self.registers)
        read_whole = {**self.field_lists,   # lists of fields read one by one: no lane vectors
                      **{f"learn {i}": ll.slots for i, ll in self.learn_lists.items()}}
        self.vector_runs = candidate_runs(lane_runs, self.layout, read_whole)
        for pipeline in root.get("pipelines").items():
            self._build_pipeline(pipeline)
        names = [p.get("name").value for p in root.get("pipelines").items()]
        for pipeline_name in ("ingress", "egress"):
            if pipeline_name not in names:
                raise ConfigError("pipelines", f"no '{pipeline_name}' pipeline")
        self.untraced = self.generate(traced=False)
        if self.vector_runs and not only_sanctioned(self.untraced.source, self.vector_runs):
            self.vector_runs = {}   # some code reads a run's fields one by one: no arrays
            self.untraced = self.generate(traced=False)

    def _bind(self, template: codeshare.Template) -> None:
        """Build this program's own state from the template's JSON and bind the template's
        code to it (the layout, actions and analysis results are read-only and shared)."""
        shared = template.program
        root = self._start(shared.doc)
        self.layout = shared.layout
        self.algorithms = shared.algorithms     # the reconfigurable CRCs are per program
        spec = template.state       # read from the JSON by the first program bound, if any
        in_banks = {name for names in template.banks for name in names}
        externs = self._make_externs(spec if spec is not None else self._extern_specs(root),
                                     in_banks)
        self.actions = shared.actions
        self.learn_lists = shared.learn_lists
        self._build_custom_crcs(root)
        for names in template.banks:
            banked = [self.registers[name] for name in names]
            for register in banked:     # fresh, all zero as the bank's new array is: an empty
                register.cells = ()     # sequence spares scanning ~0.5 M zeros per switch
            RegisterBank(banked, shared.registers[names[0]].cells.array.dtype)
        self.vector_runs = shared.vector_runs
        if spec is not None:
            for profiles, tables in spec.pipelines:
                self._make_pipeline(profiles, tables)
        else:
            pipelines = tuple(self._build_pipeline(p) for p in root.get("pipelines").items())
            template.state = StateSpec(*externs, pipelines)
        namespace = codeshare.bind_namespace(template, codeshare.pair_template(template, self))
        for profile, fn in template.selectors:
            self.profiles[profile].selector = namespace[fn]
        code = shared.untraced
        self.untraced = with_native(PacketCode(
            namespace["parse"], namespace["ingress"], namespace["egress"], namespace["deparse"],
            namespace, code.source, namespace.get("deparse_replica"), code.replica_memo_size,
            code.writes_after_ingress, code.writes_anywhere, code.code, code.native))

    def _start(self, doc: dict) -> Node:
        self.doc = doc
        root = Node(doc, "")
        self.root = root
        self.clock: Callable[[], float] = time.monotonic
        self.clock_origin = self.clock()
        self.registers: dict[str, RegisterArray] = {}
        self.counters: dict[str, CounterArray] = {}
        self.meters: dict[str, MeterArray] = {}
        self.vsets: dict[str, ParseValueSet] = {}
        self.field_lists: dict[int, list[int]] = {}
        self.learn_lists: dict[int, LearnList] = {}
        self.actions: dict[int, ActionDef] = {}
        self.tables: dict[str, Table] = {}
        self.profiles: dict[str, ActionProfile] = {}
        self.custom_crcs: dict = {}  # calculation name -> its own Crc (crc16/32_custom)
        self._traced: PacketCode | None = None
        return root

    def now_us(self) -> float:
        return (self.clock() - self.clock_origin) * 1e6

    def now(self) -> float:
        """The switch's clock in seconds (ageing tables stamp their hits with it)."""
        return self.clock()

    def traced(self) -> PacketCode:
        if self._traced is None:
            self._traced = self.generate(traced=True)
        return self._traced

    # ------------------------------------------------------------------------- state objects
    def _build_externs(self, root: Node) -> None:
        self._make_externs(self._extern_specs(root))

    def _extern_specs(self, root: Node) -> tuple:
        """(registers, counters, meters, value sets, field lists) of StateSpec, from the JSON."""
        registers = tuple((node["name"].str(), node["size"].int(0, MAX_ARRAY_SIZE),
                           node["bitwidth"].int(1, MAX_WIDTH))
                          for node in root.get("register_arrays").items())
        counters = []
        for node in root.get("counter_arrays").items():
            direct = node.get("is_direct", False).bool()
            binding = node["binding"].str() if direct else None
            size = node["size"].int(0, MAX_ARRAY_SIZE) if node.has("size") else 0
            counters.append((node["name"].str(), size, binding))
        meters = []
        for node in root.get("meter_arrays").items():
            direct = node.get("is_direct", False).bool()
            unit = node.get("type", "bytes").str()
            if unit not in ("bytes", "packets"):
                raise node["type"].error(f"meter type must be bytes or packets, not '{unit}'")
            result_slot = None
            if direct and node.has("result_target"):
                target = node["result_target"]
                result_slot = self.layout.field(target[0].str(), target[1].str(), target).slot
            size = node["size"].int(0, MAX_ARRAY_SIZE) if node.has("size") else 0
            meters.append((node["name"].str(), 0 if direct else size, unit,
                           node.get("rate_count", 2).int(1, 8),
                           node["binding"].str() if direct else None, result_slot))
        vsets = []
        for node in root.get("parse_vsets").items():
            max_size = node["max_size"].int() if node.has("max_size") else None
            vsets.append((node["name"].str(), node["compressed_bitwidth"].int(0, MAX_WIDTH),
                          max_size))
        field_lists = []
        for node in root.get("field_lists").items():
            slots = []
            for element in node.get("elements").items():
                kind, value = element.type_value()
                if kind != "field":
                    raise element.error(f"field list elements must be fields, not '{kind}'")
                ref = self.layout.field(value[0].str(), value[1].str(), value)
                if ref.slot is not None:
                    slots.append(ref.slot)
            field_lists.append((node["id"].int(), tuple(slots)))
        return registers, tuple(counters), tuple(meters), tuple(vsets), tuple(field_lists)

    def _make_externs(self, spec, in_banks: set[str] = frozenset()) -> tuple:
        """This program's own registers, counters, meters, value sets and field lists from
        `spec` (a StateSpec or `_extern_specs`' tuple); returns the tuple form. Registers
        named in `in_banks` get no cells of their own: a bank gives them theirs (ina.p4: 260
        registers of 2048 cells per switch, allocated and dropped)."""
        if isinstance(spec, StateSpec):
            spec = (spec.registers, spec.counters, spec.meters, spec.vsets, spec.field_lists)
        registers, counters, meters, vsets, field_lists = spec
        for name, size, bitwidth in registers:
            if name in in_banks:
                register = RegisterArray(name, 0, bitwidth)
                register.size = size
            else:
                register = RegisterArray(name, size, bitwidth)
            self.registers[name] = register
        for name, size, binding in counters:
            self.counters[name] = CounterArray(name, size, binding)
        for args in meters:
            self.meters[args[0]] = MeterArray(*args)
        for args in vsets:
            self.vsets[args[0]] = ParseValueSet(*args)
        for list_id, slots in field_lists:
            self.field_lists[list_id] = list(slots)
        return spec

    def _build_custom_crcs(self, root: Node) -> None:
        """Each calculation on a reconfigurable CRC owns a copy (set_crc*_parameters changes
        one alone), made here with the state so that a bound program gets its own. Malformed
        entries are left to the code generator, which reports them."""
        def dicts(value) -> list[dict]:
            return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []
        named = [(c, c.get("name")) for c in dicts(self.doc.get("calculations"))]
        for pipeline in dicts(self.doc.get("pipelines")):
            for profile in dicts(pipeline.get("action_profiles")):
                if isinstance(profile.get("selector"), dict):
                    named.append((profile["selector"], f"{profile.get('name')}$selector"))
        for calc, name in named:
            algo = calc.get("algo")
            if isinstance(name, str) and isinstance(algo, str) and algo.endswith("_custom") \
                    and algo in self.algorithms and name not in self.custom_crcs:
                self.custom_crcs[name] = self.algorithms[algo].copy()

    def _build_actions(self, root: Node) -> None:
        for node in root.get("actions").items():
            aid = node["id"].int()
            if aid in self.actions:
                raise node["id"].error(f"duplicate action id {aid}")
            widths = [p["bitwidth"].int(0, MAX_WIDTH) for p in node.get("runtime_data").items()]
            self.actions[aid] = ActionDef(node, node["name"].str(), aid, widths)

    def _build_pipeline(self, pipeline: Node) -> tuple:
        """Make the pipeline's action profiles and tables from the JSON; returns what
        `_make_pipeline` makes them from: (profiles, table specs)."""
        profiles = tuple((node["name"].str(), node.get("max_size", 1024).int())
                         for node in pipeline.get("action_profiles").items())
        self._make_pipeline(profiles, ())
        specs = []
        for node in pipeline.get("tables").items():
            name = node["name"].str()
            if name in self.tables:
                raise node["name"].error(f"duplicate table name '{name}'")
            spec = self._table_spec(node)
            self.tables[name] = self._make_table(spec, node)
            specs.append(spec)
        return profiles, tuple(specs)

    def _make_pipeline(self, profiles, tables) -> None:
        for name, max_size in profiles:
            self.profiles[name] = ActionProfile(name, max_size)
        for spec in tables:
            self.tables[spec.name] = self._make_table(spec)

    @property
    def table_nodes(self) -> dict[str, Node]:
        """Each table's node of the JSON, by name."""
        return {node["name"].str(): node for pipeline in self.root.get("pipelines").items()
                for node in pipeline.get("tables").items()}

    def _build_table(self, node: Node) -> Table:
        return self._make_table(self._table_spec(node), node)

    def _table_spec(self, node: Node) -> TableSpec:
        """A table of the JSON, read and checked (everything but its const entries' keys
        against the table, which `_make_table` checks)."""
        name = node["name"].str()
        key_fields = []
        for knode in node.get("key").items():
            match_type = knode["match_type"].str()
            if match_type not in MATCH_TYPES:
                raise knode["match_type"].error(f"unknown match type '{match_type}'")
            target = knode["target"]
            if match_type == "valid":
                self.layout.header(target.str(), target)
                width, default_name = 1, f"{target.str()}.$valid$"
            else:
                ref = self.layout.field(target[0].str(), target[1].str(), target)
                if ref.width is None:
                    raise target.error("cannot match on a variable-length field")
                width, default_name = ref.width, f"{target[0].str()}.{target[1].str()}"
            key_name = knode["name"].str() if knode.has("name") else default_name
            key_fields.append(KeyField(key_name, match_type, width))
        actions = []
        for id_node in node.get("action_ids").items():
            action = self.actions.get(id_node.int())
            if action is None:
                raise id_node.error(f"unknown action id {id_node.int()}")
            actions.append(ActionSpec(action.name, action.action_id, action.param_widths))
        types = [k.match_type for k in key_fields]
        if not key_fields:
            kind = "keyless"
        elif all(t in ("exact", "valid") for t in types):
            kind = "exact"
        elif types.count("lpm") == 1 and all(t in ("exact", "valid", "lpm") for t in types):
            kind = "lpm"
        else:
            kind = "generic"
        with_counters = bool(node.get("with_counters", False).value) or any(
            c.direct_table == name for c in self.counters.values())
        meter_name = node.get("direct_meters").opt_str()
        if meter_name is not None and meter_name not in self.meters:
            raise node["direct_meters"].error(f"unknown meter array '{meter_name}'")
        table_type = node.get("type", "simple").str()
        profile_name = None
        if table_type in ("indirect", "indirect_ws"):
            profile_name = node["action_profile"].str()
            if profile_name not in self.profiles:
                raise node["action_profile"].error(f"unknown action profile '{profile_name}'")
        elif table_type != "simple":
            raise node["type"].error(f"unknown table type '{table_type}'")
        by_id = {a.action_id: i for i, a in enumerate(actions)}
        default = None
        if node.has("default_entry"):
            default = self._default_spec(actions, by_id, profile_name, node["default_entry"])
        entries = None
        if node.has("entries"):
            entries = self._entry_specs(key_fields, actions, by_id, node["entries"])
        return TableSpec(name, tuple(key_fields), tuple(actions),
                         node.get("max_size", 1024).int(), kind,
                         node.get("base_default_next").opt_str(), with_counters, meter_name,
                         profile_name, default, entries,
                         bool(node.get("support_timeout", False).value))

    def _make_table(self, spec: TableSpec, node: Node | None = None) -> Table:
        """This program's own table from `spec`; `node` (the table's JSON) names the entry
        a const entry the table refuses came from."""
        key_fields = [KeyField(k.name, k.match_type, k.width) for k in spec.key_fields]
        table = Table(spec.name, key_fields, list(spec.actions), spec.max_size, spec.kind)
        table.base_default_next = spec.base_default_next
        table.with_counters = spec.with_counters
        table.support_timeout = spec.support_timeout
        if spec.direct_meters is not None:
            table.direct_meters = self.meters[spec.direct_meters]
        if spec.profile is not None:
            table.profile = self.profiles[spec.profile]
            table.profile.tables.append(table)
        if spec.default is not None:
            index, params, const, entry_const = spec.default
            table.initial_default = (index, params)
            table.default_const = const
            table.default_entry_const = entry_const
            table.reset_default()
        if spec.entries is not None:
            for number, (keys, priority, index, params) in enumerate(spec.entries):
                try:
                    entry = table.make_entry(keys, priority)
                    entry.action_index = index
                    entry.params = table.check_action(index, params)
                    table.insert(entry, from_program=True)
                except P4SwitchError as exc:
                    if node is None:
                        raise
                    raise node["entries"][number].error(str(exc)) from None
            table.const = True
        return table

    @staticmethod
    def _default_spec(actions, by_id, profile: str | None, node: Node) -> tuple | None:
        """(action index, params, const, entry const) of a table's initial default, or None
        (an indirect table's default names no action of its own)."""
        aid = node["action_id"].int()
        index = by_id.get(aid)
        if index is None:
            if profile is not None:
                return None
            raise node["action_id"].error(f"action id {aid} is not one of the table's actions")
        widths = actions[index].param_widths
        data = [d.hexstr() for d in node.get("action_data").items()]
        if len(data) != len(widths):
            raise node.get("action_data").error(f"action takes {len(widths)} parameters, "
                                                f"got {len(data)}")
        params = tuple(x & ((1 << w) - 1) for x, w in zip(data, widths))
        return (index, params, bool(node.get("action_const", False).value),
                bool(node.get("action_entry_const", False).value))

    def _entry_specs(self, key_fields, actions, by_id, entries: Node) -> tuple:
        """The const entries: (keys, priority, action index, params) each."""
        needs_priority = any(k.match_type in ("ternary", "range", "optional")
                             for k in key_fields)
        specs = []
        for enode in entries.items():
            keys = []
            for i, mnode in enumerate(enode["match_key"].items()):
                if i >= len(key_fields):
                    raise mnode.error("more match fields than the table has keys")
                keys.append(self._json_key(key_fields[i], mnode))
            priority = None
            if needs_priority:
                # BMv2 JSON: lower number wins; API (P4Runtime): higher wins (tables.py). An entry
                # without one ranks after every entry that has one.
                priority = 1
                if enode.has("priority"):
                    priority = priority_from_bmv2(
                        enode["priority"].int(0, BMV2_PRIORITY_PIVOT - 1))
            action = enode["action_entry"]
            aid = action["action_id"].int()
            index = by_id.get(aid)
            if index is None:
                raise action["action_id"].error(f"action id {aid} is not one of the table's "
                                                "actions")
            widths = actions[index].param_widths
            data = [d.hexstr() for d in action.get("action_data").items()]
            params = tuple(x & ((1 << w) - 1) for x, w in zip(data, widths)) \
                if len(data) == len(widths) else tuple(data)
            specs.append((tuple(keys), priority, index, params))
        return tuple(specs)

    @staticmethod
    def _json_key(kf: KeyField, node: Node):
        match_type = node["match_type"].str()
        full = (1 << kf.width) - 1
        if match_type == "valid":
            return ExactKey(int(node["key"].bool()))
        if match_type == "exact":
            return ExactKey(node["key"].hexstr() & full)
        if match_type == "lpm":
            return LpmKey(node["key"].hexstr() & full, node["prefix_length"].int())
        if match_type == "ternary":
            return TernaryKey(node["key"].hexstr() & full, node["mask"].hexstr() & full)
        if match_type == "range":
            return RangeKey(node["start"].hexstr() & full, node["end"].hexstr() & full)
        if match_type == "optional":
            mask = node["mask"].hexstr() if node.has("mask") else full
            return OptionalKey(node["key"].hexstr() & full if mask else None)
        raise node["match_type"].error(f"unknown match type '{match_type}'")

    # ------------------------------------------------------------------------- code generation
    def generate(self, traced: bool) -> PacketCode:
        too_short = error_code(CodeScope(self.layout, {}), "PacketTooShort")
        header_too_short = error_code(CodeScope(self.layout, {}), "HeaderTooShort")
        invalid_argument = error_code(CodeScope(self.layout, {}), "ParserInvalidArgument")
        namespace = {
            **EXPR_HELPERS, **PRIM_HELPERS,
            "__builtins__": __builtins__,
            "__registers__": self.registers, "__counters__": self.counters,
            "__meters__": self.meters, "__vsets__": self.vsets,
            "__field_lists__": self.field_lists, "__calculations__": {},
            "__learn_lists__": self.learn_lists,
            "__custom_crcs__": self.custom_crcs,
            "_ParserError": ParserError, "_AssertionFailure": AssertionFailure,
            "_now_us": self.now_us, "_now": self.now, "_lookahead": make_lookahead(too_short),
            "_peek_padded": peek_padded,
            "_extract_varbit": make_extract_varbit(too_short, header_too_short,
                                                   invalid_argument),
            "_bits_to_bytes": bits_to_bytes, "_serialize_varbit": serialize_varbit,
            "T": None,
        }
        if not traced and self.vector_runs:
            namespace.update(VH_HELPERS)
            namespace["__vector_runs__"] = self.vector_runs
            namespace.update({run.name: run.first for run in all_runs(self.vector_runs)})
        scope = CodeScope(self.layout, namespace)
        sources = namespace.setdefault("__source__", [])
        root = self.root
        for node in root.get("calculations").items():
            name = node["name"].str()
            namespace["__calculations__"][name] = compile_calculation(
                name, node["algo"].str(), node.get("input").items(), scope, self.algorithms, node)
        selectors = []
        for pipeline in root.get("pipelines").items():
            for node in pipeline.get("action_profiles").items():
                if node.has("selector"):
                    sel = node["selector"]
                    fn = compile_calculation(f"{node['name'].str()}$selector", sel["algo"].str(),
                                             sel.get("input").items(), scope, self.algorithms,
                                             sel)
                    selectors.append((self.profiles[node["name"].str()], fn))
        verify, update = [], []
        for node in root.get("checksums").items():
            calc_name = node["calculation"].str()
            fn = namespace["__calculations__"].get(calc_name)
            if fn is None:
                raise node["calculation"].error(f"unknown calculation '{calc_name}'")
            if node.get("verify", True).bool():
                verify.append((node, fn))
            if node.get("update", True).bool():
                update.append((node, fn))
        parsers = root["parsers"].items()
        packet_path = [ParserCompiler(parsers[0], verify, scope, traced).compile()]
        pipelines = {p["name"].str(): p for p in root.get("pipelines").items()}
        for fn_name in ("ingress", "egress"):
            packet_path.append(ControlCompiler(pipelines[fn_name], self.tables, self.actions,
                                               scope, traced).compile(fn_name))
        packet_path.append(compile_deparser(root["deparsers"][0], update, scope, traced))
        sources += packet_path
        native = None
        if not traced and nativebuild.enabled():
            native = generate_native(scope, pipelines, self.tables, self.actions,
                                     parsers[0], verify,
                                     {c["name"].str(): c
                                      for c in root.get("calculations").items()},
                                     root["deparsers"][0], update)
            if native.python_source:
                sources.append(native.python_source)
        after_ingress = code_writes("\n".join(packet_path[2:]))   # egress and deparser
        anywhere = union(after_ingress, code_writes("\n".join(packet_path[:2])))
        shared = [] if traced else self._replica_shared_headers(after_ingress,
                                                                root["deparsers"][0], scope)
        if shared:
            sources.append(compile_replica_deparser(root["deparsers"][0], update, scope, shared))
        source = "\n\n\n".join(sources) + "\n"
        try:
            code = compile(source, "<p4switch generated>", "exec")
        except SyntaxError as exc:  # a generator bug, not the user's: keep the details
            raise ConfigError("", f"internal code generation error: {exc}") from exc
        exec(code, namespace)  # noqa: S102 - source generated from the validated program
        for profile, fn in selectors:
            profile.selector = namespace[fn]
        return with_native(PacketCode(namespace["parse"], namespace["ingress"],
                                      namespace["egress"], namespace["deparse"], namespace,
                                      source, namespace.get("deparse_replica"), len(shared),
                                      after_ingress, anywhere, code, native))

    @staticmethod
    def _replica_shared_headers(writes: WriteSet, deparser: Node,
                                scope: CodeScope) -> list[int]:
        """Headers (validity indices) that egress and the deparser never change, so every
        multicast replica emits them with the same bytes."""
        if writes.anything:
            return []
        shared = []
        for inst in deparse_order(deparser, scope):
            slots = range(inst.base, inst.base + len(inst.htype.fields))
            if inst.metadata or writes.touches(slots, inst.index) or (
                    inst.varbit_len_slot is not None and inst.varbit_len_slot in writes.fields):
                continue
            shared.append(inst.index)
        return shared
