"""p4switch/thrift/idl.py against the Thrift code BMv2 generated from its own IDL files.

The reference toolchain ships simple_switch_CLI's generated Python (bm_runtime, sswitch_runtime);
its Python (the CLI's interpreter, which has the thrift library) lists every method's argument
and result fields and every struct's fields, and each must be declared here with the same id,
name and wire type. Every error code must have the same number too.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from p4switch.reference import find_toolchain
from p4switch.thrift import idl
from p4switch.thrift.binary import ListOf, MapOf, Struct

TOOLCHAIN = find_toolchain()
needs_toolchain = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

DUMP = r"""
import importlib, json, sys
sys.path[:0] = sys.argv[1:]
out = {"methods": {}, "enums": {}}
def shape(ttype, arg):
    if ttype == 12: return ["struct", arg[0].__name__]
    if ttype in (14, 15): return [ttype, shape(arg[0], arg[1])]
    if ttype == 13: return [13, shape(arg[0], arg[1]), shape(arg[2], arg[3])]
    return [ttype]
def fields(spec):
    return [[f[0], f[2], shape(f[1], f[3])] for f in spec if f]
for service, module in (("standard", "bm_runtime.standard.Standard"),
                        ("simple_pre_lag", "bm_runtime.simple_pre_lag.SimplePreLAG"),
                        ("simple_switch", "sswitch_runtime.SimpleSwitch")):
    m = importlib.import_module(module)
    types = importlib.import_module(module.rsplit(".", 1)[0] + ".ttypes")
    for name in dir(m):
        if name.endswith("_args"):
            method = name[:-5]
            result = getattr(m, method + "_result")
            out["methods"][service + ":" + method] = [fields(getattr(m, name).thrift_spec),
                                                     fields(result.thrift_spec)]
    for name, cls in vars(types).items():
        if isinstance(cls, type) and isinstance(getattr(cls, "_VALUES_TO_NAMES", None), dict):
            out["enums"][name] = {v: k for k, v in cls._VALUES_TO_NAMES.items()}
print(json.dumps(out))
"""

ENUMS = {"TableOperationErrorCode": idl.TableError, "CounterOperationErrorCode": idl.CounterError,
         "SwapOperationErrorCode": idl.SwapError, "MeterOperationErrorCode": idl.MeterError,
         "RegisterOperationErrorCode": idl.RegisterError,
         "ParseVSetOperationErrorCode": idl.ParseVSetError,
         "LearnOperationErrorCode": idl.LearnError, "DevMgrErrorCode": idl.DevMgrError,
         "CrcErrorCode": idl.CrcError, "ToeplitzHashErrorCode": idl.ToeplitzError,
         "IdLookupErrorCode": idl.IdLookupError, "McOperationErrorCode": idl.McError,
         "MirroringOperationErrorCode": idl.MirroringError,
         "BmMatchParamType": idl.MatchParamType, "BmActionEntryType": idl.ActionEntryType,
         "BmResourceType": idl.ResourceType}


def ours(vtype) -> list:
    if isinstance(vtype, Struct):
        return ["struct", vtype.name]
    if isinstance(vtype, ListOf):
        return [15, ours(vtype.element)]
    if isinstance(vtype, MapOf):
        return [13, ours(vtype.key), ours(vtype.value)]
    return [vtype.wire]


def our_fields(struct: Struct) -> list:
    return [[f.id, f.name, ours(f.type)] for f in struct.fields]


@pytest.fixture(scope="module")
def generated():
    interpreter = TOOLCHAIN.cli.read_text().splitlines()[0][2:].strip()
    site = sorted(TOOLCHAIN.root.glob("lib/python3*/site-packages"))
    done = subprocess.run([interpreter, "-c", DUMP, *map(str, site)], capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)


@needs_toolchain
def test_every_method_is_declared_as_bmv2_declares_it(generated):
    declared = {f"{s}:{name}": m for s, methods in idl.SERVICES.items()
                for name, m in methods.items()}
    assert sorted(declared) == sorted(generated["methods"])
    for full, (args, result) in generated["methods"].items():
        method = declared[full]
        assert our_fields(method.args) == args, full
        assert our_fields(method.result_struct()) == result, full


@needs_toolchain
def test_structs_reached_by_the_methods_have_bmv2s_fields(generated):
    seen: dict[str, Struct] = {}

    def walk(vtype):
        if isinstance(vtype, Struct) and vtype.name not in seen:
            seen[vtype.name] = vtype
            for f in vtype.fields:
                walk(f.type)
        elif isinstance(vtype, ListOf):
            walk(vtype.element)
    for methods in idl.SERVICES.values():
        for m in methods.values():
            walk(m.args)
            walk(m.result_struct())
    interpreter = TOOLCHAIN.cli.read_text().splitlines()[0][2:].strip()
    site = [str(p) for p in TOOLCHAIN.root.glob("lib/python3*/site-packages")]
    names = sorted(n for n in seen if not n.endswith(("_args", "_result")))
    script = ("import json,sys,importlib\nsys.path[:0]=sys.argv[2:]\nout={}\n"
              "for mod in ('bm_runtime.standard.ttypes','bm_runtime.simple_pre_lag.ttypes',"
              "'sswitch_runtime.ttypes'):\n m=importlib.import_module(mod)\n"
              " for n in json.loads(sys.argv[1]):\n  c=getattr(m,n,None)\n"
              "  if c is not None: out[n]=[[f[0],f[2],f[1]] for f in c.thrift_spec if f]\n"
              "print(json.dumps(out))")
    done = subprocess.run([interpreter, "-c", script, json.dumps(names), *site],
                          capture_output=True, text=True, timeout=60, check=True)
    theirs = json.loads(done.stdout)
    assert sorted(theirs) == names
    for name in names:
        assert [[f.id, f.name, f.type.wire] for f in seen[name].fields] == theirs[name], name


@needs_toolchain
def test_error_codes_have_bmv2s_numbers(generated):
    for name, enum in ENUMS.items():
        assert generated["enums"][name] == {e.name: e.value for e in enum}, name


def test_every_declared_method_has_a_handler():
    """A method in idl.py that its service's class lacks would answer UNKNOWN_METHOD."""
    from p4switch.thrift.pre import PreCalls
    from p4switch.thrift.service import RuntimeService
    from p4switch.thrift.simple_switch import SimpleSwitchCalls
    from p4switch.thrift.tables import TableCalls
    handlers = {"standard": (RuntimeService, TableCalls), "simple_pre_lag": (PreCalls,),
                "simple_switch": (SimpleSwitchCalls,)}
    missing = [f"{service}:{name}" for service, methods in idl.SERVICES.items()
               for name in methods
               if not any(hasattr(cls, name) for cls in handlers[service])]
    assert missing == []
