"""Translated programs kept on disk (p4switch/runtime/share/template_store.py): a switch whose code
was read back from the store, in place of translating the JSON again, passes the same STF test
as the corpus (tests/p4 and p4src, ina.p4 included), and behaves packet for packet as a program
generated alone; unreadable entries and another runtime's entries are not used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.runtime.program import Program
from p4switch.runtime.share import codeshare, template_store
from p4switch.stf import parse_stf_file
from p4switch.stf.report import format_report
from p4switch.stf.runner import StfRunner

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [(p, p.with_suffix(".stf")) for d in (ROOT / "tests" / "p4", ROOT / "p4src")
         for p in sorted(d.glob("*.p4")) if p.with_suffix(".stf").exists()]


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty store of this test's own, and no template in memory."""
    monkeypatch.setenv("INAEMU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(template_store, "ENABLED", True)
    monkeypatch.setattr(codeshare, "REFUSED", {})
    codeshare.clear()
    yield tmp_path / "templates"
    codeshare.clear()


def _from_store(text: str, monkeypatch) -> Switch:
    """A switch whose template must come from the store: translating is made to fail."""
    codeshare.clear()
    with monkeypatch.context() as patch:
        def no_translation(*_args):
            raise AssertionError("translated again instead of reading the store")
        patch.setattr(Program, "_translate", no_translation)
        return Switch(text)


@pytest.mark.parametrize("program, stf", PAIRS, ids=[f"{p.parent.name}/{p.stem}" for p, _ in PAIRS])
def test_a_stored_translation_passes_the_corpus(program, stf, store, monkeypatch):
    config = compile_file(str(program)).bmv2
    text = json.dumps(config)
    Switch(text)                                    # translated here, and stored
    stored = list(store.glob("*.pickle.z"))
    key, _ = codeshare.content_key(text)
    if key in codeshare.REFUSED:        # code that cannot be shared is never stored either
        assert not stored
        return
    assert len(stored) == 1
    switch = _from_store(text, monkeypatch)
    test = parse_stf_file(str(stf))
    result = StfRunner(switch, config).run(test)
    assert result.passed, f"{program.name} from the store:\n{format_report(result)}"


def test_stored_and_alone_agree_packet_for_packet(store, monkeypatch):
    from .bmv2 import eth_frame
    import random

    text = json.dumps(compile_file(str(ROOT / "tests" / "p4" / "hash_externs.p4")).bmv2)
    Switch(text)
    stored = _from_store(text, monkeypatch)
    codeshare.ENABLED = False
    try:
        alone = Switch(text)
    finally:
        codeshare.ENABLED = True
    rng = random.Random(7)
    for n in range(50):
        payload = rng.getrandbits(48).to_bytes(6, "big")
        frame = eth_frame(ether_type=0x88B5, payload=payload)
        assert stored.receive(0, frame) == alone.receive(0, frame), f"packet {n}"


def test_unreadable_or_foreign_entries_are_translated_again(store, monkeypatch):
    text = json.dumps(compile_file(str(ROOT / "tests" / "p4" / "basic.p4")).bmv2)
    Switch(text)
    (entry,) = store.glob("*.pickle.z")
    entry.write_bytes(b"not a template")
    codeshare.clear()
    calls = []
    original = Program._translate
    monkeypatch.setattr(Program, "_translate",
                        lambda self, doc: calls.append(1) or original(self, doc))
    Switch(text)
    assert calls == [1] and entry.read_bytes() != b"not a template"   # replaced
    # another runtime (any source changed) has other entries
    template_store.runtime_fingerprint.cache_clear()
    monkeypatch.setattr(template_store, "PACKAGE_DIR", store)         # no sources: other hash
    try:
        codeshare.clear()
        Switch(text)
        assert calls == [1, 1] and len(list(store.glob("*.pickle.z"))) == 2
    finally:
        template_store.runtime_fingerprint.cache_clear()


def test_the_store_can_be_turned_off(store, monkeypatch):
    monkeypatch.setattr(template_store, "ENABLED", False)
    Switch(json.dumps(compile_file(str(ROOT / "tests" / "p4" / "basic.p4")).bmv2))
    assert not store.exists() or not list(store.iterdir())


_LOAD_IN_ANOTHER_PROCESS = """
import json, sys
from p4switch.runtime import Switch
from p4switch.runtime.program import Program
def no_translation(*_args):
    raise AssertionError("translated again instead of reading the store")
Program._translate = no_translation
switch = Switch(open(sys.argv[1]).read())
print(",".join(switch.program.untraced.native_in_use))
"""


def test_a_template_with_c_code_is_read_back_by_another_process(store, tmp_path, monkeypatch):
    """Regression: the stored template named its C module, which a fresh process could not
    import by name (it is loaded from a file), so every process translated the program again."""
    import subprocess
    import sys
    from p4switch.runtime.cgen import nativebuild
    monkeypatch.delenv("INAEMU_NATIVE", raising=False)
    if nativebuild.toolchain_problem():
        pytest.fail(f"no C toolchain here: {nativebuild.toolchain_problem()}")
    program = tmp_path / "ina.json"
    program.write_text(json.dumps(compile_file(str(ROOT / "p4src" / "ina.p4")).bmv2))
    here = Switch(program.read_text())               # translated, built and stored
    assert here.program.untraced.native_in_use and list(store.glob("*.pickle.z"))
    done = subprocess.run([sys.executable, "-c", _LOAD_IN_ANOTHER_PROCESS, str(program)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ",".join(here.program.untraced.native_in_use)
