"""Scenario files: YAML or JSON read into the dataclasses of inaemu/scenario/model.py, and
written back.

The format (docs/scenarios.md has the full description)::

    name: link-failure            # optional; default: the file's stem ("scenario" for text)
    network:
      topology: fat-tree          # star | leaf-spine | fat-tree
      k: 4                        # fat-tree: k; star: hosts; leaf-spine: leaves, spines,
                                  #   hosts_per_leaf (only the keys of the topology given)
      bw_mbps: 1000               # optional
      delay_ms: 0.05              # optional: a number of ms, or a duration string ("50us")
      loss_percent: 0             # optional
    options:                      # optional, every key optional
      seed: 1
      elems_k: 32
      pool_size: 64
      detection_s: 1ms            # a duration
      time_limit_s: 30            # a duration
      switch_pps: 65000
    jobs:
      - name: train
        algo: ina                 # ina, ring or a baseline (inaemu.sim.driver.ALGOS)
        workers: [h1, h2, h3]     # or a range "h1..h16" (same prefix, both ends included)
        size: 8MiB                # bytes: an integer, or "8MiB", "512KiB", "4MB", "1000B"
        iterations: 3             # optional, default 1
        compute: 2ms              # optional duration, default 0
        start: 0                  # optional duration, default 0
        after: other-job          # optional: starts when that job has ended
        root: c0                  # optional: the switch at the root of the INA tree
    events:                       # optional; each item: `at` and exactly one kind key
      - {at: 5ms, link_down: [a0_0, c0]}
      - {at: 20ms, link_up: [a0_0, c0]}
      - {at: 1ms, link_change: {link: [h1, e0_0], loss_percent: 1, delay_ms: 2, bw_mbps: 100}}
      - {at: 3ms, switch_crash: e0_0}
      - {at: 9ms, switch_restart: e0_0}
      - {at: 0, slow_worker: {host: h3, compute_factor: 2, nic_factor: 1}}
      - {at: 0, flow_start: {name: bulk, kind: tcp, from: h9, to: h10, size: 100MiB}}
      - {at: 1s, flow_stop: bulk}

Durations are a number of seconds or a string with a unit: ns, us (or µs), ms, s, min
("5ms", "0.5 s"); never negative. Sizes are whole bytes: an integer or a number with B, KB,
MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024). A flow_start's `kind` is
tcp (`size` optional), udp (`rate_mbps`) or incast (`from` a list); `from` is a host or a list
of hosts. Booleans are not numbers; unknown keys are refused.

Every refusal is a ScenarioError whose message begins "line N: " (the line of the offending
key or item in the file), then the field (`jobs[train].workload.size_bytes`) and the reason.
The model's own checks (its __post_init__ and check_scenario) are re-raised with the line of
the closest part of the file they name. A `.json` file is checked by the json module first
(its syntax errors have lines too), then read like YAML, of which JSON is a subset here.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import NoReturn

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from inaemu.scenario.units import (DURATION_UNITS, NUMBER, parse_duration, parse_size,
                                   size_text)
from inaemu.scenario.model import (EVENT_KINDS, FlowStart, FlowStop, Job, LinkChange, LinkDown,
                                   LinkUp, Network, Options, Scenario, ScenarioError, SlowWorker,
                                   SwitchCrash, SwitchRestart, Workload, event_kind)

SUFFIXES = (".yaml", ".yml", ".json")

TOP_KEYS = ("name", "network", "options", "jobs", "events")
NETWORK_KEYS = ("topology", "k", "hosts", "leaves", "spines", "hosts_per_leaf", "bw_mbps",
                "delay_ms", "loss_percent")
# The size keys each topology takes; the others would be ignored by it, so they are refused.
NETWORK_SIZES = {"star": ("hosts",), "leaf-spine": ("leaves", "spines", "hosts_per_leaf"),
                 "fat-tree": ("k",)}
OPTION_KEYS = ("seed", "elems_k", "pool_size", "detection_s", "time_limit_s", "switch_pps",
               "repair_wait_s", "sharing", "shared_pairs", "aggregation", "host_pps",
               "sim_core")
JOB_KEYS = ("name", "algo", "workers", "size", "iterations", "compute", "start", "after", "root",
            "model", "bucket_cap", "compute_speedup", "chakra")
WORKLOAD_KEYS = ("size", "model", "chakra")      # what a job runs: exactly one of them
# A job's file keys and the model's names for them (the `where` of the model's errors).
JOB_FIELDS = {"name": "name", "algo": "algo", "workers": "workers", "size": "workload.size_bytes",
              "iterations": "workload.iterations", "compute": "workload.compute_s",
              "start": "start_s", "after": "after", "root": "root",
              "model": "workload", "bucket_cap": "workload", "compute_speedup": "workload",
              "chakra": "workload"}
EVENT_KEYS = ("at", *EVENT_KINDS)
LINK_CHANGE_KEYS = ("link", "loss_percent", "delay_ms", "bw_mbps")
SLOW_WORKER_KEYS = ("host", "compute_factor", "nic_factor")
FLOW_START_KEYS = ("name", "kind", "from", "to", "rate_mbps", "size")
FLOW_START_FIELDS = {"name": "name", "kind": "kind", "from": "sources", "to": "destination",
                     "rate_mbps": "rate_mbps", "size": "size_bytes"}

_PLAIN_NUMBER = re.compile(rf"{NUMBER}$")     # "1e5": a float in JSON, a string in YAML 1.1
_RANGE = re.compile(r"(\D*)(\d+)\.\.(\D*)(\d+)$")
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


# ---------------------------------------------------------------------------------------------
# Reading

def load_scenario(path) -> Scenario:
    """The scenario in a .yaml, .yml or .json file; its name defaults to the file's stem."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ScenarioError(str(path), f"a scenario file ends in {', '.join(SUFFIXES)}, "
                                       f"not {suffix or 'no suffix'!r}")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ScenarioError("file", f"not UTF-8 text ({error.reason})",
                            data[:error.start].count(b"\n") + 1) from None
    return _parse(text, is_json=suffix == ".json", default_name=path.stem,
                  base_dir=path.resolve().parent)


