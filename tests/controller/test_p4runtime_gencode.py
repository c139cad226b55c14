"""controller/p4runtime_gencode.py: the p4runtime wheel's pre-3.19 modules rewritten into the form
current protobuf (upb) loads, and a clear hint when that step was skipped."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.internal import api_implementation

from controller import p4runtime_gencode as gencode
from inaemu.cli import main as inaemu_main


def old_style_module(proto: descriptor_pb2.FileDescriptorProto) -> str:
    """A module in the shape a protoc older than 3.19 wrote (what the wheel ships): the file's
    descriptor built by calling FileDescriptor(...) with its serialised proto inside."""
    return ("from google.protobuf import descriptor as _descriptor\n"
            "DESCRIPTOR = _descriptor.FileDescriptor(\n"
            f"  name={proto.name!r}, package={proto.package!r}, syntax='proto3',\n"
            "  create_key=_descriptor._internal_create_key,\n"
            f"  serialized_pb={proto.SerializeToString()!r}\n)\n"
            "_THING = _descriptor.Descriptor(name='Thing', fields=[])\n")


def test_an_old_module_becomes_one_that_builds_its_classes_from_the_embedded_descriptor() -> None:
    proto = descriptor_pb2.FileDescriptorProto(name="inaemu_test/gencode.proto",
                                               package="inaemu_test", syntax="proto3")
    message = proto.message_type.add(name="Thing")
    message.field.add(name="value", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    new = gencode.rewrite(old_style_module(proto), "inaemu_test.gencode_pb2")
    assert new is not None and "FileDescriptor(" not in new
    assert gencode.rewrite(new, "inaemu_test.gencode_pb2") is None     # idempotent
    module = types.ModuleType("inaemu_test.gencode_pb2")
    exec(compile(new, "gencode_pb2.py", "exec"), module.__dict__)
    thing = module.Thing(value=7)
    assert module.Thing.FromString(thing.SerializeToString()).value == 7


def test_the_installed_bindings_are_current_and_run_on_upb() -> None:
    for name in gencode.MODULES:
        origin = importlib.util.find_spec(name).origin
        with open(origin) as source:
            assert gencode.embedded_descriptor(source.read()) is None, (
                f"{origin} is still in the pre-3.19 form: run python -m controller.p4runtime_gencode")
    assert api_implementation.Type() == "upb"
    from p4.v1 import p4runtime_pb2
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    assert p4runtime_pb2.Update.FromString(update.SerializeToString()) == update


def test_a_skipped_rewrite_is_named_with_its_fix(monkeypatch, capsys) -> None:
    refusal = TypeError("Descriptors cannot be created directly.\nIf this call came from a "
                        "_pb2.py file, your generated code is out of date")
    assert "python -m controller.p4runtime_gencode" in gencode.stale_bindings_hint(refusal)
    assert gencode.stale_bindings_hint(TypeError("something else")) is None

    def refuse(args):
        raise refusal
    import inaemu.compare
    monkeypatch.setattr(inaemu.compare, "run", refuse)
    assert inaemu_main(["compare"]) == 2
    assert capsys.readouterr().err.startswith(
        "inaemu compare: the installed P4Runtime bindings (the p4runtime wheel) predate")


def test_other_type_errors_are_not_disguised(monkeypatch) -> None:
    def broken(args):
        raise TypeError("a bug")
    import inaemu.compare
    monkeypatch.setattr(inaemu.compare, "run", broken)
    with pytest.raises(TypeError, match="a bug"):
        inaemu_main(["compare"])
    assert sys.modules["inaemu.compare"] is inaemu.compare
