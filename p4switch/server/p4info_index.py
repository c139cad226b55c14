"""P4Info indexed once, by id and by name, so request handling is a dictionary lookup.

Lookups raise `RequestError(NOT_FOUND)` naming the kind and id, which is exactly what a client
that sends a stale or wrong id should see. The index is immutable: a new pipeline config builds
a new index.
"""

from __future__ import annotations

from typing import Iterable

from p4.config.v1 import p4info_pb2

from .errors import INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED, RequestError

# The repeated P4Info fields that hold entities with a preamble, and a readable kind for each.
ENTITY_KINDS = {
    "tables": "table",
    "actions": "action",
    "action_profiles": "action profile",
    "counters": "counter",
    "direct_counters": "direct counter",
    "meters": "meter",
    "direct_meters": "direct meter",
    "controller_packet_metadata": "controller packet metadata",
    "value_sets": "value set",
    "registers": "register",
    "digests": "digest",
}


class P4InfoIndex:
    """Read-only views of one P4Info: `get(kind, id)`, `by_name(kind, name)`, per-table helpers."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_id: dict[str, dict[int, object]] = {}
        self._by_name: dict[str, dict[str, object]] = {}
        seen_ids: dict[int, str] = {}
        for field, kind in ENTITY_KINDS.items():
            ids: dict[int, object] = {}
            names: dict[str, object] = {}
            for entity in getattr(p4info, field):
                pid = entity.preamble.id
                if pid in seen_ids:
                    raise RequestError(
                        INVALID_ARGUMENT,
                        f"P4Info: id {pid} used by {seen_ids[pid]} and {kind} "
                        f"'{entity.preamble.name}'",
                    )
                seen_ids[pid] = f"{kind} '{entity.preamble.name}'"
                ids[pid] = entity
                names[entity.preamble.name] = entity
            self._by_id[kind] = ids
            self._by_name[kind] = names
        self._match_fields = {
            t.preamble.id: {f.id: f for f in t.match_fields} for t in p4info.tables
        }
        self._params = {a.preamble.id: {p.id: p for p in a.params} for a in p4info.actions}
        self._direct_owner = {
            d.preamble.id: d.direct_table_id
            for d in list(p4info.direct_counters) + list(p4info.direct_meters)
        }

    # -- types made by `type` (type_info.new_types) --------------------------------------------

    def refuse_translated(self, named, what: str) -> None:
        """Refuse a match field, parameter or packet metadata field whose type has
        @p4runtime_translation: its P4Info width is the controller's, not the data plane's, and
        the server does not translate (simple_switch_grpc does not either)."""
        name = named.type_name.name if named.HasField("type_name") else ""
        new = self.p4info.type_info.new_types.get(name) if name else None
        if new is not None and new.HasField("translated_type"):
            raise RequestError(
                UNIMPLEMENTED,
                f"{what} is of type {name}, which has @p4runtime_translation"
                f'("{new.translated_type.uri}"): this server does not translate values '
                "(nor does simple_switch_grpc)",
            )

    def new_type_bitwidth(self, name: str) -> int | None:
        """The data plane's width of a type made by `type` (None when translated or unknown)."""
        new = self.p4info.type_info.new_types.get(name)
        if new is None or not new.HasField("original_type"):
            return None
        original = new.original_type
        if original.HasField("bool"):
            return 1
        kind = original.bitstring.WhichOneof("type_spec")
        return getattr(original.bitstring, kind).bitwidth if kind in ("bit", "int") else None

    # -- generic lookups ------------------------------------------------------------------------

    def get(self, kind: str, entity_id: int):
        try:
            return self._by_id[kind][entity_id]
        except KeyError:
            raise RequestError(NOT_FOUND, f"no {kind} with id {entity_id} in the P4Info") from None

    def all(self, kind: str) -> list:
        return list(self._by_id[kind].values())

    def by_name(self, kind: str, name: str):
        """The entity of this kind called `name`, its alias, or a unique dot-separated suffix."""
        names = self._by_name[kind]
        if name in names:
            return names[name]
        matches = [
            e for full, e in names.items()
            if e.preamble.alias == name or full.endswith("." + name)
        ]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise RequestError(NOT_FOUND, f"no {kind} named '{name}' in the P4Info")
        raise RequestError(
            INVALID_ARGUMENT,
            f"{kind} name '{name}' is ambiguous: "
            + ", ".join(sorted(e.preamble.name for e in matches)),
        )

    # -- tables and actions ---------------------------------------------------------------------

    def table(self, table_id: int) -> p4info_pb2.Table:
        return self.get("table", table_id)

    def action(self, action_id: int) -> p4info_pb2.Action:
        return self.get("action", action_id)

    def match_field(self, table: p4info_pb2.Table, field_id: int) -> p4info_pb2.MatchField:
        try:
            return self._match_fields[table.preamble.id][field_id]
        except KeyError:
            raise RequestError(
                INVALID_ARGUMENT,
                f"table '{table.preamble.name}' has no match field with id {field_id}",
            ) from None

    def action_param(self, action: p4info_pb2.Action, param_id: int) -> p4info_pb2.Action.Param:
        try:
            return self._params[action.preamble.id][param_id]
        except KeyError:
            raise RequestError(
                INVALID_ARGUMENT,
                f"action '{action.preamble.name}' has no parameter with id {param_id}",
            ) from None

    def table_action_ids(self, table: p4info_pb2.Table) -> set[int]:
        return {ref.id for ref in table.action_refs}

    def direct_resource(self, table: p4info_pb2.Table, kind: str):
        """The table's direct counter or direct meter (`kind`), or None."""
        for rid in table.direct_resource_ids:
            entity = self._by_id[kind].get(rid)
            if entity is not None:
                return entity
        return None

    def direct_table_id(self, resource_id: int) -> int:
        return self._direct_owner[resource_id]

    def action_profile_of(self, table: p4info_pb2.Table):
        """The action profile implementing an indirect table, or None for a direct table."""
        if not table.implementation_id:
            return None
        return self.get("action profile", table.implementation_id)

    def controller_header(self, name: str):
        """The `controller_packet_metadata` called `name` ("packet_in"/"packet_out"), or None."""
        for header in self.p4info.controller_packet_metadata:
            if header.preamble.name == name:
                return header
        return None

    def names(self, kind: str) -> Iterable[str]:
        return self._by_name[kind].keys()
