"""MLCommons Chakra execution traces (ET) in and out of a workload graph (docs/workloads.md).

The files: one per rank, `PREFIX.<rank>.et`, each a sequence of length-delimited protobuf
messages (a varint byte count, then the message; protobuf's "delimited" encoding): first a
`GlobalMetadata` (schema version "0.0.4"), then the `Node`s. The message classes are built
in code from the schema's facts (inaemu/workload/chakra_schema.py says how and why).

Reading (`read_chakra`), node by node:
- COMP_NODE -> Compute; duration from `duration_micros` (0 s if the node has none, noted;
  ASTRA-sim's roofline inputs `num_ops`/`tensor_size` are not turned into time). A CPU op
  (`is_cpu_op` true) is compute like any other: the graph has one compute stream per rank.
- COMM_COLL_NODE -> Collective; the kind is the `comm_type` attribute's enum name in lower
  case (ALL_REDUCE -> "all_reduce"; ALL_GATHER -> "all_gather", which the graph then refuses
  by name), the size the `comm_size` attribute in bytes. An all-reduce size that is not whole
  float32 values is rounded up to a multiple of 4 and the rounding is noted in
  `Workload.meta["notes"]`. A collective's own `duration_micros` is not read: the emulator
  measures it.
- METADATA_NODE carries no time and no data: it is dropped, and a node that depended on it
  depends on what it depended on (so ordering through it is kept).
- every other type (MEM_LOAD_NODE, MEM_STORE_NODE, COMM_SEND_NODE, COMM_RECV_NODE,
  INVALID_NODE, unknown numbers) takes time or moves data the graph cannot model: a
  WorkloadError names the file, node and type.
Dependencies are `data_deps` and `ctrl_deps` together (ASTRA-sim's current feeder honours
both). A file that is missing, cut short or not protobuf gives a WorkloadError naming the file
and the byte offset of the message.

Writing (`write_chakra`): GlobalMetadata version "0.0.4", then per node a COMP_NODE with
`duration_micros`, or a COMM_COLL_NODE with the attributes `is_cpu_op` (false), `comm_type`
and `comm_size` (int64, as ASTRA-sim's microbenchmark generators write them); the graph's
dependencies go to `ctrl_deps`. `durations` {(rank, node id): seconds} overrides the written
durations with measured ones (a compute node's or a collective's), so a run writes what it
measured.
"""

from __future__ import annotations

import math
from pathlib import Path

from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from inaemu.workload import chakra_schema as schema
from inaemu.workload.graph import Collective, Compute, Node, RankGraph, Workload, WorkloadError

__all__ = ["read_chakra", "write_chakra", "rank_path"]

_COMP = schema.NODE_TYPES["COMP_NODE"]
_COLL = schema.NODE_TYPES["COMM_COLL_NODE"]
_METADATA = schema.NODE_TYPES["METADATA_NODE"]
_INT_VALUES = ("int64_val", "int32_val", "uint64_val", "uint32_val", "sint64_val",
               "sint32_val", "fixed64_val", "fixed32_val", "sfixed64_val", "sfixed32_val")


def rank_path(prefix: str | Path, rank: int) -> Path:
    """The file of one rank: `PREFIX.<rank>.et` (ASTRA-sim's naming)."""
    prefix = Path(prefix)
    return prefix.with_name(f"{prefix.name}.{rank}.et")


# --- the delimited stream -------------------------------------------------------------------

def _varint(data: bytes, offset: int) -> tuple[int, int] | None:
    """The varint at `offset` and the offset after it; None if the data ends inside it;
    ValueError if it is longer than 10 bytes."""
    value = shift = 0
    for index in range(offset, min(len(data), offset + 10)):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index + 1
        shift += 7
    if len(data) - offset >= 10:
        raise ValueError("a length prefix longer than 10 bytes")
    return None


def _messages(path: Path, data: bytes):
    """(offset, message bytes) for each length-delimited message of the file."""
    offset = 0
    index = 0
    while offset < len(data):
        try:
            got = _varint(data, offset)
        except ValueError as err:
            raise WorkloadError(f"{path}: message {index} at byte {offset}: {err}") from None
        if got is None:
            raise WorkloadError(f"{path}: message {index} at byte {offset}: the file ends "
                                "inside its length prefix (truncated)")
        length, start = got
        if start + length > len(data):
            raise WorkloadError(f"{path}: message {index} at byte {offset}: says {length} "
                                f"bytes but only {len(data) - start} are left (truncated)")
        yield offset, data[start:start + length]
        offset = start + length
        index += 1


def _delimited(message) -> bytes:
    body = message.SerializeToString()
    length = len(body)
    prefix = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            prefix.append(byte | 0x80)
        else:
            prefix.append(byte)
            return bytes(prefix) + body


