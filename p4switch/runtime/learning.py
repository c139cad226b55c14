"""Learn lists: what a packet's `digest` (BMv2's `generate_digest`) hands to the control plane.

simple_switch remembers the id of the last learn list a packet's ingress asked for and, when
ingress ends, takes one *sample* of that list: each listed field's value at that moment, as
ceil(width / 8) big-endian bytes, concatenated (p4c copies a digest's data into temporaries where
`digest` is called, so those are the values at the call). Samples from egress are never taken.
This module reads the JSON's `learn_lists` and builds samples; what is done with them (batched
into P4Runtime DigestLists, published as BMv2 learning notifications) is the consumer's choice,
given to `Switch.learn_handler`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .config import Node

# Called with (learn list, sample bytes) after the ingress of a packet that asked for a digest,
# with the switch lock held: it must not block.
LearnHandler = Callable[["LearnList", bytes], None]


@dataclass(frozen=True)
class LearnList:
    list_id: int
    name: str
    # (slot in `f`, width in bits) per field, or (-1 - validity index, 1) for a `$valid$`
    fields: tuple[tuple[int, int], ...]

    @property
    def sample_size(self) -> int:
        return sum((width + 7) // 8 for _, width in self.fields)

    def sample(self, f: list, v: list) -> bytes:
        out = bytearray()
        for slot, width in self.fields:
            value = f[slot] if slot >= 0 else v[-1 - slot]
            out += (int(value) & ((1 << width) - 1)).to_bytes((width + 7) // 8, "big")
        return bytes(out)

    @property
    def slots(self) -> list[int]:
        return [slot for slot, _ in self.fields if slot >= 0]


def read_learn_lists(root: Node, layout) -> dict[int, LearnList]:
    """The JSON's `learn_lists` by id; refuses what simple_switch cannot sample."""
    lists: dict[int, LearnList] = {}
    for node in root.get("learn_lists").items():
        list_id = node["id"].int(1, (1 << 31) - 1)
        if list_id in lists:
            raise node["id"].error(f"two learn lists have id {list_id}")
        fields = []
        for element in node.get("elements").items():
            kind, value = element.type_value()
            if kind != "field":
                raise element.error(f"learn list elements must be fields, not '{kind}'")
            ref = layout.field(value[0].str(), value[1].str(), value)
            if ref.slot is None:        # `$valid$`: the header's validity bit
                fields.append((-1 - ref.header.index, 1))
            elif ref.width is None:
                raise element.error("a varbit field cannot be part of a learn list")
            else:
                fields.append((ref.slot, ref.width))
        lists[list_id] = LearnList(list_id, node["name"].str(), tuple(fields))
    return lists


__all__ = ["LearnHandler", "LearnList", "read_learn_lists"]
