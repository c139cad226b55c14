"""An in-memory stand-in for the control-plane half of `p4switch.runtime.Switch`.

It follows docs/runtime-api.md (names, handles, errors, priorities) closely enough to test the
server's translation of every entity kind on its own, deterministically, whatever state the
real runtime is in. It runs no packets; the integration tests use the real runtime for that.
"""

from __future__ import annotations

import itertools
import threading

from p4switch.runtime import errors
from p4switch.runtime import ExactKey, load_bmv2_json


class FakeSwitch:
    def __init__(self, config=None) -> None:
        self.lock = threading.RLock()
        self._bmv2 = None
        if config is not None:
            self.load_config(config)

    @property
    def has_program(self) -> bool:
        return self._bmv2 is not None

    def load_config(self, config) -> None:
        bmv2 = load_bmv2_json(config)
        widths = {}
        types = {t["name"]: t for t in bmv2["header_types"]}
        for header in bmv2["headers"]:
            for name, width, *_ in types[header["header_type"]]["fields"]:
                widths[(header["name"], name)] = width
        self._actions = {a["name"]: [p["bitwidth"] for p in a["runtime_data"]] for a in bmv2["actions"]}
        self._tables = {}
        self._profiles = {}
        self._const_entries = []
        for pipeline in bmv2["pipelines"]:
            for table in pipeline["tables"]:
                self._tables[table["name"]] = {
                    "keys": [(k["match_type"], widths[tuple(k["target"])]) for k in table["key"]],
                    "actions": list(table["actions"]),
                    "const": bool(table.get("entries")),
                    "max_size": table.get("max_size", 1024),
                    "profile": table.get("action_profile"),
                    "entries": {},
                    "default": (table["actions"][0], ()),
                }
                self._const_entries.append((table["name"], table.get("entries", [])))
            for profile in pipeline.get("action_profiles", []):
                self._profiles[profile["name"]] = {"members": {}, "groups": {}}
        self._counters = {
            c["name"]: [(0, 0)] * c["size"] for c in bmv2["counter_arrays"] if not c["is_direct"]
        }
        self._registers = {
            r["name"]: (r["bitwidth"], [0] * r["size"]) for r in bmv2["register_arrays"]
        }
        self._meters = {m["name"]: m.get("size", 0) for m in bmv2["meter_arrays"]}
        self.vsets = {v["name"]: [] for v in bmv2.get("parse_vsets", [])}
        self.meter_rates: dict = {}
        self._direct_counters: dict = {}
        self._mc: dict[int, list[tuple[int, int]]] = {}
        self._mirrors: dict[int, dict] = {}
        self._handles = itertools.count(1)
        self._bmv2 = bmv2
        names = {a["id"]: a["name"] for a in bmv2["actions"]}
        for table_name, entries in self._const_entries:  # exact-match const entries only
            for entry in entries:
                self._tables[table_name]["entries"][next(self._handles)] = dict(
                    keys=[ExactKey(int(k["key"], 16)) for k in entry["match_key"]],
                    priority=entry.get("priority"),
                    action=names[entry["action_entry"]["action_id"]],
                    params=tuple(int(d, 16) for d in entry["action_entry"]["action_data"]),
                    member=None, group=None,
                )

    # -- names ------------------------------------------------------------------------------------

    @staticmethod
    def _resolve(kind: str, name: str, names) -> str:
        if name in names:
            return name
        found = [n for n in names if n.endswith("." + name)]
        if len(found) != 1:
            raise errors.NotFound(f"{kind} '{name}': candidates {sorted(found)}")
        return found[0]

    def _table(self, name):
        return self._tables[self._resolve("table", name, self._tables)]

    def _check_action(self, table, action, params):
        action = self._resolve("action", action, self._actions)
        if table is not None and action not in table["actions"]:
            raise errors.InvalidArgument(f"action {action} not in table")
        widths = self._actions[action]
        if len(params) != len(widths):
            raise errors.InvalidArgument(f"{action} takes {len(widths)} params")
        for value, width in zip(params, widths):
            if value >> width:
                raise errors.InvalidArgument(f"{value} does not fit {width} bits")
        return action, tuple(params)

    # -- tables -----------------------------------------------------------------------------------

    def tables(self):
        return list(self._tables)

    def _add(self, table_name, keys, target, priority):
        table = self._table(table_name)
        if table["const"]:
            raise errors.PermissionDenied("const table")
        if len(keys) != len(table["keys"]):
            raise errors.InvalidArgument("wrong number of keys")
        needs = any(kind in ("ternary", "range", "optional") for kind, _ in table["keys"])
        if needs and (priority is None or priority < 1):
            raise errors.InvalidArgument("priority needed")
        for entry in table["entries"].values():
            if entry["keys"] == list(keys) and entry["priority"] == priority:
                raise errors.AlreadyExists("duplicate key")
        if len(table["entries"]) >= table["max_size"]:
            raise errors.ResourceExhausted("table full")
        handle = next(self._handles)
        table["entries"][handle] = dict(keys=list(keys), priority=priority, **target)
        return handle

    def table_add(self, table, keys, action, params=(), priority=None):
        action, params = self._check_action(self._table(table), action, params)
        return self._add(table, keys, dict(action=action, params=params, member=None, group=None), priority)

    def table_add_member(self, table, keys, member, priority=None):
        return self._add(table, keys, dict(action=None, params=(), member=member, group=None), priority)

    def table_add_group(self, table, keys, group, priority=None):
        return self._add(table, keys, dict(action=None, params=(), member=None, group=group), priority)

    def _entry(self, table, handle):
        entries = self._table(table)["entries"]
        if handle not in entries:
            raise errors.NotFound(f"no entry {handle}")
        return entries[handle]

    def table_modify(self, table, handle, action, params=()):
        entry = self._entry(table, handle)
        entry["action"], entry["params"] = self._check_action(self._table(table), action, params)

    def table_delete(self, table, handle):
        self._entry(table, handle)
        del self._table(table)["entries"][handle]
        self._direct_counters.pop((table, handle), None)

    def table_find(self, table, keys, priority=None):
        for handle, entry in self._table(table)["entries"].items():
            if entry["keys"] == list(keys) and entry["priority"] == priority:
                return handle
        return None

    def table_entries(self, table):
        from types import SimpleNamespace

        return [
            SimpleNamespace(handle=h, keys=tuple(e["keys"]), action=e["action"], params=e["params"],
                            priority=e["priority"], member=e["member"], group=e["group"])
            for h, e in self._table(table)["entries"].items()
        ]

    def table_set_default(self, table, action, params=()):
        self._table(table)["default"] = self._check_action(self._table(table), action, params)

    def table_reset_default(self, table):
        t = self._table(table)
        t["default"] = (t["actions"][0], ())

    def table_set_default_member(self, table, member):
        self._table(table)["default"] = ("member", member)

    def table_set_default_group(self, table, group):
        self._table(table)["default"] = ("group", group)

    def table_get_default(self, table):
        return self._table(table)["default"]

    # -- direct resources -------------------------------------------------------------------------

    def direct_counter_read(self, table, handle):
        self._entry(table, handle)
        return self._direct_counters.get((table, handle), (0, 0))

    def direct_counter_write(self, table, handle, packets, octets):
        self._entry(table, handle)
        self._direct_counters[(table, handle)] = (packets, octets)

    def direct_meter_set_rates(self, table, handle, rates):
        self._entry(table, handle)
        self.meter_rates[(table, handle)] = rates

    # -- action profiles --------------------------------------------------------------------------

    def _profile(self, name):
        return self._profiles[self._resolve("action profile", name, self._profiles)]

    def act_prof_add_member(self, profile, action, params=()):
        handle = next(self._handles)
        self._profile(profile)["members"][handle] = self._check_action(None, action, params)
        return handle

    def act_prof_modify_member(self, profile, member, action, params=()):
        self._profile(profile)["members"][member] = self._check_action(None, action, params)

    def act_prof_delete_member(self, profile, member):
        for name, table in self._tables.items():
            if any(e["member"] == member for e in table["entries"].values()):
                raise errors.FailedPrecondition(f"member {member} is used by table '{name}'")
        state = self._profile(profile)
        del state["members"][member]
        for members in state["groups"].values():
            if member in members:
                members.remove(member)

    def act_prof_create_group(self, profile):
        handle = next(self._handles)
        self._profile(profile)["groups"][handle] = []
        return handle

    def act_prof_delete_group(self, profile, group):
        del self._profile(profile)["groups"][group]

    def act_prof_add_member_to_group(self, profile, member, group):
        self._profile(profile)["groups"][group].append(member)

    def act_prof_remove_member_from_group(self, profile, member, group):
        self._profile(profile)["groups"][group].remove(member)

    def act_prof_members(self, profile):
        return dict(self._profile(profile)["members"])

    def act_prof_groups(self, profile):
        return {g: list(m) for g, m in self._profile(profile)["groups"].items()}

    # -- externs ----------------------------------------------------------------------------------

    def _cell(self, cells, index):
        if not 0 <= index < len(cells):
            raise errors.InvalidArgument(f"index {index} out of range")

    def counter_read(self, name, index):
        cells = self._counters[self._resolve("counter", name, self._counters)]
        self._cell(cells, index)
        return cells[index]

    def counter_write(self, name, index, packets, octets):
        cells = self._counters[self._resolve("counter", name, self._counters)]
        self._cell(cells, index)
        cells[index] = (packets, octets)

    def register_read(self, name, index):
        _, cells = self._registers[self._resolve("register", name, self._registers)]
        self._cell(cells, index)
        return cells[index]

    def register_read_all(self, name):
        return list(self._registers[self._resolve("register", name, self._registers)][1])

    def register_write(self, name, index, value):
        width, cells = self._registers[self._resolve("register", name, self._registers)]
        self._cell(cells, index)
        if value >> width:
            raise errors.InvalidArgument("value too wide")
        cells[index] = value

    def meter_set_rates(self, name, index, rates):
        size = self._meters[self._resolve("meter", name, self._meters)]
        self._cell(range(size), index)
        self.meter_rates[(name, index)] = rates

    # -- packet replication -----------------------------------------------------------------------

    def mc_group_set(self, mgid, replicas):
        self._mc[mgid] = list(replicas)

    def mc_group_get(self, mgid):
        if mgid not in self._mc:
            raise errors.NotFound(f"group {mgid}")
        return list(self._mc[mgid])

    def mc_group_remove(self, mgid):
        if mgid not in self._mc:
            raise errors.NotFound(f"group {mgid}")
        del self._mc[mgid]

    def mc_groups(self):
        return sorted(self._mc)

    def mirroring_add(self, session, port=None, mgid=None):
        self._mirrors[session] = {"port": port, "mgid": mgid}

    def mirroring_delete(self, session):
        if session not in self._mirrors:
            raise errors.NotFound(f"session {session}")
        del self._mirrors[session]

    def mirroring_get(self, session):
        return self._mirrors.get(session)

    # -- parser value sets ------------------------------------------------------------------------

    def parse_vset_add(self, name, value, mask=None):
        members = self.vsets[self._resolve("parse value set", name, self.vsets)]
        if (value, mask) not in members:
            members.append((value, mask))

    def parse_vset_remove(self, name, value, mask=None):
        members = self.vsets[self._resolve("parse value set", name, self.vsets)]
        if (value, mask) not in members:
            raise errors.NotFound(f"no {value:#x}")
        members.remove((value, mask))