def parse_scenario(text: str, source: str = "<text>") -> Scenario:
    """The scenario in `text`, YAML (JSON when `source` ends in .json). `source` names where
    the text came from: a file name gives the default scenario name (its stem), otherwise it
    is "scenario"."""
    is_json = source.lower().endswith(".json")
    default_name = "scenario" if source.startswith("<") else Path(source).stem or "scenario"
    return _parse(text, is_json=is_json, default_name=default_name)


def _parse(text: str, *, is_json: bool, default_name: str,
           base_dir: Path | None = None) -> Scenario:
    if not text.strip():
        raise ScenarioError("top level", "the file is empty (a scenario needs network and jobs)",
                            1)
    if is_json:
        try:
            json.loads(text)
        except json.JSONDecodeError as error:
            raise ScenarioError("JSON syntax", f"{error.msg} (column {error.colno})",
                                error.lineno) from None
        # JSON allows tabs between tokens, YAML does not; valid JSON has no raw tab in a
        # string, so every tab is whitespace and a space does the same (lines unchanged).
        text = text.replace("\t", " ")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        raise _syntax_error(error) from None
    except yaml.reader.ReaderError as error:
        character = error.character
        if isinstance(character, int):
            character = chr(character)
        raise ScenarioError("YAML syntax", f"character U+{ord(character):04X} is not allowed",
                            text[:error.position].count("\n") + 1) from None
    except yaml.YAMLError as error:
        raise ScenarioError("YAML syntax", str(error), 1) from None
    if root is None:
        raise ScenarioError("top level", "the file is empty (a scenario needs network and jobs)",
                            1)
    return _Reader(base_dir).scenario(root, default_name)


def _syntax_error(error: yaml.MarkedYAMLError) -> ScenarioError:
    mark = error.problem_mark or error.context_mark
    problem = error.problem or "not valid YAML"
    if error.problem_mark is not None:
        problem += f" (column {error.problem_mark.column + 1})"
    if error.context:
        since = f" at line {error.context_mark.line + 1}" if error.context_mark else ""
        problem = f"{error.context}{since}: {problem}"
    return ScenarioError("YAML syntax", problem, mark.line + 1 if mark is not None else 1)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


