"""Chakra execution traces in and out: a DDP workload's round trip, the wire layout, what is
read from hand-made traces (ASTRA-sim's microbenchmark shape, other node types, odd sizes),
and files that are missing, cut short or not protobuf."""

from __future__ import annotations

import pytest

from inaemu.workload import chakra_schema as schema
from inaemu.workload.chakra import _delimited, rank_path, read_chakra, write_chakra
from inaemu.workload.graph import (Collective, Compute, RankGraph, Workload, WorkloadError,
                                   ddp_iteration)

BUCKETS = [(0.0031, 25 * 1024 * 1024), (0.0042, 24 * 1024 * 1024), (0.0007, 1_000_004)]


def ddp_workload(ranks: int = 4) -> Workload:
    graphs = tuple(RankGraph(r, tuple(ddp_iteration(
        r, 0.0123456 + r * 1e-6, [(s + r * 3e-6, b) for s, b in BUCKETS], optimizer_s=0.0021)))
        for r in range(ranks))
    return Workload("ddp", graphs, "test")


def node(id, type, name="", *, ctrl=(), data=(), micros=0, attrs=()):
    message = schema.Node(id=id, name=name or f"n{id}", type=schema.NODE_TYPES[type],
                          ctrl_deps=list(ctrl), data_deps=list(data), duration_micros=micros)
    for name, kind, value in attrs:
        message.attr.append(schema.AttributeProto(name=name, **{f"{kind}_val": value}))
    return message


def coll(id, comm_type, size, **kw):
    attrs = [("is_cpu_op", "bool", False),
             ("comm_type", "int64", schema.COLLECTIVE_COMM_TYPES[comm_type])]
    if size is not None:
        attrs.append(("comm_size", "int64", size))
    return node(id, "COMM_COLL_NODE", attrs=attrs, **kw)


def write_raw(prefix, ranks, nodes, version="0.0.4") -> list[bytes]:
    """Each rank's file: a GlobalMetadata then `nodes(rank)`; the parts of rank 0's file."""
    for rank in range(ranks):
        parts = [_delimited(schema.GlobalMetadata(version=version))]
        parts += [_delimited(n) for n in nodes(rank)]
        rank_path(prefix, rank).write_bytes(b"".join(parts))
        if rank == 0:
            first = parts
    return first


def test_ddp_round_trip(tmp_path):
    original = ddp_workload(4)
    files = write_chakra(original, tmp_path / "ddp")
    assert [f.name for f in files] == [f"ddp.{r}.et" for r in range(4)]
    back = read_chakra(tmp_path / "ddp")
    assert back.n == 4
    for mine, theirs in zip(original.ranks, back.ranks):
        assert len(mine.nodes) == len(theirs.nodes)
        for a, b in zip(mine.nodes, theirs.nodes):
            assert type(a) is type(b)
            assert (a.id, a.deps, a.name) == (b.id, b.deps, b.name)
            if isinstance(a, Compute):
                assert abs(a.duration_s - b.duration_s) <= 0.5e-6
                assert b.duration_s == round(a.duration_s * 1e6) / 1e6
            else:
                assert (a.kind, a.size_bytes) == (b.kind, b.size_bytes)
    assert back.allreduce_bytes() == original.allreduce_bytes()
    assert back.meta["chakra_version"] == "0.0.4"
    assert back.meta["files"] == [str(f) for f in files]
    assert back.meta["notes"] == []
    assert "0.0.4" in back.source and "ddp.0.et" in back.source and "ddp.3.et" in back.source


def test_files_start_with_a_length_delimited_global_metadata(tmp_path):
    write_chakra(ddp_workload(2), tmp_path / "w")
    data = rank_path(tmp_path / "w", 1).read_bytes()
    # length 7, then field 1 (version, length-delimited) of 5 bytes
    assert data[:8] == b"\x07\x0a\x050.0.4"
    first = schema.Node()
    first.ParseFromString(data[9:9 + data[8]])
    assert first.type == schema.NODE_TYPES["COMP_NODE"] and first.name == "forward"


def test_written_collectives_look_like_astra_sims(tmp_path):
    write_chakra(ddp_workload(1), tmp_path / "w")
    data = rank_path(tmp_path / "w", 0).read_bytes()
    offset, nodes = 8, []
    while offset < len(data):
        n = schema.Node()
        n.ParseFromString(data[offset + 1:offset + 1 + data[offset]])
        nodes.append(n)
        offset += 1 + data[offset]
    reduce = next(n for n in nodes if n.type == schema.NODE_TYPES["COMM_COLL_NODE"])
    assert [(a.name, a.WhichOneof("value")) for a in reduce.attr] == [
        ("is_cpu_op", "bool_val"), ("comm_type", "int64_val"), ("comm_size", "int64_val")]
    assert (reduce.attr[0].bool_val, reduce.attr[1].int64_val, reduce.attr[2].int64_val) == \
        (False, 0, 25 * 1024 * 1024)
    assert list(reduce.ctrl_deps) == [1] and not reduce.data_deps


