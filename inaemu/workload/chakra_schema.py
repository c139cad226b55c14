"""The MLCommons Chakra execution-trace schema (et_def.proto, package ChakraProtoMsg) as
protobuf message classes built in code.

How the classes are made, and why: the descriptors are assembled here field by field
(`descriptor_pb2.FileDescriptorProto`) from the facts of Chakra's
`schema/protobuf/et_def.proto` (message and field names, field numbers, types, the NodeType
and CollectiveCommType enums), added to a descriptor pool of our own and turned into classes
with `message_factory.GetMessageClass`. Not used:

- Chakra's Python package: its `et_def_pb2` is generated code for another protobuf release
  (generated modules check the runtime version) and it drags the whole converter toolchain in;
  the project pins protobuf 7.36.2 (upb) for the controller's P4Runtime client.
- a generated `et_def_pb2.py` checked in: it would need `protoc` to regenerate and ties the
  file to the protoc version that made it.
- a hand-written varint codec: protobuf's own parser/serializer is exact, fast (upb) and
  already a dependency.

The descriptors live in a private `DescriptorPool`, not the default one, so importing
Chakra's own generated module in the same process (it registers the same full names) cannot
clash with ours. The wire format is what matters: field numbers and types are those of the
schema, so files written here are read by Chakra/ASTRA-sim and the other way round. The schema's
`Tensor` message is not used in traces' nodes and is left out.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "ChakraProtoMsg"
SCHEMA_VERSION = "0.0.4"         # what GlobalMetadata.version says in the files written here

NODE_TYPES = {                    # enum NodeType
    "INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3,
    "COMP_NODE": 4, "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7,
}
COLLECTIVE_COMM_TYPES = {         # enum CollectiveCommType
    "ALL_REDUCE": 0, "REDUCE": 1, "ALL_GATHER": 2, "GATHER": 3, "SCATTER": 4, "BROADCAST": 5,
    "ALL_TO_ALL": 6, "REDUCE_SCATTER": 7, "REDUCE_SCATTER_BLOCK": 8, "BARRIER": 9,
}

_F = descriptor_pb2.FieldDescriptorProto
# AttributeProto's `oneof value`: (scalar name, protobuf type); field numbers go 3, 4, 5, ...
# alternating the scalar `<name>_val` and its `<Name>List` message `<name>_list`.
_ATTR_SCALARS = [
    ("double", _F.TYPE_DOUBLE), ("float", _F.TYPE_FLOAT), ("int32", _F.TYPE_INT32),
    ("int64", _F.TYPE_INT64), ("uint32", _F.TYPE_UINT32), ("uint64", _F.TYPE_UINT64),
    ("sint32", _F.TYPE_SINT32), ("sint64", _F.TYPE_SINT64), ("fixed32", _F.TYPE_FIXED32),
    ("fixed64", _F.TYPE_FIXED64), ("sfixed32", _F.TYPE_SFIXED32),
    ("sfixed64", _F.TYPE_SFIXED64), ("bool", _F.TYPE_BOOL), ("string", _F.TYPE_STRING),
    ("bytes", _F.TYPE_BYTES),
]


def _list_name(scalar: str) -> str:
    return scalar.capitalize() + "List"          # int64 -> Int64List, sfixed32 -> Sfixed32List


def _field(message, name: str, number: int, ftype: int, *, repeated: bool = False,
           type_name: str | None = None, oneof: int | None = None) -> None:
    field = message.field.add()
    field.name = name
    field.json_name = "".join(part if i == 0 else part.capitalize()
                              for i, part in enumerate(name.split("_")))
    field.number = number
    field.type = ftype
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name:
        field.type_name = f".{PACKAGE}.{type_name}"
    if oneof is not None:
        field.oneof_index = oneof


def _enum(file, name: str, values: dict[str, int]) -> None:
    enum = file.enum_type.add()
    enum.name = name
    for value_name, number in values.items():
        value = enum.value.add()
        value.name = value_name
        value.number = number


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """et_def.proto as a FileDescriptorProto (proto3: repeated scalars packed, like protoc)."""
    file = descriptor_pb2.FileDescriptorProto()
    file.name = "chakra/et_def.proto"
    file.package = PACKAGE
    file.syntax = "proto3"

    attr = file.message_type.add()
    attr.name = "AttributeProto"
    _field(attr, "name", 1, _F.TYPE_STRING)
    _field(attr, "doc_string", 2, _F.TYPE_STRING)
    attr.oneof_decl.add().name = "value"
    for index, (scalar, ftype) in enumerate(_ATTR_SCALARS):
        _field(attr, f"{scalar}_val", 3 + 2 * index, ftype, oneof=0)
        _field(attr, f"{scalar}_list", 4 + 2 * index, _F.TYPE_MESSAGE,
               type_name=_list_name(scalar), oneof=0)
    for scalar, ftype in _ATTR_SCALARS:
        values = file.message_type.add()
        values.name = _list_name(scalar)
        _field(values, "values", 1, ftype, repeated=True)

    meta = file.message_type.add()
    meta.name = "GlobalMetadata"
    _field(meta, "version", 1, _F.TYPE_STRING)
    _field(meta, "attr", 2, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")

    _enum(file, "NodeType", NODE_TYPES)
    _enum(file, "CollectiveCommType", COLLECTIVE_COMM_TYPES)

    node = file.message_type.add()
    node.name = "Node"
    _field(node, "id", 1, _F.TYPE_UINT64)
    _field(node, "name", 2, _F.TYPE_STRING)
    _field(node, "type", 3, _F.TYPE_ENUM, type_name="NodeType")
    _field(node, "ctrl_deps", 4, _F.TYPE_UINT64, repeated=True)
    _field(node, "data_deps", 5, _F.TYPE_UINT64, repeated=True)
    _field(node, "start_time_micros", 6, _F.TYPE_UINT64)
    _field(node, "duration_micros", 7, _F.TYPE_UINT64)
    _field(node, "inputs", 8, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "outputs", 9, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "attr", 10, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")

    io = file.message_type.add()
    io.name = "IOInfo"
    _field(io, "values", 1, _F.TYPE_STRING)
    _field(io, "shapes", 2, _F.TYPE_STRING)
    _field(io, "types", 3, _F.TYPE_STRING)
    return file


_POOL = descriptor_pool.DescriptorPool()
_FILE = _POOL.Add(file_descriptor())


def _message(name: str):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


GlobalMetadata = _message("GlobalMetadata")
Node = _message("Node")
AttributeProto = _message("AttributeProto")
IOInfo = _message("IOInfo")

NODE_TYPE_NAMES = {number: name for name, number in NODE_TYPES.items()}
COLLECTIVE_COMM_TYPE_NAMES = {number: name for name, number in COLLECTIVE_COMM_TYPES.items()}
