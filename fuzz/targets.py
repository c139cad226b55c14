"""The fuzz targets by name: module and function (imported on demand, so that running one
target loads only what it needs). docs/fuzzing.md describes each."""

from __future__ import annotations

import importlib
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"

TARGETS = {
    "frontend": ("fuzz.frontend", "TestOneInput"),
    "bmv2_json": ("fuzz.bmv2_json", "TestOneInput"),
    "stf": ("fuzz.stf", "TestOneInput"),
    "packet_ina": ("fuzz.packets", "ina"),
    "packet_l3": ("fuzz.packets", "l3"),
    "packet_clone": ("fuzz.packets", "clone"),
    "packet_recirc": ("fuzz.packets", "recirc"),
    "p4rt_set": ("fuzz.p4runtime", "set_pipeline"),
    "p4rt_write": ("fuzz.p4runtime", "write"),
    "p4rt_read": ("fuzz.p4runtime", "read"),
    "p4rt_stream": ("fuzz.stream", "TestOneInput"),
    "host_ina": ("fuzz.hosts", "ina"),
    "host_ring": ("fuzz.hosts", "ring"),
}


def harness(name: str):
    """The `TestOneInput(data: bytes)` of target `name`."""
    module, function = TARGETS[name]
    return getattr(importlib.import_module(module), function)


def corpus_dir(name: str) -> Path:
    return CORPUS / name