class _Reader:
    """Walks the composed YAML nodes; `lines` maps each field path it has seen (in the model's
    names: `jobs[train].workload.size_bytes`, `events[2] (link_down)`) to its line, for the
    errors the model raises without one."""

    def __init__(self, base_dir: Path | None = None) -> None:
        self.constructor = SafeConstructor()
        self.lines: dict[str, int] = {}
        self.base_dir = base_dir        # relative Chakra prefixes are read from here

    # -- errors --------------------------------------------------------------------------------

    @staticmethod
    def fail(node: yaml.Node, where: str, problem: str) -> NoReturn:
        raise ScenarioError(where, problem, _line(node))

    def line_of(self, where: str) -> int:
        """The line of `where`, or of the closest enclosing part of the file that has one."""
        path = where
        while path:
            if path in self.lines:
                return self.lines[path]
            shorter = re.sub(r"(\.[A-Za-z_]\w*|\[[^\]]*\]|\s*\([^)]*\))$", "", path)
            if shorter == path:
                break
            path = shorter
        return self.lines.get("top level", 1)

    def build(self, cls, prefix: str = "", **kwargs):
        """`cls(**kwargs)`, its ScenarioError given the line of what it names."""
        try:
            return cls(**kwargs)
        except ScenarioError as error:
            if error.line is not None:
                raise
            where = prefix + error.where
            raise ScenarioError(where, error.problem, self.line_of(where)) from None

    def note(self, where: str, node: yaml.Node) -> None:
        self.lines.setdefault(where, _line(node))

    # -- shapes --------------------------------------------------------------------------------

    def describe(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        try:
            return repr(self.value(node))
        except ConstructorError:
            return repr(node.value)

    def value(self, node: yaml.ScalarNode):
        value = self.constructor.construct_object(node)
        if isinstance(value, str) and node.style is None and node.tag == _STR_TAG \
                and _PLAIN_NUMBER.match(value):
            return float(value)
        return value

    def scalar(self, node: yaml.Node, where: str, expected: str):
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, where, f"expected {expected}, got {self.describe(node)}")
        try:
            return self.value(node)
        except ConstructorError as error:
            self.fail(node, where, f"expected {expected}: {error.problem}")

    def mapping(self, node: yaml.Node, where: str, known: tuple[str, ...],
                required: tuple[str, ...] = ()) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """{key: (key node, value node)}: keys are strings, known, each given once (YAML
        merge keys `<<` are followed), the required ones present."""
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, where, f"expected a mapping, got {self.describe(node)}")
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        merged: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) \
                    else [value_node]
                for source in sources:
                    for key, entry in self.mapping(source, where, known).items():
                        merged.setdefault(key, entry)
                continue
            key = self.scalar(key_node, where, "a key")
            if not isinstance(key, str):
                self.fail(key_node, where, f"keys are names, got {key!r}")
            if key in entries:
                self.fail(key_node, where, f"key {key!r} given twice (first at line "
                                           f"{_line(entries[key][0])})")
            if key not in known:
                self.fail(key_node, where, f"unknown key {key!r} (known: {', '.join(known)})")
            entries[key] = (key_node, value_node)
        for key, entry in merged.items():
            entries.setdefault(key, entry)
        self.require(node, where, entries, required)
        return entries

    def require(self, node, where, entries, keys) -> None:
        for key in keys:
            if key not in entries:
                self.fail(node, where, f"missing key {key!r}")

    def sequence(self, node: yaml.Node, where: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, where, f"expected a list, got {self.describe(node)}")
        return node.value

    @staticmethod
    def is_null(node: yaml.Node) -> bool:
        return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"

    # -- values --------------------------------------------------------------------------------

    def string(self, node, where: str, *, optional: bool = False) -> str | None:
        if optional and self.is_null(node):
            return None
        value = self.scalar(node, where, "a name")
        if not isinstance(value, str):
            self.fail(node, where, f"expected a name (a string), got {value!r}")
        if not value:
            self.fail(node, where, "expected a name, got an empty string")
        return value

    def number(self, node, where: str, *, optional: bool = False):
        if optional and self.is_null(node):
            return None
        value = self.scalar(node, where, "a number")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(node, where, f"expected a number, got {value!r}")
        if not math.isfinite(value):
            self.fail(node, where, f"expected a finite number, got {value!r}")
        return value

    def integer(self, node, where: str) -> int:
        value = self.scalar(node, where, "an integer")
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(node, where, f"expected an integer, got {value!r}")
        return value

    def duration(self, node, where: str, unit: Decimal = Decimal(1),
                 *, optional: bool = False) -> float | None:
        """A duration in `unit`s (seconds by default): a number (already in `unit`s) or a
        string with a unit ("5ms"; without one, a number of `unit`s)."""
        if optional and self.is_null(node):
            return None
        value = self.scalar(node, where, "a duration")
        try:
            return parse_duration(value, unit)
        except ValueError as error:
            self.fail(node, where, str(error))

    def size(self, node, where: str) -> int:
        """Whole bytes: an integer or a string with a unit ("8MiB")."""
        value = self.scalar(node, where, "a size")
        try:
            return parse_size(value)
        except ValueError as error:
            self.fail(node, where, str(error))

    def names(self, node, where: str) -> tuple[str, ...]:
        """A list of names, or one name."""
        if isinstance(node, yaml.SequenceNode):
            return tuple(self.string(item, f"{where}[{i}]") for i, item in enumerate(node.value))
        return (self.string(node, where),)

    def hosts(self, node, where: str) -> tuple[str, ...]:
        """A list of hosts or a range string "h1..h16"."""
        if isinstance(node, yaml.SequenceNode):
            return self.names(node, where)
        value = self.scalar(node, where, "a list of hosts or a range like 'h1..h16'")
        match = _RANGE.match(value) if isinstance(value, str) else None
        if match is None:
            self.fail(node, where, f"expected a list of hosts or a range like 'h1..h16', "
                                   f"got {value!r}")
        prefix, first, end_prefix, last = match.groups()
        if end_prefix != prefix:
            self.fail(node, where, f"a range has the same prefix at both ends, got {value!r}")
        if int(last) < int(first):
            self.fail(node, where, f"a range goes upwards, got {value!r}")
        return tuple(f"{prefix}{n}" for n in range(int(first), int(last) + 1))

    def link(self, node, where: str) -> tuple[str, str]:
        if not isinstance(node, yaml.SequenceNode) or len(node.value) != 2:
            self.fail(node, where, f"expected a link: a list of its two nodes like [a0_0, c0], "
                                   f"got {self.describe(node)}")
        a, b = (self.string(item, f"{where}[{i}]") for i, item in enumerate(node.value))
        return a, b

    # -- parts ---------------------------------------------------------------------------------

    def scenario(self, root: yaml.Node, default_name: str) -> Scenario:
        self.lines["top level"] = _line(root)
        top = self.mapping(root, "top level", TOP_KEYS, required=("network", "jobs"))
        for key, (key_node, _) in top.items():
            self.note(key, key_node)
        name = self.string(top["name"][1], "name") if "name" in top else default_name
        network = self.network(top["network"][1])
        options = Options()
        if "options" in top and not self.is_null(top["options"][1]):
            options = self.options(top["options"][1])
        jobs = self.jobs(top["jobs"][1])
        events: tuple = ()
        if "events" in top and not self.is_null(top["events"][1]):
            events = self.events(top["events"][1])
        return self.build(Scenario, network=network, jobs=jobs, events=events, options=options,
                          name=name)

    def network(self, node) -> Network:
        entries = self.mapping(node, "network", NETWORK_KEYS, required=("topology",))
        for key, (key_node, _) in entries.items():
            self.note(f"network.{key}", key_node)
        kind = self.string(entries["topology"][1], "network.topology")
        kwargs: dict = {"kind": kind}
        sizes = NETWORK_SIZES.get(kind)
        for key in ("k", "hosts", "leaves", "spines", "hosts_per_leaf"):
            if key in entries:
                if sizes is not None and key not in sizes:
                    self.fail(entries[key][0], "network",
                              f"{key!r} is not a setting of a {kind} (it takes "
                              f"{', '.join(sizes)})")
                kwargs[key] = self.integer(entries[key][1], f"network.{key}")
        if "bw_mbps" in entries:
            kwargs["bw_mbps"] = self.number(entries["bw_mbps"][1], "network.bw_mbps",
                                            optional=True)
        if "delay_ms" in entries:
            kwargs["delay_ms"] = self.duration(entries["delay_ms"][1], "network.delay_ms",
                                               DURATION_UNITS["ms"])
        if "loss_percent" in entries:
            kwargs["loss_percent"] = self.number(entries["loss_percent"][1],
                                                 "network.loss_percent")
        return self.build(Network, **kwargs)

    def options(self, node) -> Options:
        entries = self.mapping(node, "options", OPTION_KEYS)
        kwargs: dict = {}
        for key, (key_node, value_node) in entries.items():
            where = f"options.{key}"
            self.note(where, key_node)
            if key in ("seed", "elems_k", "pool_size", "shared_pairs"):
                kwargs[key] = self.integer(value_node, where)
            elif key in ("sharing", "aggregation", "sim_core"):
                kwargs[key] = self.string(value_node, where)
            elif key in ("detection_s", "time_limit_s", "repair_wait_s"):
                kwargs[key] = self.duration(value_node, where)
            else:
                kwargs[key] = self.number(value_node, where, optional=True)
        return self.build(Options, **kwargs)

    def jobs(self, node) -> tuple[Job, ...]:
        jobs: list[Job] = []
        named: dict[str, yaml.Node] = {}
        for index, item in enumerate(self.sequence(node, "jobs")):
            # a job is named by its name in errors as soon as that is known
            where = f"jobs[{self.peek_name(item) or index}]"
            entries = self.mapping(item, where, JOB_KEYS, required=("name",))
            name = self.string(entries["name"][1], f"{where}.name")
            where = f"jobs[{name}]"
            if name in named:
                self.fail(entries["name"][1], where,
                          f"two jobs have this name (the other at line {_line(named[name])})")
            named[name] = item
            self.require(item, where, entries, ("algo", "workers"))
            given = [key for key in WORKLOAD_KEYS if key in entries]
            if len(given) != 1:
                self.fail(item, where, "a job runs exactly one of size (all-reduces), model "
                                       f"(a built-in model's DDP iterations) or chakra (a "
                                       f"trace), got {', '.join(given) or 'none'}")
            extra = [k for k in ("bucket_cap", "compute_speedup") if k in entries] \
                if "model" not in entries else []
            extra += ["compute"] if "compute" in entries and "size" not in entries else []
            extra += ["iterations"] if "iterations" in entries and "chakra" in entries else []
            if extra:
                self.fail(entries[extra[0]][0], f"{where}.{extra[0]}",
                          f"does not apply to a job with {given[0]}")
            self.note(where, item)
            for key, (key_node, _) in entries.items():
                self.note(f"{where}.{JOB_FIELDS[key]}", key_node)

            def value(key, read, *args, default=None, **kwargs):
                if key not in entries:
                    return default
                return read(entries[key][1], f"{where}.{key}", *args, **kwargs)

            if "size" in entries:
                workload = self.build(
                    Workload, f"{where}.", size_bytes=value("size", self.size),
                    iterations=value("iterations", self.integer, default=1),
                    compute_s=value("compute", self.duration, default=0.0))
            else:
                workload = self.graph_workload(entries, where, value)
            jobs.append(self.build(
                Job, name=name, algo=value("algo", self.string),
                workers=value("workers", self.hosts), workload=workload,
                start_s=value("start", self.duration, default=0.0),
                after=value("after", self.string, optional=True),
                root=value("root", self.string, optional=True)))
        return tuple(jobs)

    def graph_workload(self, entries, where: str, value):
        """A job's workload graph: a built-in model's DDP iterations or a Chakra trace
        (docs/workloads.md); its refusals carry the line of the key that chose it."""
        from inaemu.workload.graph import WorkloadError
        workers = len(value("workers", self.hosts))
        key = "model" if "model" in entries else "chakra"
        try:
            if key == "model":
                from inaemu.workload.models import BUCKET_BYTES, model_workload
                return model_workload(
                    value("model", self.string), workers,
                    bucket_cap_bytes=value("bucket_cap", self.size, default=BUCKET_BYTES),
                    compute_speedup=value("compute_speedup", self.number, default=1.0),
                    iterations=value("iterations", self.integer, default=1))
            from inaemu.workload.chakra import read_chakra
            prefix = Path(value("chakra", self.string))
            if not prefix.is_absolute() and self.base_dir is not None:
                prefix = self.base_dir / prefix
            return read_chakra(prefix)
        except WorkloadError as error:
            self.fail(entries[key][1], f"{where}.{key}", str(error))

    def peek_name(self, node) -> str | None:
        """The `name` of a mapping node when it is a string, before the mapping is checked."""
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == "name" \
                        and isinstance(value_node, yaml.ScalarNode):
                    try:
                        value = self.value(value_node)
                    except ConstructorError:
                        return None
                    return value if isinstance(value, str) and value else None
        return None

    def events(self, node) -> tuple:
        events = []
        for index, item in enumerate(self.sequence(node, "events")):
            where = f"events[{index}]"
            entries = self.mapping(item, where, EVENT_KEYS)
            kinds = [key for key in entries if key != "at"]
            if len(kinds) != 1:
                self.fail(item, where, f"an event has exactly one of {', '.join(EVENT_KINDS)} "
                                       f"(got {', '.join(kinds) or 'none'})")
            kind = kinds[0]
            where = f"events[{index}] ({kind})"
            self.note(where, item)
            self.require(item, where, entries, ("at",))
            self.note(f"{where}.at", entries["at"][0])
            at = self.duration(entries["at"][1], f"{where}.at")
            events.append(getattr(self, f"event_{kind}")(at, entries[kind][1], where))
        return tuple(events)

    def fields(self, node, where: str, known, required, names=None):
        """The entries of an event's mapping, their lines noted under the model's names."""
        entries = self.mapping(node, where, known, required)
        for key, (key_node, _) in entries.items():
            self.note(f"{where}.{(names or {}).get(key, key)}", key_node)
        return entries

    def event_link_down(self, at, node, where):
        return LinkDown(at, *self.link(node, where))

    def event_link_up(self, at, node, where):
        return LinkUp(at, *self.link(node, where))

    def event_link_change(self, at, node, where):
        entries = self.fields(node, where, LINK_CHANGE_KEYS, ("link",))
        a, b = self.link(entries["link"][1], f"{where}.link")
        kwargs = {}
        for key in ("loss_percent", "bw_mbps"):
            if key in entries:
                kwargs[key] = self.number(entries[key][1], f"{where}.{key}", optional=True)
        if "delay_ms" in entries:
            kwargs["delay_ms"] = self.duration(entries["delay_ms"][1], f"{where}.delay_ms",
                                               DURATION_UNITS["ms"], optional=True)
        return LinkChange(at, a, b, **kwargs)

    def event_switch_crash(self, at, node, where):
        return SwitchCrash(at, self.string(node, where))

    def event_switch_restart(self, at, node, where):
        return SwitchRestart(at, self.string(node, where))

    def event_slow_worker(self, at, node, where):
        entries = self.fields(node, where, SLOW_WORKER_KEYS, ("host",))
        kwargs = {key: self.number(entries[key][1], f"{where}.{key}")
                  for key in ("compute_factor", "nic_factor") if key in entries}
        return SlowWorker(at, self.string(entries["host"][1], f"{where}.host"), **kwargs)

    def event_flow_start(self, at, node, where):
        entries = self.fields(node, where, FLOW_START_KEYS, ("name", "kind", "from", "to"),
                              FLOW_START_FIELDS)
        rate = size = None
        if "rate_mbps" in entries:
            rate = self.number(entries["rate_mbps"][1], f"{where}.rate_mbps", optional=True)
        if "size" in entries and not self.is_null(entries["size"][1]):
            size = self.size(entries["size"][1], f"{where}.size")
        return FlowStart(at, name=self.string(entries["name"][1], f"{where}.name"),
                         kind=self.string(entries["kind"][1], f"{where}.kind"),
                         sources=self.names(entries["from"][1], f"{where}.from"),
                         destination=self.string(entries["to"][1], f"{where}.to"),
                         rate_mbps=rate, size_bytes=size)

    def event_flow_stop(self, at, node, where):
        return FlowStop(at, self.string(node, where))


