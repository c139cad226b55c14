"""Builders for the cpu_io program's P4Runtime entities, by the ids in cpu_io.p4info.txtpb."""

from p4.v1 import p4runtime_pb2

FWD, ACL, ROUTES, ECMP, BLOCKED = 33554433, 33554434, 33554435, 33554436, 33554437
NO_ACTION, TO_PORT, TO_CPU, DROP, SET_MCAST = 16777217, 16777218, 16777219, 16777220, 16777221
ECMP_SEL = 285212673
PORT_PKTS, FWD_HITS, RATE, ROUTES_METER, SCRATCH = (
    301989889, 318767105, 335544321, 352321537, 369098753,
)
SPECIAL_TYPES = 50331649


def action(action_id, *params):
    message = p4runtime_pb2.Action(action_id=action_id)
    for number, value in enumerate(params, start=1):
        message.params.add(param_id=number, value=value)
    return message


def exact(field_id, value):
    return p4runtime_pb2.FieldMatch(field_id=field_id, exact=p4runtime_pb2.FieldMatch.Exact(value=value))


def fwd_entry(ingress_port: int, port: int | None = None, action_id=TO_PORT):
    entry = p4runtime_pb2.TableEntry(table_id=FWD)
    entry.match.append(exact(1, ingress_port.to_bytes(2, "big")))
    if port is not None:
        entry.action.action.CopyFrom(action(action_id, port.to_bytes(2, "big")))
    elif action_id != TO_PORT:
        entry.action.action.CopyFrom(action(action_id))
    return entry


def acl_entry(priority, *, src=None, types=None, dst=None, port=1):
    entry = p4runtime_pb2.TableEntry(table_id=ACL, priority=priority)
    if src is not None:
        value, mask = src
        entry.match.add(field_id=1).ternary.CopyFrom(
            p4runtime_pb2.FieldMatch.Ternary(value=value, mask=mask)
        )
    if types is not None:
        low, high = types
        entry.match.add(field_id=2).range.CopyFrom(p4runtime_pb2.FieldMatch.Range(low=low, high=high))
    if dst is not None:
        entry.match.add(field_id=3).optional.value = dst
    entry.action.action.CopyFrom(action(TO_PORT, bytes([port])))
    return entry


def route_entry(value: bytes, prefix_len: int, port=1):
    entry = p4runtime_pb2.TableEntry(table_id=ROUTES)
    entry.match.add(field_id=1).lpm.CopyFrom(
        p4runtime_pb2.FieldMatch.LPM(value=value, prefix_len=prefix_len)
    )
    entry.action.action.CopyFrom(action(TO_PORT, bytes([port])))
    return entry