def test_astra_sim_style_microbenchmark_all_reduce(tmp_path):
    """The shape of ASTRA-sim's microbenchmarks/all_reduce/<n>npus_1MB traces: per rank one
    COMM_COLL_NODE (id = the rank), ALL_REDUCE of 1 MiB, no compute."""
    write_raw(tmp_path / "all_reduce", 8,
              lambda r: [coll(r, "ALL_REDUCE", 1 << 20, )])
    workload = read_chakra(tmp_path / "all_reduce")
    assert workload.n == 8
    assert workload.allreduce_bytes() == [1 << 20]
    assert [g.nodes for g in workload.ranks][3] == (
        Collective(3, "all_reduce", 1 << 20, (), "n3"),)
    assert workload.total_compute_s() == 0


def test_rank_count(tmp_path):
    write_chakra(ddp_workload(4), tmp_path / "w")
    assert read_chakra(tmp_path / "w", ranks=2).n == 2
    rank_path(tmp_path / "w", 2).unlink()
    assert read_chakra(tmp_path / "w").n == 2            # stops at the first missing file


def test_missing_rank_file(tmp_path):
    write_chakra(ddp_workload(4), tmp_path / "w")
    with pytest.raises(WorkloadError, match=r"w\.4\.et: no such file"):
        read_chakra(tmp_path / "w", ranks=5)
    with pytest.raises(WorkloadError, match=r"nothing\.0\.et: no such file"):
        read_chakra(tmp_path / "nothing")


@pytest.mark.parametrize("comm_type, kind, refusal", [
    ("ALL_GATHER", "all_gather", "not supported yet"),
    ("REDUCE_SCATTER", "reduce_scatter", "not supported yet"),
    ("GATHER", "gather", "not supported yet")])
def test_other_collectives_are_refused_by_name(tmp_path, comm_type, kind, refusal):
    write_raw(tmp_path / "c", 2, lambda r: [coll(0, comm_type, 1 << 20)])
    with pytest.raises(WorkloadError, match=rf"c\.0\.et: .*collective '{kind}' is {refusal}"):
        read_chakra(tmp_path / "c")


@pytest.mark.parametrize("type", ["MEM_LOAD_NODE", "MEM_STORE_NODE", "COMM_SEND_NODE",
                                  "COMM_RECV_NODE", "INVALID_NODE"])
def test_other_node_types_are_refused(tmp_path, type):
    parts = write_raw(tmp_path / "t", 1, lambda r: [node(0, "COMP_NODE", micros=5),
                                                     node(1, type, "the one", ctrl=[0])])
    offset = len(parts[0]) + len(parts[1])
    with pytest.raises(WorkloadError, match=rf"t\.0\.et: node 1 \(the one\) at byte {offset}: "
                                            rf"a {type} cannot be run"):
        read_chakra(tmp_path / "t")


def test_metadata_nodes_are_skipped_keeping_the_order(tmp_path):
    write_raw(tmp_path / "m", 1, lambda r: [
        node(0, "COMP_NODE", micros=10), node(1, "METADATA_NODE", data=[0]),
        node(2, "METADATA_NODE", ctrl=[1]), coll(3, "ALL_REDUCE", 64, data=[2])])
    graph = read_chakra(tmp_path / "m").ranks[0]
    assert [n.id for n in graph.nodes] == [0, 3]
    assert graph.nodes[1].deps == (0,)


def test_data_and_ctrl_deps_both_count(tmp_path):
    write_raw(tmp_path / "d", 1, lambda r: [
        node(0, "COMP_NODE", micros=1), node(1, "COMP_NODE", micros=2),
        coll(2, "ALL_REDUCE", 16, data=[0], ctrl=[1, 0])])
    assert read_chakra(tmp_path / "d").ranks[0].nodes[2].deps == (0, 1)


def test_odd_sizes_round_up_to_float32_and_say_so(tmp_path):
    write_raw(tmp_path / "o", 2, lambda r: [coll(0, "ALL_REDUCE", 1001)])
    workload = read_chakra(tmp_path / "o")
    assert workload.allreduce_bytes() == [1004]
    assert any("1001 bytes" in n and "1004" in n for n in workload.meta["notes"])


