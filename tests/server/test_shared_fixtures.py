"""The shared fixtures' real p4c output (BMv2 JSON + P4Info) through the server and the runtime:
every table takes, returns and deletes an entry built from its P4Info; const tables refuse.
Runs only where ../shared/fixtures exists (the project's own programs cover the rest)."""

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime import Switch

from .helpers import SHARED_FIXTURES, RunningServer, load_p4info, pipeline_request, read, update, write, write_errors

FIXTURES = sorted(
    d for d in (SHARED_FIXTURES.iterdir() if SHARED_FIXTURES.is_dir() else [])
    if (d / f"{d.name}.json").exists() and (d / f"{d.name}.p4info.txtpb").exists()
)
MatchField = p4info_pb2.MatchField


def sample_entry(table, actions) -> p4runtime_pb2.TableEntry:
    """An entry that uses every match field of `table` and its first entry-capable action."""
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    for field in table.match_fields:
        match = entry.match.add(field_id=field.id)
        width_bytes = (field.bitwidth + 7) // 8
        if field.match_type == MatchField.EXACT:
            match.exact.value = b"\x01"
        elif field.match_type == MatchField.LPM:
            match.lpm.value = b"\x01"
            match.lpm.prefix_len = field.bitwidth
        elif field.match_type == MatchField.TERNARY:
            match.ternary.value = b"\x01"
            match.ternary.mask = b"\xff" * width_bytes if field.bitwidth % 8 == 0 else b"\x01"
        elif field.match_type == MatchField.RANGE:
            match.range.low, match.range.high = b"\x01", b"\x02"
        else:
            match.optional.value = b"\x01"
    if any(f.match_type not in (MatchField.EXACT, MatchField.LPM) for f in table.match_fields):
        entry.priority = 1
    ref = next(r for r in table.action_refs if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY)
    info = actions[ref.id]
    entry.action.action.action_id = ref.id
    for param in info.params:
        entry.action.action.params.add(param_id=param.id, value=b"\x01")
    return entry


@pytest.mark.parametrize("fixture", FIXTURES, ids=[d.name for d in FIXTURES])
def test_fixture_tables_round_trip(fixture):
    running = RunningServer(Switch(None))
    try:
        running.stream().arbitrate(1)
        p4info_path = fixture / f"{fixture.name}.p4info.txtpb"
        running.stub.SetForwardingPipelineConfig(
            pipeline_request(p4info_path, fixture / f"{fixture.name}.json")
        )
        p4info = load_p4info(p4info_path)
        actions = {a.preamble.id: a for a in p4info.actions}
        for table in p4info.tables:
            entry = sample_entry(table, actions)
            if table.is_const_table:
                with pytest.raises(grpc.RpcError) as err:
                    write(running.stub, update("INSERT", table_entry=entry))
                (detail,) = write_errors(err.value)
                assert detail.canonical_code == grpc.StatusCode.PERMISSION_DENIED.value[0]
                const = read(running.stub, p4runtime_pb2.TableEntry(table_id=table.preamble.id))
                assert const and all(e.table_entry.is_const for e in const)
                continue
            write(running.stub, update("INSERT", table_entry=entry))
            (back,) = read(running.stub, p4runtime_pb2.TableEntry(table_id=table.preamble.id))
            assert back.table_entry == entry, table.preamble.name
            write(running.stub, update("DELETE", table_entry=entry))
            assert read(running.stub, p4runtime_pb2.TableEntry(table_id=table.preamble.id)) == []
            default = read(running.stub, p4runtime_pb2.TableEntry(
                table_id=table.preamble.id, is_default_action=True))
            assert default[0].table_entry.action.action.action_id == (
                table.initial_default_action.action_id
            )
    finally:
        running.close()
