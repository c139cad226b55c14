"""P4Runtime `Action` messages <-> (BMv2 JSON action name, parameter ints), checked against P4Info.

Used by table entries, default entries and action profile members alike: the caller says which
action ids are allowed where (a table's action refs, or those of every table sharing a profile).
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import INVALID_ARGUMENT, RequestError
from .pipeline import Pipeline


def decode_action(
    pipeline: Pipeline, action: p4runtime_pb2.Action, allowed: set[int], where: str
) -> tuple[str, tuple[int, ...]]:
    """(JSON action name, params in declaration order) for an Action allowed in `where`."""
    if not action.action_id:
        raise RequestError(INVALID_ARGUMENT, f"{where}: action id is 0 / missing")
    info = pipeline.index.action(action.action_id)
    name = info.preamble.name
    if action.action_id not in allowed:
        raise RequestError(INVALID_ARGUMENT, f"{where}: action '{name}' is not allowed here")
    values: dict[int, int] = {}
    for param in action.params:
        spec = pipeline.index.action_param(info, param.param_id)
        pipeline.index.refuse_translated(spec, f"{where}: action '{name}' parameter '{spec.name}'")
        if spec.id in values:
            raise RequestError(
                INVALID_ARGUMENT, f"{where}: action '{name}' parameter '{spec.name}' given twice"
            )
        values[spec.id] = bytestrings.decode(
            param.value, spec.bitwidth, f"{where}: action '{name}' parameter '{spec.name}'"
        )
    missing = [p.name for p in info.params if p.id not in values]
    if missing:
        raise RequestError(
            INVALID_ARGUMENT,
            f"{where}: action '{name}' is missing parameter(s) {', '.join(missing)}",
        )
    return pipeline.json_name(info), tuple(values[p.id] for p in info.params)


def encode_action(
    pipeline: Pipeline,
    json_name: str,
    params: tuple[int, ...] | list[int],
    allowed: set[int],
    message: p4runtime_pb2.Action,
) -> None:
    """Fill `message` with an action the runtime reports by JSON name (filled in place:
    copying messages is what makes pure-Python protobuf slow)."""
    info = action_by_json_name(pipeline, json_name, allowed)
    message.action_id = info.preamble.id
    for spec, value in zip(info.params, params):
        message.params.add(param_id=spec.id, value=bytestrings.encode(value))


def action_by_json_name(pipeline: Pipeline, json_name: str, allowed: set[int]) -> p4info_pb2.Action:
    """The P4Info action (among `allowed`) the runtime calls `json_name`."""
    candidates = [pipeline.index.action(i) for i in sorted(allowed)]
    for info in candidates:
        if pipeline.json_name(info) == json_name:
            return info
    for info in candidates:  # the runtime may report a shorter or a longer form of the name
        full = pipeline.json_name(info)
        if full.endswith("." + json_name) or json_name.endswith("." + full):
            return info
    raise RequestError(
        INVALID_ARGUMENT, f"runtime reports action '{json_name}', which the P4Info does not know"
    )