def test_compute_without_duration_reads_as_zero_and_says_so(tmp_path):
    write_raw(tmp_path / "z", 1, lambda r: [node(0, "COMP_NODE"), node(1, "COMP_NODE",
                                                                        micros=3, ctrl=[0])])
    workload = read_chakra(tmp_path / "z")
    assert [n.duration_s for n in workload.ranks[0].nodes] == [0.0, 3e-6]
    assert any("without a duration_micros" in n for n in workload.meta["notes"])


@pytest.mark.parametrize("attrs, message", [
    ([("comm_size", "int64", 64)], "without a comm_type"),
    ([("comm_type", "int64", 42), ("comm_size", "int64", 64)], "comm_type 42 is not"),
    ([("comm_type", "int64", 0)], "ALL_REDUCE without an integer comm_size"),
    ([("comm_type", "int64", 0), ("comm_size", "string", "64")], "without an integer")])
def test_bad_collective_attributes(tmp_path, attrs, message):
    write_raw(tmp_path / "a", 1, lambda r: [node(7, "COMM_COLL_NODE", attrs=attrs)])
    with pytest.raises(WorkloadError, match=rf"a\.0\.et: node 7 .*{message}"):
        read_chakra(tmp_path / "a")


def test_int32_comm_attributes_are_read_too(tmp_path):
    write_raw(tmp_path / "i", 1, lambda r: [node(0, "COMM_COLL_NODE", attrs=[
        ("comm_type", "int32", 0), ("comm_size", "uint64", 256)])])
    assert read_chakra(tmp_path / "i").allreduce_bytes() == [256]


def test_truncated_message(tmp_path):
    parts = write_raw(tmp_path / "t", 1, lambda r: [node(0, "COMP_NODE", micros=4),
                                                     coll(1, "ALL_REDUCE", 64, ctrl=[0])])
    offset = len(parts[0]) + len(parts[1])
    rank_path(tmp_path / "t", 0).write_bytes(b"".join(parts)[:-3])
    with pytest.raises(WorkloadError, match=rf"t\.0\.et: message 2 at byte {offset}: .*"
                                            r"truncated"):
        read_chakra(tmp_path / "t")


def test_truncated_length_prefix(tmp_path):
    parts = write_raw(tmp_path / "t", 1, lambda r: [node(0, "COMP_NODE", micros=4)])
    whole = b"".join(parts)
    rank_path(tmp_path / "t", 0).write_bytes(whole + b"\x80")
    with pytest.raises(WorkloadError, match=rf"t\.0\.et: message 2 at byte {len(whole)}: "
                                            r"the file ends inside its length prefix"):
        read_chakra(tmp_path / "t")


def test_garbage_node(tmp_path):
    parts = write_raw(tmp_path / "g", 1, lambda r: [node(0, "COMP_NODE", micros=4)])
    whole = b"".join(parts)
    rank_path(tmp_path / "g", 0).write_bytes(whole + b"\x05\xff\xff\xff\xff\xff")
    with pytest.raises(WorkloadError, match=rf"g\.0\.et: a node at byte {len(whole)} is not a "
                                            r"Chakra Node"):
        read_chakra(tmp_path / "g")


@pytest.mark.parametrize("data, message", [
    (b"\xff" * 20, "message 0 at byte 0: a length prefix longer than 10 bytes"),
    (b"this is not a trace at all", r"message 0 at byte 0: says 116 bytes .*truncated"),
    (b"", "empty file at byte 0"),
    (b"\x04\xff\xff\xff\xff", "the first message at byte 0 is not a GlobalMetadata")])
def test_garbage_files(tmp_path, data, message):
    rank_path(tmp_path / "g", 0).write_bytes(data)
    with pytest.raises(WorkloadError, match=rf"g\.0\.et: {message}"):
        read_chakra(tmp_path / "g")


def test_a_trace_without_global_metadata_is_refused(tmp_path):
    """Chakra before 0.0.4 started with the nodes."""
    body = _delimited(node(3, "COMP_NODE", micros=4))
    rank_path(tmp_path / "old", 0).write_bytes(body)
    with pytest.raises(WorkloadError, match=r"old\.0\.et: the first message at byte 0 is not "
                                            r"a GlobalMetadata"):
        read_chakra(tmp_path / "old")


