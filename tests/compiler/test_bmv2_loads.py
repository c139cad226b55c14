"""Every program inaemu compiles gives BMv2 JSON that real simple_switch loads.

Two layers: `check_document` (the forms BMv2 accepts, `bmv2_forms.py`) must hold for every corpus
program and must catch each form simple_switch refuses (no reference toolchain needed); and, when
the reference toolchain is installed, each program's JSON is loaded by /opt/p4ref's simple_switch
(all switches start at once; a switch that logs "Thrift server was started" has loaded the JSON,
one that exits has refused it).
"""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.compiler.bmv2_forms import FormError, check_document
from p4switch.reference.bmv2 import dying_with_parent

ROOT = Path(__file__).resolve().parents[2]
SIMPLE_SWITCH = Path("/opt/p4ref/bin/simple_switch")
INA_KS = (4, 12, 32, 256, 364)


def corpus() -> list[tuple[str, Path, dict]]:
    out = []
    for folder in (ROOT / "tests" / "p4", ROOT / "tests" / "compiler" / "programs"):
        out += [(f"{folder.name}/{p.stem}", p, {}) for p in sorted(folder.glob("*.p4"))]
    out.append(("p4src/l3_forward", ROOT / "p4src" / "l3_forward.p4", {}))
    out += [(f"p4src/ina_k{k}", ROOT / "p4src" / "ina.p4", {"INA_K": str(k)}) for k in INA_KS]
    return out


CORPUS = corpus()
_compiled: dict[str, dict] = {}


def compiled(name: str) -> dict:
    if name not in _compiled:
        _, path, defines = next(c for c in CORPUS if c[0] == name)
        _compiled[name] = compile_file(str(path), defines=defines).bmv2
    return _compiled[name]


# ---- the forms, without the reference ---------------------------------------------------------
@pytest.mark.parametrize("name", [c[0] for c in CORPUS])
def test_corpus_json_has_only_bmv2_forms(name):
    check_document(compiled(name))


def _walk(node, path=""):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")


def test_action_data_inside_expressions_is_local():
    """l3_forward/ina/action_binding computed with action parameters: BMv2 refuses
    `runtime_data` inside an expression ("Invalid 'type' in expression")."""
    doc = compiled("p4/action_binding")
    locals_seen = 0
    for action in doc["actions"]:
        for prim in action["primitives"]:
            for path, node in _walk(prim["parameters"]):
                if isinstance(node, dict) and node.get("op"):
                    for side in ("left", "right", "cond"):
                        child = node.get(side)
                        assert not (isinstance(child, dict) and child.get("type") ==
                                    "runtime_data"), f"{action['name']}{path}"
                        locals_seen += isinstance(child, dict) and child.get("type") == "local"
    assert locals_seen > 0


def test_boolean_primitive_arguments_are_data():
    """assert/assume take data (BMv2 aborts on a boolean expression parameter)."""
    doc = compiled("p4/drop_semantics")
    prims = [p for a in doc["actions"] for p in a["primitives"] if p["op"] in ("assert", "assume")]
    assert len(prims) == 2
    for p in prims:
        (param,) = p["parameters"]
        assert param["type"] == "expression" and param["value"]["value"]["op"] == "b2d"


def test_parser_set_from_stack_last_is_an_expression():
    doc = compiled("p4/header_stacks")
    sources = [op["parameters"][1] for s in doc["parsers"][0]["parse_states"]
               for op in s["parser_ops"] if op["op"] == "set"]
    assert {"type": "expression", "value": {"type": "stack_field", "value": ["items", "value"]}} \
        in sources
    assert all(s["type"] in ("field", "hexstr", "lookahead", "expression") for s in sources)


def _tables(doc):
    return {t["name"]: t for p in doc["pipelines"] for t in p["tables"]}


def test_slice_keys_are_temporaries_and_masks_are_field_wide():
    tables = _tables(compiled("p4/table_keys"))
    for name in ("MyIngress.t_slice", "MyIngress.t_multi"):
        first = tables[name]["key"][0]
        assert first["target"][0] == "scalars" and first["mask"] is None, first
    doc = compiled("p4/types")
    check_document(doc)  # masks, where there are any, are as wide as their field


def test_optional_match_is_ternary_in_the_json():
    t = _tables(compiled("p4/table_match"))["MyIngress.t_opt"]
    assert t["key"][0]["match_type"] == "ternary" and t["match_type"] == "ternary"
    assert {m["match_type"] for e in t["entries"] for m in e["match_key"]} == {"ternary", "exact"}


