"""Programs after the first bound to a template are paired by following recorded paths
(codeshare.pair_template), not by walking their whole state: the mapping they get is the
full walk's for every object the generated code refers to, and a path that leads to another
kind of object refuses sharing (the program is then generated alone and still works)."""

from __future__ import annotations

import json
from pathlib import Path

from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.runtime.share import codeshare
from p4switch.runtime.share.codeshare import pair_state, pair_template

from .bmv2 import eth_frame

ROOT = Path(__file__).resolve().parents[2]


def _text() -> str:
    return json.dumps(compile_file(str(ROOT / "tests" / "p4" / "hash_externs.p4")).bmv2)


def _template(text: str):
    key, _ = codeshare.content_key(text)
    return codeshare._templates[key]


def test_followed_paths_give_the_full_walks_mapping():
    codeshare.clear()
    text = _text()
    first, second = Switch(text), Switch(text)
    template = _template(text)
    assert template.paths                                   # recorded at the first binding
    followed = pair_template(template, second.program)
    walked = pair_state(template.program, second.program)
    assert followed
    for key, obj in followed.items():
        assert walked[key] is obj
    referenced = codeshare._referenced(template.program.untraced.namespace)
    assert {k for k in walked if k in referenced} <= set(followed)
    assert first.program.untraced.namespace is not second.program.untraced.namespace


def test_a_path_to_another_kind_of_object_refuses_and_falls_back(monkeypatch):
    codeshare.clear()
    text = _text()
    plain = Switch(text)
    template = _template(text)
    key, kind, where = template.paths[0]
    monkeypatch.setattr(template, "paths", [(key, frozenset, where)] + template.paths[1:])
    monkeypatch.setattr(codeshare, "REFUSED", {})
    late = Switch(text)                                     # refused: generated alone
    assert codeshare.content_key(text)[0] in codeshare.REFUSED
    frame = eth_frame(ether_type=0x88B5, payload=bytes(range(6)))
    assert late.receive(0, frame) == plain.receive(0, frame)
    codeshare.clear()