def test_version_from_a_schema_attribute(tmp_path):
    """ASTRA-sim's custom-collective traces leave `version` empty and say attr schema."""
    metadata = schema.GlobalMetadata(attr=[schema.AttributeProto(
        name="schema", string_val="1.0.2-chakra.0.0.4")])
    rank_path(tmp_path / "s", 0).write_bytes(
        _delimited(metadata) + _delimited(coll(0, "ALL_REDUCE", 64)))
    workload = read_chakra(tmp_path / "s")
    assert workload.meta["chakra_version"] == "1.0.2-chakra.0.0.4"


def test_ranks_that_differ_are_refused_naming_the_prefix(tmp_path):
    write_raw(tmp_path / "x", 2, lambda r: [coll(0, "ALL_REDUCE", 64 * (r + 1))])
    with pytest.raises(WorkloadError, match=r"x: .*rank 1's collectives differ"):
        read_chakra(tmp_path / "x")


def test_measured_durations_are_written(tmp_path):
    original = ddp_workload(2)
    write_chakra(original, tmp_path / "m", durations={(0, 0): 0.5, (1, 2): 0.25})
    back = read_chakra(tmp_path / "m")
    assert back.ranks[0].nodes[0].duration_s == 0.5
    assert back.ranks[1].nodes[0].duration_s == pytest.approx(0.0123466, abs=1e-6)
    data = rank_path(tmp_path / "m", 1).read_bytes()
    reduce = next(n for n in _nodes(data) if n.id == 2)
    assert reduce.type == schema.NODE_TYPES["COMM_COLL_NODE"]
    assert reduce.duration_micros == 250000


def test_durations_for_unknown_nodes_are_refused(tmp_path):
    with pytest.raises(WorkloadError, match=r"\(3, 0\)"):
        write_chakra(ddp_workload(2), tmp_path / "m", durations={(3, 0): 1.0})
    with pytest.raises(WorkloadError, match="finite number >= 0"):
        write_chakra(ddp_workload(2), tmp_path / "m", durations={(0, 0): -1.0})


def test_large_messages_use_multi_byte_length_prefixes(tmp_path):
    long_name = "x" * 300
    graph = RankGraph(0, (Compute(0, 1.0, (), long_name),
                          Collective(1, "all_reduce", 1 << 30, (0,), "big")))
    write_chakra(Workload("big", (graph,)), tmp_path / "big")
    back = read_chakra(tmp_path / "big")
    assert back.ranks[0].nodes[0].name == long_name
    assert back.allreduce_bytes() == [1 << 30]


def test_schema_facts():
    """Field numbers and enum values of et_def.proto that the wire format depends on."""
    fields = {f.name: f.number for f in schema.Node.DESCRIPTOR.fields}
    assert fields == {"id": 1, "name": 2, "type": 3, "ctrl_deps": 4, "data_deps": 5,
                      "start_time_micros": 6, "duration_micros": 7, "inputs": 8,
                      "outputs": 9, "attr": 10}
    attr = {f.name: f.number for f in schema.AttributeProto.DESCRIPTOR.fields}
    assert (attr["name"], attr["int64_val"], attr["bool_val"], attr["string_val"],
            attr["bytes_list"]) == (1, 9, 27, 29, 32)
    assert schema.COLLECTIVE_COMM_TYPES["ALL_REDUCE"] == 0
    assert schema.COLLECTIVE_COMM_TYPES["BARRIER"] == 9
    assert schema.NODE_TYPES["COMM_COLL_NODE"] == 7
    # repeated uint64 are packed (proto3): ctrl_deps [1, 2] is field 4, 2 bytes
    assert schema.Node(id=3, ctrl_deps=[1, 2]).SerializeToString() == b"\x08\x03\x22\x02\x01\x02"


def _nodes(data: bytes):
    offset = 1 + data[0]
    while offset < len(data):
        n = schema.Node()
        n.ParseFromString(data[offset + 1:offset + 1 + data[offset]])
        yield n
        offset += 1 + data[offset]


def test_metadata_chains_and_fans(tmp_path):
    """A long chain of METADATA_NODEs (deeper than Python's recursion limit) and a fan-in."""
    def nodes(rank):
        out = [node(0, "COMP_NODE", micros=1), node(1, "COMP_NODE", micros=1)]
        out.append(node(2, "METADATA_NODE", ctrl=[0, 1]))
        out += [node(i, "METADATA_NODE", data=[i - 1, 2]) for i in range(3, 3000)]
        out.append(coll(5000, "ALL_REDUCE", 64, data=[2999, 1]))
        return out
    write_raw(tmp_path / "c", 1, nodes)
    graph = read_chakra(tmp_path / "c").ranks[0]
    assert [(n.id, n.deps) for n in graph.nodes] == [(0, ()), (1, ()), (5000, (0, 1))]