def test_listed_noaction_is_not_added_twice():
    t = _tables(compiled("programs/entry_priorities"))["Ing.t5"]
    assert t["actions"] == ["Ing.w5", "NoAction"]
    assert set(t["next_tables"]) == set(t["actions"])
    assert t["default_entry"]["action_id"] == t["action_ids"][1]


BAD_FORMS = [
    ("runtime_data in an expression",
     lambda d: _first_prim(d).update(parameters=[
         {"type": "field", "value": ["scalars", "x"]},
         {"type": "expression", "value": {"type": "expression", "value": {
             "op": "+", "left": {"type": "runtime_data", "value": 0},
             "right": {"type": "hexstr", "value": "0x01"}}}}])),
    ("boolean primitive parameter",
     lambda d: _first_prim(d).update(op="assert", parameters=[
         {"type": "expression", "value": {"type": "expression", "value": {
             "op": "d2b", "left": None,
             "right": {"type": "field", "value": ["scalars", "x"]}}}}])),
    ("bool literal primitive parameter",
     lambda d: _first_prim(d).update(op="assert", parameters=[{"type": "bool", "value": True}])),
    ("parser set from stack_field",
     lambda d: d["parsers"][0]["parse_states"][0]["parser_ops"].append(
         {"op": "set", "parameters": [{"type": "field", "value": ["scalars", "x"]},
                                      {"type": "stack_field", "value": ["s", "f"]}]})),
    ("optional match type",
     lambda d: d["pipelines"][0]["tables"][0]["key"].append(
         {"match_type": "optional", "name": "k", "target": ["scalars", "x"], "mask": None})),
    ("mask narrower than its field",
     lambda d: d["pipelines"][0]["tables"][0]["key"].append(
         {"match_type": "exact", "name": "k", "target": ["scalars", "x"], "mask": "0xff"})),
    ("action listed twice",
     lambda d: d["pipelines"][0]["tables"][0]["actions"].append(
         d["pipelines"][0]["tables"][0]["actions"][0])),
    ("data condition",
     lambda d: d["pipelines"][0]["conditionals"].append(
         {"name": "n", "id": 9, "expression": {"type": "field", "value": ["scalars", "x"]},
          "true_next": None, "false_next": None})),
]


def _base() -> dict:
    doc = copy.deepcopy(compiled("p4/basic"))
    doc["header_types"][0]["fields"].append(["x", 16, False])  # scalars_0
    doc["actions"][0]["primitives"].insert(0, {"op": "drop", "parameters": []})
    return doc


def _first_prim(doc) -> dict:
    return doc["actions"][0]["primitives"][0]


@pytest.mark.parametrize("what, mutate", BAD_FORMS, ids=[b[0] for b in BAD_FORMS])
def test_check_document_catches(what, mutate):
    doc = _base()
    check_document(doc)
    mutate(doc)
    with pytest.raises(FormError):
        check_document(doc)