# ---------------------------------------------------------------------------------------------
# Writing

def scenario_to_dict(scenario: Scenario) -> dict:
    """The file form of `scenario` (plain dicts, lists, strings and numbers; durations in
    seconds, sizes in bytes or whole KiB/MiB/GiB): parse_scenario reads it back equal.
    Every setting is written, defaults included, so the file does not depend on them."""
    network = scenario.network
    net: dict = {"topology": network.kind}
    for key in NETWORK_SIZES[network.kind]:
        net[key] = getattr(network, key)
    if network.bw_mbps is not None:
        net["bw_mbps"] = network.bw_mbps
    net["delay_ms"] = network.delay_ms
    net["loss_percent"] = network.loss_percent
    options = scenario.options
    opts = {key: getattr(options, key) for key in OPTION_KEYS
            if getattr(options, key) is not None}
    jobs = []
    for job in scenario.jobs:
        entry = {"name": job.name, "algo": job.algo, "workers": list(job.workers)}
        entry.update(_workload_entry(job.workload))
        entry["start"] = job.start_s
        if job.after is not None:
            entry["after"] = job.after
        if job.root is not None:
            entry["root"] = job.root
        jobs.append(entry)
    result = {"name": scenario.name, "network": net, "options": opts, "jobs": jobs}
    if scenario.events:
        result["events"] = [{"at": event.at_s, event_kind(event): _event_value(event)}
                            for event in scenario.events]
    return result


