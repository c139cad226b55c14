"""What the server remembers about the device beyond what the runtime stores.

P4Runtime names action profile members and groups with client-chosen ids, while the runtime
hands out its own handles; meter configs and clone sessions are write-only in the runtime API.
This state belongs to one committed pipeline and is dropped when a new one is committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from p4.v1 import p4runtime_pb2

from .digests import DigestLists
from .errors import from_runtime
from .one_shot import OneShot
from .pipeline import Pipeline


@dataclass
class CloneSession:
    entry: p4runtime_pb2.CloneSessionEntry  # as the client wrote it
    hidden_group: int | None  # multicast group created for a multi-replica session


@dataclass
class DeviceState:
    switch: Any  # p4switch.runtime.Switch
    pipeline: Pipeline
    # action profile id -> P4Runtime member/group id -> runtime handle
    members: dict[int, dict[int, int]] = field(default_factory=dict)
    groups: dict[int, dict[int, int]] = field(default_factory=dict)
    # (meter id, index) and (table id, entry handle) -> the MeterConfig last written
    meter_configs: dict[tuple[int, int], p4runtime_pb2.MeterConfig] = field(default_factory=dict)
    direct_meter_configs: dict[tuple[int, int], p4runtime_pb2.MeterConfig] = field(
        default_factory=dict
    )
    clone_sessions: dict[int, CloneSession] = field(default_factory=dict)
    # value set id -> its members as last written
    value_sets: dict[int, list[p4runtime_pb2.ValueSetMember]] = field(default_factory=dict)
    # (table id, entry handle) -> the hidden profile objects of a one-shot entry
    one_shots: dict[tuple[int, int], OneShot] = field(default_factory=dict)
    # (table id, entry handle) -> the entry's opaque `metadata` bytes, returned by reads
    entry_metadata: dict[tuple[int, int], bytes] = field(default_factory=dict)
    # table id -> entry handle -> when (switch clock, s) its idle timeout was last reported
    idle_reported: dict[int, dict[int, float]] = field(default_factory=dict)
    # DigestEntry configs, the lists being filled and the samples sent (guarded by the
    # switch's lock: the packet path adds samples while holding it)
    digests: DigestLists = None

    def __post_init__(self) -> None:
        if self.digests is None:
            self.digests = DigestLists(self.pipeline.config.p4info)

    def call(self, context: str, operation: Callable, *args, **kwargs):
        """Call the runtime; its errors become RequestErrors that say what was being done."""
        try:
            return operation(*args, **kwargs)
        except Exception as exc:
            if not hasattr(exc, "code"):
                raise
            raise from_runtime(exc, context) from None

    def hidden_groups(self) -> set[int]:
        return {s.hidden_group for s in self.clone_sessions.values() if s.hidden_group is not None}