# ---- real simple_switch -----------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Loader:
    """One simple_switch started on a JSON: .result() is None when it loaded, else its output."""

    def __init__(self, json_path: Path, scratch: Path, device: int):
        self.json_path, self.scratch, self.device = json_path, scratch, device
        self.loaded = threading.Event()
        self.lines: list[str] = []
        self.start()

    def start(self) -> None:
        self.lines = []
        cmd = [str(SIMPLE_SWITCH), "--log-console", "-L", "info", "--thrift-port",
               str(_free_port()), "--device-id", str(self.device), "--notifications-addr",
               f"ipc://{self.scratch}/notify-{self.device}.ipc", str(self.json_path)]
        self.proc = subprocess.Popen(dying_with_parent(cmd), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if "Thrift server was started" in line:
                self.loaded.set()

    def result(self, timeout_s: float = 30.0) -> str | None:
        deadline = time.monotonic() + timeout_s
        for attempt in range(3):
            while not self.loaded.is_set() and self.proc.poll() is None \
                    and time.monotonic() < deadline:
                self.loaded.wait(0.05)
            self.stop()
            self.reader.join(2.0)
            if self.loaded.is_set():
                return None
            text = "\n".join(self.lines)
            if "Address already in use" not in text or attempt == 2:
                return text or f"no output (exit status {self.proc.returncode})"
            self.start()  # a port taken between choosing and binding it: try another
        return "unreachable"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def loads(tmp_path_factory):
    """Compile every program, start a simple_switch on each at once, collect the outcomes."""
    scratch = tmp_path_factory.mktemp("bmv2_loads")
    paths = {}
    for name, _, _ in CORPUS:  # compile everything first: a compile error starts no switch
        try:
            doc = compiled(name)
        except Exception:  # noqa: BLE001 - test_corpus_json_has_only_bmv2_forms reports it
            continue
        paths[name] = scratch / (name.replace("/", "_") + ".json")
        paths[name].write_text(json.dumps(doc))
    loaders: dict = {}
    base = 4000 + os.getpid() % 1000 * 64
    try:
        for i, (name, path) in enumerate(paths.items()):
            loaders[name] = _Loader(path, scratch, base + i)
        return {name: loader.result() for name, loader in loaders.items()}
    finally:
        for loader in loaders.values():  # none is left running, whatever happened
            loader.stop()


@pytest.mark.skipif(not SIMPLE_SWITCH.exists(), reason="reference BMv2 not installed")
@pytest.mark.parametrize("name", [c[0] for c in CORPUS])
def test_simple_switch_loads(loads, name):
    assert name in loads, f"{name} does not compile"
    problem = loads[name]
    assert problem is None, f"simple_switch refused {name}'s JSON:\n{problem[-3000:]}"


# ---- small programs -----------------------------------------------------------------------------
def test_digest_and_clone_lists_keep_constants_and_expressions():
    """BMv2 field lists hold fields only: a constant or an expression is a temporary (it was
    silently left out of the list)."""
    from p4switch.compiler import compile_source

    from .helpers import program
    src = program("""
        action send(bit<8> p) {
            digest<d_t>(1, { p, hdr.eth.ether_type + 1, 8w7 });
            clone_preserving_field_list(CloneType.I2E, 5, 0);
            resubmit_preserving_field_list(0);
        }
        table t { key = { hdr.eth.dst : exact; } actions = { send; } }
        apply { t.apply(); }""", decls="struct d_t { bit<8> a; bit<16> b; bit<8> c; }")
    doc = compile_source(src).bmv2
    check_document(doc)
    (learn,) = doc["learn_lists"]
    assert len(learn["elements"]) == 3
    assert all(e["type"] == "field" for e in learn["elements"])


def test_exit_in_an_action_jumps_to_its_end():
    """BMv2's exit primitive only flags the packet: without a jump, `h.c = 2` after an exit
    in the same action still ran on simple_switch (tests/p4/exit_in_action)."""
    doc = compiled("p4/exit_in_action")
    exits = 0
    for action in doc["actions"]:
        prims = action["primitives"]
        for k, prim in enumerate(prims):
            if prim["op"] == "exit":
                exits += 1
                if k + 1 < len(prims):     # (an exit that ends its action needs no jump)
                    assert prims[k + 1]["op"] == "_jump"
                    assert int(prims[k + 1]["parameters"][0]["value"], 16) == len(prims)
    assert exits == 2
    # act's exit is followed by more of its action: that one needs the jump
    assert any(p["op"] == "exit" for a in doc["actions"] for p in a["primitives"][:-1])
    bad = _base()
    bad["actions"][0]["primitives"][:0] = [{"op": "exit", "parameters": []},
                                           {"op": "drop", "parameters": []}]
    with pytest.raises(FormError):
        check_document(bad)


@pytest.mark.parametrize("name", [c[0] for c in CORPUS])
def test_every_p4info_action_and_table_is_in_the_json(name):
    """A controller names what P4Info lists; the switch runs what the JSON holds. Every
    listed action and table must be there (an action called directly with field arguments
    was inlined and left out: tests/server/test_action_of_no_table.py)."""
    _, path, defines = next(c for c in CORPUS if c[0] == name)
    result = compile_file(str(path), defines=defines)
    info = result.p4info_or_none
    if info is None:             # P4Info refused (as p4c refuses it), with a reason
        assert result.p4info_refusal
        return
    doc = result.bmv2
    actions = {a["name"] for a in doc["actions"]}
    tables = {t["name"] for p in doc["pipelines"] for t in p["tables"]}
    assert {a.preamble.name for a in info.actions} <= actions
    assert {t.preamble.name for t in info.tables} <= tables