def _event_value(event):
    if isinstance(event, (LinkDown, LinkUp)):
        return [event.a, event.b]
    if isinstance(event, LinkChange):
        value = {"link": [event.a, event.b]}
        value.update({key: getattr(event, key) for key in ("loss_percent", "delay_ms", "bw_mbps")
                      if getattr(event, key) is not None})
        return value
    if isinstance(event, (SwitchCrash, SwitchRestart)):
        return event.switch
    if isinstance(event, SlowWorker):
        return {"host": event.host, "compute_factor": event.compute_factor,
                "nic_factor": event.nic_factor}
    if isinstance(event, FlowStart):
        one = len(event.sources) == 1 and event.kind != "incast"
        value = {"name": event.name, "kind": event.kind,
                 "from": event.sources[0] if one else list(event.sources),
                 "to": event.destination}
        if event.rate_mbps is not None:
            value["rate_mbps"] = event.rate_mbps
        if event.size_bytes is not None:
            value["size"] = size_text(event.size_bytes)
        return value
    return event.name    # FlowStop


def _workload_entry(workload) -> dict:
    """A job's workload in the file's keys: size/iterations/compute, a model, or a trace."""
    if isinstance(workload, Workload):
        return {"size": size_text(workload.size_bytes), "iterations": workload.iterations,
                "compute": workload.compute_s}
    meta = workload.meta
    if "model" in meta:
        return {"model": meta["model"], "iterations": meta["iterations"],
                "bucket_cap": size_text(meta["bucket_cap_bytes"]),
                "compute_speedup": meta["compute_speedup"]}
    files = meta.get("files") or []
    if files and files[0].endswith(".0.et"):
        return {"chakra": files[0][:-len(".0.et")]}
    raise ScenarioError("jobs", f"the workload {workload.name!r} was built in Python and has "
                                "no file form (a model or a Chakra trace has)")


def dump_scenario(scenario: Scenario, path) -> None:
    """Write `scenario` to `path`: JSON for .json, YAML for .yaml and .yml."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ScenarioError(str(path), f"a scenario file ends in {', '.join(SUFFIXES)}, "
                                       f"not {suffix or 'no suffix'!r}")
    data = scenario_to_dict(scenario)
    if suffix == ".json":
        text = json.dumps(data, indent=2) + "\n"
    else:
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False,
                              allow_unicode=True)
    path.write_text(text, encoding="utf-8")
