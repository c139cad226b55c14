"""Regression tests for what the fuzzers found (docs/fuzzing.md, findings table)."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import ina_wire
from hosts.ina_session import InaSession
from hosts import quantize as qz

Kind = ina_wire.Kind


def _float_session(scaling="job"):
    session = InaSession(job=1, worker=0, n=2, k=4, pool_size=4, window=4, rto=0.01,
                         rto_max=0.1, max_retx=3, scaling=scaling)
    session.start(np.linspace(-2, 2, 16, dtype=np.float32), 0.0)
    return session


def _max_result(lanes):
    values = np.array([qz.float32_bits(v) if isinstance(v, float) else v for v in lanes],
                      np.int64).astype(np.uint32).view(np.int32)
    return ina_wire.encode(ina_wire.InaPacket(kind=Kind.MAX_RESULT, job=1, worker=0, slot=0,
                                              chunk=0, values=values, count=2))


@pytest.mark.parametrize("lanes", [
    [0.5, 4.0, 4.0, 4.0],                      # lane 0 (the scale) below this worker's max
    [0x7FC00000, 0x7FC00000, 0x7FC00000, 0x7FC00000],   # NaN
    [0x7F800000, 0x7F800000, 0x7F800000, 0x7F800000],   # inf
    [4.0, 8.0, 0.0, 0.0],                      # a block lane above the global max
])
def test_a_max_result_no_worker_could_cause_is_ignored(lanes):
    # finding 1 (host_ina): a forged MAX_RESULT whose lane 0 was below the worker's own max
    # passed the check (made on the largest lane) and the codec raised ValueError out of
    # InaSession.receive, which never raises for a payload's content
    session = _float_session()
    step = session.receive(_max_result(lanes), 0.001)
    assert step.send == () and session.counters.malformed_ignored == 1
    step = session.receive(_max_result([2.0, 2.0, 2.0, 2.0]), 0.002)   # the genuine one
    assert step.send and step.send[0][0] == Kind.CONTRIB and session.scale is not None


def test_the_fuzzers_input_no_longer_escapes():
    from fuzz.hosts import ina
    from fuzz.targets import corpus_dir

    ina((corpus_dir("host_ina") / "finding-01-max-result-below-offer").read_bytes())


def test_an_include_name_too_long_for_the_file_system_is_a_located_error():
    # finding 2 (frontend): `#include <core.p...>` with a name longer than the file system
    # allows made Path.is_file raise OSError (ENAMETOOLONG): an internal compiler error at 1:1
    from p4switch.compiler import CompileError, compile_source

    source = "// a comment\n#include <" + "x" * 5000 + ".p4>\n"
    with pytest.raises(CompileError) as info:
        compile_source(source, "long.p4")
    (file, line, col, message), = info.value.diagnostics
    assert (file, line) == ("long.p4", 2) and "cannot find include file" in message


# -- sources that are not ordinary files (docs/fuzzing.md: the guard named as left open) --------
# Until then the preprocessor read every source with Path.read_text: a FIFO named on the command
# line, or an `#include` of a regular file the kernel feeds (/proc/kmsg: each read waits for the
# next message), hung the front end; a device (/dev/zero) or a huge file would have filled the
# memory. Now: opened non-blocking, regular files only, the source bytes of one compilation capped.

def _error_of(compile_call):
    from p4switch.compiler import CompileError

    with pytest.raises(CompileError) as info:
        compile_call()
    (file, line, col, message), = info.value.diagnostics
    return file, line, message


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_source_that_is_not_a_regular_file_is_refused_not_read(tmp_path, kind):
    import os

    from p4switch.compiler import compile_file

    if kind == "fifo":
        path = tmp_path / "program.p4"
        os.mkfifo(path)                  # no writer: a blocking open would wait for ever
    else:
        path = "/dev/zero"               # endless: a read would fill the memory
    file, line, message = _error_of(lambda: compile_file(str(path)))
    assert file == str(path) and message.endswith("not a regular file")


def test_an_include_of_a_regular_file_whose_read_would_wait_is_a_located_error(
        tmp_path, monkeypatch):
    # /proc/kmsg is such a file (regular, each read waits for the next kernel message); the test
    # does not read it (that would take the messages from the system's log): a stand-in file
    # whose read, non-blocking, says it would wait, as the kernel's does
    import os

    from p4switch.compiler import compile_source, preprocess

    feed = tmp_path / "feed.p4"
    feed.write_text("// fed by someone\n")
    opened, real_open, real_read = {}, os.open, os.read

    def tracking_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        opened[fd] = (str(path), flags)
        return fd

    def waiting_read(fd, n):
        if opened.get(fd, ("",))[0] == str(feed):
            assert opened[fd][1] & os.O_NONBLOCK, "opened blocking: the read would wait"
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_read(fd, n)

    monkeypatch.setattr(preprocess.os, "open", tracking_open)
    monkeypatch.setattr(preprocess.os, "read", waiting_read)
    main = str(tmp_path / "main.p4")
    assert _error_of(lambda: compile_source('// x\n#include "feed.p4"\n', main)) == (
        main, 2, f"cannot read '{feed}': it has nothing to read yet (not an ordinary file)")


def test_the_source_bytes_of_one_compilation_are_capped(tmp_path, monkeypatch):
    from p4switch.compiler import compile_source, preprocess

    monkeypatch.setattr(preprocess, "MAX_SOURCE_BYTES", 4096)
    (tmp_path / "small.p4").write_text("// a\n" * 300)            # 1,500 bytes: fits twice
    (tmp_path / "big.p4").write_text("// b\n" * 1000)             # 5,000 bytes: never fits
    main = str(tmp_path / "main.p4")
    three = '#include "small.p4"\n' * 3
    # the first two includes are read, the third would pass the cap: an error at its line
    assert _error_of(lambda: compile_source(three, main)) == (
        main, 3, "cannot read '%s': the program's source files would exceed 4,096 bytes"
        % (tmp_path / "small.p4"))
    file, line, message = _error_of(lambda: compile_source('#include "big.p4"\n', main))
    assert (file, line) == (main, 1) and message.endswith("would exceed 4,096 bytes")


@pytest.mark.parametrize("text, bad", [
    ("const bit<8> x\u00e9 = 1;", "\u00e9"),       # a letter, not ASCII, inside a name
    ("const bit<8> X = \ua750;", "\ua750"),        # a letter starting a word (the fuzzer's)
    ("const bit<8> X = \u0130;", "\u0130"),        # its lower case is two characters
    ("const bit<8> X = \u0661\u0662;", "\u0661"),  # digits of another script: were read as 12
    ("const bit<8> X = \u00b2;", "\u00b2"),        # isdigit() but not a decimal digit
    ("const bit<8> _\u00e9 = 1;", "\u00e9"),       # after an underscore
])
def test_a_non_ascii_letter_or_digit_is_an_unexpected_character(text, bad):
    # finding 3 (frontend): the lexer took any str.isalpha() character as the start of a name
    # and then matched ASCII names only: AttributeError, an internal compiler error at 1:1
    from p4switch.compiler import CompileError, compile_source

    with pytest.raises(CompileError) as info:
        compile_source("// x\n" + text + "\n", "uni.p4")
    (file, line, col, message), = info.value.diagnostics
    assert (file, line, col) == ("uni.p4", 2, text.index(bad) + 1)
    assert message == f"unexpected character '{bad}'"


def test_an_empty_stream_message_is_named_as_such():
    # seen in the p4rt_stream seeds: an empty StreamMessageRequest was answered
    # "stream message 'None' is not supported"
    from p4.v1 import p4runtime_pb2 as pb

    from fuzz import stream

    received = []
    device = stream.rig().device
    client = object()
    device.stream_open(client, received.append)
    try:
        device.stream_message(client, pb.StreamMessageRequest())
    finally:
        device.stream_close(client)
    (response,) = received
    assert response.error.canonical_code == 12          # UNIMPLEMENTED
    assert response.error.message == "a stream message without an update is not supported"


def test_a_ring_hello_with_a_dtype_is_refused():
    # finding 4 (host_ring): a HELLO's dtype byte was ignored, so a HELLO with dtype 1 (float64)
    # decoded as the same Hello as one with dtype 0 and did not encode back to its bytes; the
    # header of a HELLO is now all determined (no values: count, offset and dtype 0)
    from hosts import ring_wire
    from hosts.errors import RingProtocolError

    hello = ring_wire.encode(ring_wire.Hello(job=1, rank=0, n=2))
    assert ring_wire.StreamDecoder().feed(hello) == [ring_wire.Hello(job=1, rank=0, n=2)]
    with_dtype = hello[:4] + b"\x01" + hello[5:]
    with pytest.raises(RingProtocolError, match="HELLO carries no values"):
        ring_wire.StreamDecoder().feed(with_dtype)


def test_the_ring_fuzzers_input_no_longer_escapes():
    from fuzz.hosts import ring
    from fuzz.targets import corpus_dir

    ring((corpus_dir("host_ring") / "finding-04-hello-with-a-dtype").read_bytes())


@pytest.mark.parametrize("kind", [ina_wire.Kind.CONTRIB, ina_wire.Kind.RESULT])
def test_the_next_flag_survives_decode_and_encode(kind):
    # finding 6 (host_ina corpus replay after the hashed pool gave bit 0x20 a meaning, `next`):
    # decode accepted the bit but InaPacket had no field for it, so encoding dropped it
    packet = ina_wire.InaPacket(kind=kind, job=1, worker=0, slot=3, chunk=7,
                                values=np.arange(4, dtype=np.int32), next_use=True)
    payload = ina_wire.encode(packet)
    assert payload[1] & ina_wire.FLAG_NEXT
    back = ina_wire.decode(payload)
    assert back.next_use and back == packet and ina_wire.encode(back) == payload
    assert back != ina_wire.InaPacket(kind=kind, job=1, worker=0, slot=3, chunk=7,
                                      values=np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError, match="next_use must be a bool"):
        ina_wire.InaPacket(kind=kind, job=1, worker=0, slot=3, chunk=7,
                           values=np.arange(4, dtype=np.int32), next_use=1)
