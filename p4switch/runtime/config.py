"""Reading a BMv2 JSON document safely: top-level validation and typed, path-aware accessors.

Every access to the JSON goes through `Node`, which knows its path (`pipelines[0].tables[3]`) so
that any problem becomes a `ConfigError` naming where it is, never a bare KeyError/TypeError.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ConfigError

# Top-level arrays the runtime reads; a missing one is treated as empty (hand-written JSON often
# omits the ones it does not use), a present one must be a list.
MAX_WIDTH = 1 << 16        # bits, for fields, action data and register cells
MAX_ARRAY_SIZE = 1 << 24   # cells, for register, counter and meter arrays

TOP_LEVEL_ARRAYS = (
    "header_types", "headers", "header_stacks", "header_union_types", "header_unions",
    "header_union_stacks", "field_lists", "errors", "enums", "parsers", "parse_vsets",
    "deparsers", "meter_arrays", "counter_arrays", "register_arrays", "calculations",
    "learn_lists", "actions", "pipelines", "checksums", "extern_instances", "field_aliases",
)


def load_bmv2_json(source: str | bytes | dict) -> dict:
    """Parse (if needed) and validate the top level of a BMv2 JSON document."""
    if isinstance(source, (str, bytes, bytearray)):
        try:
            doc = json.loads(source)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError("", f"not valid JSON: {exc}") from None
    else:
        doc = source
    if not isinstance(doc, dict):
        raise ConfigError("", f"the top level must be a JSON object, not {type(doc).__name__}")
    for key in TOP_LEVEL_ARRAYS:
        if key in doc and not isinstance(doc[key], list):
            raise ConfigError(key, f"must be a list, not {type(doc[key]).__name__}")
    meta = doc.get("__meta__")
    if meta is not None:
        version = meta.get("version") if isinstance(meta, dict) else None
        if not (isinstance(version, list) and version and isinstance(version[0], int)):
            raise ConfigError("__meta__.version", "must be [major, minor]")
        if version[0] != 2:
            raise ConfigError("__meta__.version", f"unsupported major version {version[0]} (need 2)")
    # "actions" may be empty: a program without tables or action code has none (p4c writes [])
    for key in ("headers", "parsers", "deparsers", "pipelines", "header_types"):
        if not doc.get(key):
            raise ConfigError(key, "missing or empty")
    return upgrade_old_tables(doc)


def upgrade_old_tables(doc: dict) -> dict:
    """Tables in BMv2's older JSON form (p4c-bm's, which BMv2 still loads) in the current one:
    actions by name ("actions") become "action_ids", and an indirect table's own profile
    ("act_prof_name", with its "selector" in the table) becomes an entry of the pipeline's
    "action_profiles" (no size limit, as BMv2 makes it). The caller's dict is not changed: the
    changed pipelines and tables are copies."""
    pipelines = doc.get("pipelines")
    if not isinstance(pipelines, list) or not any(
            isinstance(t, dict) and ("action_ids" not in t or "act_prof_name" in t)
            for p in pipelines if isinstance(p, dict)
            for t in (p.get("tables") if isinstance(p.get("tables"), list) else ())):
        return doc
    ids_by_name: dict[str, list[int]] = {}
    for action in doc.get("actions") or ():
        if isinstance(action, dict) and isinstance(action.get("name"), str):
            ids_by_name.setdefault(action["name"], []).append(action.get("id"))
    doc = dict(doc)
    doc["pipelines"] = [_upgrade_pipeline(p, i, ids_by_name) if isinstance(p, dict) else p
                        for i, p in enumerate(pipelines)]
    return doc


def _upgrade_pipeline(pipeline: dict, index: int, ids_by_name: dict) -> dict:
    tables = pipeline.get("tables")
    if not isinstance(tables, list):
        return pipeline
    pipeline = dict(pipeline)
    profiles = list(pipeline.get("action_profiles") or ())
    upgraded = []
    for i, table in enumerate(tables):
        where = f"pipelines[{index}].tables[{i}]"
        if not isinstance(table, dict):
            upgraded.append(table)
            continue
        table = dict(table)
        if "action_ids" not in table and isinstance(table.get("actions"), list):
            ids = []
            for name in table["actions"]:
                found = ids_by_name.get(name, []) if isinstance(name, str) else []
                if len(found) != 1:
                    why = "no action" if not found else f"{len(found)} actions"
                    raise ConfigError(f"{where}.actions", f"{why} named {name!r}")
                ids.append(found[0])
            table["action_ids"] = ids
        name = table.get("act_prof_name")
        if "action_profile" not in table and isinstance(name, str):
            if not any(isinstance(p, dict) and p.get("name") == name for p in profiles):
                profile = {"name": name, "id": table.get("id", len(profiles)),
                           "max_size": MAX_ARRAY_SIZE}
                if table.get("type") == "indirect_ws":
                    if not isinstance(table.get("selector"), dict):
                        raise ConfigError(f"{where}.selector", "an indirect_ws table in the "
                                          "old form (act_prof_name) needs its selector")
                    profile["selector"] = table["selector"]
                profiles.append(profile)
            table["action_profile"] = name
        upgraded.append(table)
    pipeline["tables"] = upgraded
    pipeline["action_profiles"] = profiles
    return pipeline


class Node:
    """A JSON value plus the path that reached it."""

    __slots__ = ("value", "path")

    def __init__(self, value: Any, path: str):
        self.value = value
        self.path = path

    def error(self, problem: str) -> ConfigError:
        return ConfigError(self.path, problem)

    def _child_path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value and self.value[key] is not None

    def get(self, key: str, default: Any = None) -> Node:
        if not isinstance(self.value, dict):
            raise self.error(f"must be an object, not {type(self.value).__name__}")
        return Node(self.value.get(key, default), self._child_path(key))

    def __getitem__(self, key: str | int) -> Node:
        if isinstance(key, int):
            items = self.list()
            if key >= len(items):
                raise self.error(f"needs at least {key + 1} items, has {len(items)}")
            return Node(items[key], self._child_path(key))
        if not isinstance(self.value, dict):
            raise self.error(f"must be an object, not {type(self.value).__name__}")
        if key not in self.value:
            raise self.error(f"missing attribute '{key}'")
        return Node(self.value[key], self._child_path(key))

    def items(self) -> list[Node]:
        """Children of a list (null counts as empty)."""
        return [Node(v, self._child_path(i)) for i, v in enumerate(self.list())]

    def list(self) -> list:
        if self.value is None:
            return []
        if not isinstance(self.value, list):
            raise self.error(f"must be a list, not {type(self.value).__name__}")
        return self.value

    def str(self) -> str:
        if not isinstance(self.value, str):
            raise self.error(f"must be a string, not {json.dumps(self.value)[:40]}")
        return self.value

    def opt_str(self) -> str | None:
        return None if self.value is None else self.str()

    def int(self, low: int | None = None, high: int | None = None) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.error(f"must be an integer, not {json.dumps(self.value)[:40]}")
        if (low is not None and self.value < low) or (high is not None and self.value > high):
            raise self.error(f"{self.value} is out of range [{low}, {high}]")
        return self.value

    def bool(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.error(f"must be true or false, not {json.dumps(self.value)[:40]}")
        return self.value

    def hexstr(self) -> int:
        """A BMv2 hexstring ("0x1f", "-0x1", also plain decimal digits) as an int."""
        text = self.value
        if isinstance(text, int) and not isinstance(text, bool):
            return text
        if not isinstance(text, str):
            raise self.error(f"must be a hex string, not {json.dumps(text)[:40]}")
        try:
            return int(text, 16) if "x" in text.lower() else int(text, 10)
        except ValueError:
            raise self.error(f"not a hex string: {text!r}") from None

    def type_value(self) -> tuple[str, Node]:
        """A BMv2 {"type": ..., "value": ...} object."""
        return self["type"].str(), self.get("value")
