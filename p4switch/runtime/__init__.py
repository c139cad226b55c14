"""The switch runtime: executes BMv2 JSON with simple_switch's v1model semantics.

See docs/runtime-api.md for the API contract and docs/runtime.md for how it works.
"""

from .config import load_bmv2_json
from .errors import (AlreadyExists, AssertionFailure, ConfigError, FailedPrecondition,
                     InvalidArgument, NotFound, P4SwitchError, PermissionDenied,
                     ResourceExhausted, Unimplemented)
from .keys import ExactKey, LpmKey, OptionalKey, RangeKey, TableEntry, TableInfo, TernaryKey
from .state.tables import priority_from_bmv2, priority_to_bmv2
from .switch import Switch
from .trace import PacketTrace, TextTrace

__all__ = [
    "Switch", "load_bmv2_json", "ExactKey", "LpmKey", "TernaryKey", "RangeKey", "OptionalKey",
    "TableInfo", "TableEntry", "PacketTrace", "TextTrace", "P4SwitchError", "ConfigError",
    "InvalidArgument", "NotFound", "AlreadyExists", "ResourceExhausted", "PermissionDenied",
    "FailedPrecondition", "Unimplemented", "AssertionFailure", "priority_from_bmv2",
    "priority_to_bmv2",
]
