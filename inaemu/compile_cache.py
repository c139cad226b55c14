"""Compile a P4 program once per (sources, defines, compiler): a content-addressed disk cache.

Why: `inaemu run` and every sweep point compiled `p4src/ina.p4` again (1.5 s at k = 256), and
the simulator's processes could not share it. The key is a SHA-256 over everything the output
depends on: the main file and every `.p4`/`.p4inc`/`.h` file beside it (programs include their
siblings), the defines, and the compiler's own sources (a compiler change invalidates every
entry). An entry is `<key>.json` (BMv2 JSON), `<key>.p4info.txtpb` and `<key>.p4info.binpb`,
each written to a temporary file and renamed into place, so concurrent runs never read half an
entry; the JSON is renamed last and is what marks an entry complete. A damaged entry is
compiled again.

The binary P4Info (`.binpb`: a line `inaemu-p4info-1 <SHA-256 of the JSON>`, then the P4Info as
protobuf bytes, what parsing the text and serialising it makes) is there for speed: pure-Python
protobuf reads ina.p4's P4Info text in ~20 ms and its bytes in ~5 ms, a pipeline push can send
the bytes as they are, and the digest checks the JSON in ~1 ms where parsing it took ~24 ms.
An entry without it (or whose digest does not match) is checked by parsing the JSON, and the
file is written then.

Where: `$INAEMU_CACHE_DIR`, else `$XDG_CACHE_HOME/inaemu/compile`, else
`~/.cache/inaemu/compile`. A directory that cannot be written only costs the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SOURCE_SUFFIXES = (".p4", ".p4inc", ".h")
COMPILER_DIR = Path(__file__).resolve().parents[1] / "p4switch" / "compiler"


@dataclass(frozen=True)
class CompiledProgram:
    """A compiled program as the controller pushes it."""

    bmv2_json: bytes        # the device config
    p4info_text: str        # P4Info in protobuf text format
    key: str                # the content hash
    cached: bool            # read from the cache (False: compiled now)
    p4info_binary: bytes = b""   # the same P4Info, serialised (b"": not known)


def cache_dir() -> Path:
    explicit = os.environ.get("INAEMU_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inaemu" / "compile"


@lru_cache(maxsize=1)
def _compiler_fingerprint() -> str:
    digest = hashlib.sha256()
    for source in sorted(COMPILER_DIR.rglob("*.py")):
        digest.update(source.relative_to(COMPILER_DIR).as_posix().encode() + b"\0")
        digest.update(source.read_bytes())
    return digest.hexdigest()


def cache_key(path: str | Path, defines: dict[str, str] | None = None) -> str:
    """The content hash of a compilation: sources, defines, compiler."""
    main = Path(path).resolve()
    digest = hashlib.sha256(b"inaemu-compile-1\0")
    digest.update(_compiler_fingerprint().encode())
    digest.update(main.name.encode() + b"\0" + main.read_bytes())
    for sibling in sorted(main.parent.iterdir()):
        if sibling.suffix in SOURCE_SUFFIXES and sibling != main and sibling.is_file():
            digest.update(b"\0" + sibling.name.encode() + b"\0" + sibling.read_bytes())
    digest.update(json.dumps(sorted((defines or {}).items())).encode())
    return digest.hexdigest()[:32]


def compile_cached(path: str | Path, defines: dict[str, str] | None = None,
                   directory: Path | None = None) -> CompiledProgram:
    """The program's BMv2 JSON and P4Info, from the cache or compiled (and then stored).
    Compile errors (`p4switch.compiler.CompileError`) propagate and store nothing."""
    directory = directory or cache_dir()
    key = cache_key(path, defines)
    json_file = directory / f"{key}.json"
    p4info_file = directory / f"{key}.p4info.txtpb"
    binary_file = directory / f"{key}.p4info.binpb"
    try:
        config = json_file.read_bytes()
        p4info = p4info_file.read_text()
        binary = _checked_binary(binary_file, config)
        if binary is None:
            json.loads(config)          # a damaged entry is compiled again
            binary = p4info_binary(p4info)
            _store_quietly(binary_file, _binary_entry(config, binary))
        return CompiledProgram(config, p4info, key, True, binary)
    except (OSError, ValueError):
        pass
    from p4switch.compiler import compile_file
    build = compile_file(str(path), defines=dict(defines or {}))
    config = json.dumps(build.bmv2).encode()
    p4info = build.p4info_text()
    binary = p4info_binary(p4info)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write_atomically(p4info_file, p4info.encode())
        _write_atomically(binary_file, _binary_entry(config, binary))
        _write_atomically(json_file, config)
    except OSError:
        pass                        # no cache, same result
    return CompiledProgram(config, p4info, key, False, binary)


BINARY_MAGIC = b"inaemu-p4info-1 "


def p4info_binary(text: str) -> bytes:
    """The P4Info of `text` serialised (ValueError if the text is not a P4Info)."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    message = p4info_pb2.P4Info()
    try:
        text_format.Parse(text, message, allow_unknown_field=True)
    except text_format.ParseError as error:
        raise ValueError(f"not a text-format P4Info: {error}") from None
    return message.SerializeToString()


def _binary_entry(config: bytes, binary: bytes) -> bytes:
    return BINARY_MAGIC + hashlib.sha256(config).hexdigest().encode() + b"\n" + binary


def _checked_binary(binary_file: Path, config: bytes) -> bytes | None:
    """The stored binary P4Info if the file is whole and was written for this JSON, else None."""
    try:
        data = binary_file.read_bytes()
    except OSError:
        return None
    header, newline, binary = data.partition(b"\n")
    expected = BINARY_MAGIC + hashlib.sha256(config).hexdigest().encode()
    return binary if newline and header == expected else None


def _store_quietly(target: Path, data: bytes) -> None:
    try:
        _write_atomically(target, data)
    except OSError:
        pass


def _write_atomically(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