# --- reading ----------------------------------------------------------------------------------

def _parse(cls, path: Path, offset: int, body: bytes, what: str):
    message = cls()
    try:
        message.ParseFromString(body)
    except DecodeError as err:
        raise WorkloadError(f"{path}: {what} at byte {offset} is not a Chakra "
                            f"{cls.DESCRIPTOR.name} ({err})") from None
    return message


def _int_attr(attr) -> int | None:
    which = attr.WhichOneof("value")
    if which in _INT_VALUES:
        return int(getattr(attr, which))
    return None


def _read_rank(path: Path, rank: int, notes: list[str]) -> tuple[RankGraph, str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such file (the trace of rank {rank})") from None
    except OSError as err:
        raise WorkloadError(f"{path}: cannot read: {err}") from None
    stream = _messages(path, data)
    first = next(stream, None)
    if first is None:
        raise WorkloadError(f"{path}: empty file at byte 0 (no GlobalMetadata)")
    metadata = schema.GlobalMetadata()
    try:
        metadata.ParseFromString(first[1])
        unknown = len(UnknownFieldSet(metadata))
        wrong = f"{unknown} field(s) it does not have" if unknown else ""
    except DecodeError as err:
        wrong = str(err)
    if wrong:
        raise WorkloadError(f"{path}: the first message at byte 0 is not a GlobalMetadata "
                            f"({wrong}); a Chakra trace before schema 0.0.4, which had none?")
    version = metadata.version
    if not version:                 # e.g. ASTRA-sim's custom-collective traces: attr "schema"
        schema_attr = [a.string_val for a in metadata.attr if a.name == "schema"]
        version = schema_attr[0] if schema_attr and schema_attr[0] else "unspecified"

    raw: list[tuple[int, object]] = []              # (offset, Node)
    for offset, body in stream:
        raw.append((offset, _parse(schema.Node, path, offset, body, "a node")))

    dropped: dict[int, list[int]] = {}               # METADATA_NODE id -> its dependencies
    for offset, node in raw:
        if node.type == _METADATA:
            dropped[node.id] = list(node.data_deps) + list(node.ctrl_deps)
    through: dict[int, list[int]] = {}               # METADATA_NODE id -> what it stands for

    def resolve(deps) -> list[int]:
        """`deps` with each METADATA_NODE replaced by what it depends on (transitively;
        iterative and memoised, so long chains neither recurse deeply nor repeat work)."""
        out: list[int] = []
        for dep in deps:
            if dep not in dropped:
                out.append(dep)
                continue
            if dep not in through:
                stack, done = [dep], set()
                while stack:
                    top = stack[-1]
                    pending = [d for d in dropped[top] if d in dropped and d not in through
                               and d not in done and d not in stack]
                    if pending:
                        stack += pending
                        continue
                    stack.pop()
                    done.add(top)
                    mine: list[int] = []
                    for d in dropped[top]:
                        mine += through.get(d, []) if d in dropped else [d]
                    through[top] = list(dict.fromkeys(mine))
            out += through[dep]
        return out

    nodes: list[Node] = []
    no_duration = 0
    for offset, node in raw:
        if node.type == _METADATA:
            continue
        where = f"{path}: node {node.id} ({node.name or 'unnamed'}) at byte {offset}"
        deps = tuple(dict.fromkeys(resolve(list(node.data_deps) + list(node.ctrl_deps))))
        if node.type == _COMP:
            if node.duration_micros == 0:       # proto3: absent and 0 are the same
                no_duration += 1
            nodes.append(Compute(node.id, node.duration_micros / 1e6, deps, node.name))
            continue
        if node.type != _COLL:
            kind = schema.NODE_TYPE_NAMES.get(node.type, f"unknown type {node.type}")
            raise WorkloadError(f"{where}: a {kind} cannot be run (only COMP_NODE and "
                                "COMM_COLL_NODE, and METADATA_NODE which is skipped)")
        attrs = {a.name: a for a in node.attr}
        if "comm_type" not in attrs:
            raise WorkloadError(f"{where}: a COMM_COLL_NODE without a comm_type attribute")
        comm_type = _int_attr(attrs["comm_type"])
        if comm_type not in schema.COLLECTIVE_COMM_TYPE_NAMES:
            raise WorkloadError(f"{where}: comm_type {comm_type!r} is not a "
                                "CollectiveCommType")
        kind = schema.COLLECTIVE_COMM_TYPE_NAMES[comm_type].lower()
        size = _int_attr(attrs["comm_size"]) if "comm_size" in attrs else None
        if size is None:
            if kind == "all_reduce":
                raise WorkloadError(f"{where}: an ALL_REDUCE without an integer comm_size "
                                    "attribute")
            size = 0
        if kind == "all_reduce" and size % 4:
            rounded = size + (-size % 4)
            notes.append(f"rank {rank}, node {node.id}: an all-reduce of {size} bytes is not "
                         f"whole float32 values; rounded up to {rounded} bytes")
            size = rounded
        nodes.append(Collective(node.id, kind, size, deps, node.name))
    if no_duration:
        notes.append(f"rank {rank}: {no_duration} compute node(s) without a duration_micros "
                     "(or 0) read as 0 s")
    try:
        graph = RankGraph(rank, tuple(nodes))
    except WorkloadError as err:
        raise WorkloadError(f"{path}: {err}") from None
    return graph, version


def read_chakra(prefix: str | Path, *, ranks: int | None = None) -> Workload:
    """The workload of the Chakra traces `PREFIX.<rank>.et`: ranks 0, 1, ... until the next
    file is missing, or exactly `ranks` of them (a missing one is then an error)."""
    if ranks is not None and ranks < 1:
        raise WorkloadError(f"ranks must be >= 1, got {ranks}")
    graphs: list[RankGraph] = []
    versions: list[str] = []
    files: list[Path] = []
    notes: list[str] = []
    rank = 0
    while ranks is None or rank < ranks:
        path = rank_path(prefix, rank)
        if ranks is None and rank > 0 and not path.exists():
            break
        graph, version = _read_rank(path, rank, notes)
        graphs.append(graph)
        versions.append(version)
        files.append(path)
        rank += 1
    distinct = sorted(set(versions))
    version = distinct[0] if len(distinct) == 1 else "/".join(distinct)
    name = Path(prefix).name
    shown = str(files[0]) if len(files) == 1 else \
        f"{rank_path(prefix, 0)} .. {files[-1].name} ({len(files)} files)"
    source = f"Chakra ET schema {version}: {shown}"
    try:
        workload = Workload(name, tuple(graphs), source)
    except WorkloadError as err:
        raise WorkloadError(f"{prefix}: {err}") from None
    workload.meta.update({"format": "chakra", "chakra_version": version,
                          "files": [str(f) for f in files], "notes": notes})
    return workload


# --- writing ----------------------------------------------------------------------------------

def _attr(name: str, **value):
    return schema.AttributeProto(name=name, **value)


def _micros(seconds: float, where: str) -> int:
    if not (seconds >= 0 and math.isfinite(seconds)):
        raise WorkloadError(f"{where}: a duration must be a finite number >= 0, got "
                            f"{seconds!r}")
    return round(seconds * 1e6)


def write_chakra(workload: Workload, prefix: str | Path, *,
                 durations: dict[tuple[int, int], float] | None = None) -> list[Path]:
    """Write `PREFIX.<rank>.et` for every rank of `workload`; the files written. `durations`
    {(rank, node id): seconds} replaces the written durations (what a run measured)."""
    durations = dict(durations or {})
    known = {(g.rank, n.id) for g in workload.ranks for n in g.nodes}
    unknown = sorted(set(durations) - known)
    if unknown:
        raise WorkloadError(f"{workload.name}: durations for nodes the workload does not "
                            f"have: {unknown[:8]} (keys are (rank, node id))")
    written = []
    for graph in workload.ranks:
        out = bytearray(_delimited(schema.GlobalMetadata(version=schema.SCHEMA_VERSION)))
        for node in graph.nodes:
            where = f"{workload.name}: rank {graph.rank}, node {node.id}"
            if node.id < 0:
                raise WorkloadError(f"{where}: Chakra node ids are unsigned")
            message = schema.Node(id=node.id, name=node.name, ctrl_deps=list(node.deps))
            if isinstance(node, Compute):
                message.type = _COMP
                message.duration_micros = _micros(
                    durations.get((graph.rank, node.id), node.duration_s), where)
            else:
                comm = node.kind.upper()
                if comm not in schema.COLLECTIVE_COMM_TYPES:
                    raise WorkloadError(f"{where}: collective {node.kind!r} has no Chakra "
                                        "CollectiveCommType")
                message.type = _COLL
                message.attr.extend([
                    _attr("is_cpu_op", bool_val=False),
                    _attr("comm_type", int64_val=schema.COLLECTIVE_COMM_TYPES[comm]),
                    _attr("comm_size", int64_val=node.size_bytes)])
                if (graph.rank, node.id) in durations:
                    message.duration_micros = _micros(durations[graph.rank, node.id], where)
            out += _delimited(message)
        path = rank_path(prefix, graph.rank)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(out))
        written.append(path)
    return written
