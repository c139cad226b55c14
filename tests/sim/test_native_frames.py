"""The native core's host framing (inaemu/sim/native/frames.c) and host interface
(hostport.c) against the Python reference (frames.py, host_node.py): the same frames built
byte for byte, the same Datagram (or None) for every frame, valid, damaged or truncated, and
the same dispatch and counters on a host."""

from __future__ import annotations

import random
import struct

import pytest

from inaemu.sim.cores import core_classes
from inaemu.sim.frames import PROTO_TCP, PROTO_UDP, Addressing, parse
from inaemu.sim.native import native_classes, native_module, why_not

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")

HERE = Addressing(mac=bytes.fromhex("020000000001"), ip=bytes([10, 0, 0, 1]),
                  gateway_mac=bytes.fromhex("025300000000"))
THERE = bytes([10, 0, 1, 2])


@pytest.fixture(scope="module")
def native():
    """The native host class and its Addressing (built from HERE)."""
    host_class = native_classes().host
    host = host_class(core_classes("native").loop(), "h1", HERE)
    return host_class, host.addressing


def some_frames(addressing: Addressing, rng: random.Random, count: int) -> list[bytes]:
    frames = []
    for i in range(count):
        payload = rng.randbytes(rng.choice((0, 1, 7, 64, 1400)))
        ident = rng.choice((0, i, 0xFFFF, 0x12345, -1))
        if rng.random() < 0.5:
            frames.append(addressing.udp_frame(THERE, rng.randrange(65536),
                                               rng.randrange(65536), payload, ident))
        else:
            options = bytes(rng.choice((0, 4, 12, 3)))
            frames.append(addressing.tcp_frame(
                THERE, rng.randrange(65536), rng.randrange(65536),
                rng.choice((0, 1, 2**32 - 1, 2**32 + 5, -3, rng.randrange(2**40))),
                rng.randrange(2**33), rng.choice((0x10, 0x18, 0x3F)), options, payload, ident,
                rng.choice((0, 0xFFFF, 1234))))
    return frames


def test_native_frames_are_built_byte_for_byte(native):
    _, addressing = native
    python = some_frames(HERE, random.Random(1), 400)
    built = some_frames(addressing, random.Random(1), 400)
    assert built == python
    assert {frame[23] for frame in python} == {PROTO_UDP, PROTO_TCP}


def test_native_checksums_fold_every_carry(native):
    """Addresses of all ones and idents near 0xFFFF carry twice when the header is summed."""
    host_class, _ = native
    high = Addressing(mac=bytes(6), ip=bytes([255, 255, 255, 254]), gateway_mac=bytes(6))
    addressing = host_class(core_classes("native").loop(), "h9", high).addressing
    everywhere = bytes([255, 255, 255, 255])
    for ident in range(0x10100):         # the sum lands just below 0x10000 for some
        assert (addressing.udp_frame(everywhere, 1, 2, b"x" * (ident % 50), ident)
                == high.udp_frame(everywhere, 1, 2, b"x" * (ident % 50), ident))


def test_native_framing_refuses_what_struct_refuses(native):
    _, addressing = native
    for bad in ((THERE, 70000, 1, b"", 0), (THERE, -1, 1, b"", 0), (bytes(3), 1, 1, b"", 0)):
        with pytest.raises((ValueError, struct.error)):
            HERE.udp_frame(*bad)
        with pytest.raises(ValueError):
            addressing.udp_frame(*bad)
    with pytest.raises(ValueError, match="the window must be 0..65535"):
        addressing.tcp_frame(THERE, 1, 2, 0, 0, 0x10, b"", b"", 0, 0x10000)


def damaged(frames: list[bytes], rng: random.Random) -> list[bytes]:
    """Each frame cut short, with a byte of its headers changed, or with its length fields
    lying: what a parser must turn away, or take exactly as the reference does."""
    out = []
    for frame in frames:
        out.append(frame[:rng.randrange(len(frame) + 1)])
        changed = bytearray(frame)
        changed[rng.randrange(min(len(frame), 60))] = rng.randrange(256)
        out.append(bytes(changed))
        for offset in (16, 38, 46):          # IPv4 total, UDP length / TCP seq, TCP offset
            if offset >= len(frame):
                continue
            lying = bytearray(frame)
            lying[offset] = rng.randrange(256)
            out.append(bytes(lying))
    return out + [b"", bytes(13), bytes(34), bytes(100)]


def test_native_parse_gives_the_python_datagram(native):
    rng = random.Random(2)
    frames = some_frames(HERE, rng, 300)
    frames += damaged(frames, rng)
    native_parse = native_module().parse
    results = [parse(frame) for frame in frames]
    assert [native_parse(frame) for frame in frames] == results
    assert sum(r is None for r in results) > 100 and sum(r is not None for r in results) > 400
    assert all(type(native_parse(f)) is type(r) for f, r in zip(frames, results))
    # a frame that is not bytes goes to the Python parse: its slices keep its type
    assert native_parse(bytearray(frames[0])) == parse(bytearray(frames[0]))


def test_a_host_dispatches_by_protocol_and_port():
    """Frames for a listened port reach its handler; others, and frames for another address,
    are counted as ignored; a killed host takes nothing (the same on both cores)."""
    got = {}
    for which in ("python", "native"):
        host = core_classes(which).host(core_classes(which).loop(), "h1", HERE)
        calls = []
        host.listen(PROTO_UDP, 5000, lambda d, c=calls: c.append(("udp", d)))
        host.listen(PROTO_TCP, 6000, lambda d, c=calls: c.append(("tcp", d)))
        sender = Addressing(mac=bytes(6), ip=THERE, gateway_mac=bytes(6))
        frames = [sender.udp_frame(HERE.ip, 1, 5000, b"a", 1),
                  sender.udp_frame(HERE.ip, 1, 5001, b"b", 2),
                  sender.tcp_frame(HERE.ip, 1, 6000, 5, 6, 0x10, b"", b"c", 3),
                  sender.udp_frame(THERE, 1, 5000, b"d", 4),
                  b"not a frame"]
        for frame in frames:
            host.receive(frame)
        host.kill()
        host.receive(frames[0])
        got[which] = (calls, host.counters.frames_received, host.counters.bytes_received,
                      host.counters.ignored, host.alive)
    assert got["native"] == got["python"]
    calls, received, _bytes, ignored, alive = got["python"]
    assert [kind for kind, _ in calls] == ["udp", "tcp"] and received == 5 and ignored == 3
    assert calls[1][1].seq == 5 and calls[0][1].payload == b"a" and not alive


def test_a_hosts_handlers_changed_between_frames_take_the_next_frame():
    """The native host remembers the last port's handler while its table is unchanged: a
    handler replaced, removed, added back or joined by another takes (or loses) the very next
    frame, as on the Python core."""
    got = {}
    for which in ("python", "native"):
        host = core_classes(which).host(core_classes(which).loop(), "h1", HERE)
        calls = []
        first = lambda d, c=calls: c.append(("first", d.payload))        # noqa: E731
        second = lambda d, c=calls: c.append(("second", d.payload))      # noqa: E731
        other = lambda d, c=calls: c.append(("other", d.payload))        # noqa: E731
        sender = Addressing(mac=bytes(6), ip=THERE, gateway_mac=bytes(6))

        def frame(port, text):
            return sender.udp_frame(HERE.ip, 1, port, text, 1)
        host.listen(PROTO_UDP, 5000, first)
        steps = [lambda: None, lambda: None,
                 lambda: host.listen(PROTO_UDP, 5000, second),
                 lambda: host.unlisten(PROTO_UDP, 5000, second),
                 lambda: host.listen(PROTO_UDP, 5000, first),
                 lambda: host.listen(PROTO_UDP, 5001, other),
                 lambda: host.unlisten(PROTO_UDP, 5000, second),     # not its handler: kept
                 lambda: host.handlers.clear()]
        for i, step in enumerate(steps):
            step()
            host.receive(frame(5000, b"%d" % i))
            host.receive(frame(5001, b"o%d" % i))
        got[which] = (calls, host.counters.ignored)
    assert got["native"] == got["python"]
    calls, ignored = got["python"]
    assert [who for who, _ in calls] == ["first", "first", "second", "first", "first",
                                         "other", "first", "other"]
    assert ignored == 8


def _udp(addressing, payload, i):
    return addressing.udp_frame(THERE, 5, 6, payload, i)


def _tcp(addressing, payload, i):
    return addressing.tcp_frame(THERE, 5, 6, 1000 * i, 7, 0x18, b"\x01\x01\x05\x0a" + bytes(8),
                                payload, i)


@pytest.mark.parametrize("build", [_udp, _tcp], ids=["udp", "tcp"])
def test_a_frame_let_go_is_built_into_and_a_kept_one_never(native, build):
    """The loop keeps a frame whose arrival left nothing else holding it (eventloop.c's spare
    frames), and frames.c builds a later frame of that size into it (a UDP frame, or a TCP
    one: a ring's segments): every frame built is still the Python one byte for byte, and a
    frame its receiver keeps is never written."""
    _, addressing = native
    classes = native_classes()
    loop = classes.loop()
    kept: list[tuple[bytes, bytes]] = []         # (the frame, a copy made at its arrival)

    def keep(frame: bytes) -> None:
        kept.append((frame, bytes(bytearray(frame))))

    def link(deliver):
        return classes.link(loop, "h1", "s1", bw_bps=None, delay_s=1e-6, loss=0.0,
                            rng=random.Random(0), deliver=deliver)

    keeping, dropping = link(keep), link(lambda frame: None)
    rng = random.Random(7)
    for size in (300, 500, 700, 900, 1100):     # other sizes first: the kept ones give way
        for i in range(40):
            dropping.send(build(addressing, bytes(size), i))
        loop.run(until=loop.now + 2e-6)
    before = native_module().spare_reused()
    for i in range(300):
        payload = rng.randbytes(rng.choice((1000, 1000, 1400)))
        frame = build(addressing, payload, i)
        assert frame == build(HERE, payload, i)
        (keeping if rng.random() < 0.3 else dropping).send(frame)
        del frame
        loop.run(until=loop.now + 2e-6)
    assert native_module().spare_reused() - before > 100
    assert len(kept) > 50
    for frame, copy in kept:
        assert frame == copy


def test_the_switches_build_their_packets_into_spare_frames_too():
    """The native core gives its spare bytes to the switches' generated deparsers
    (p4switch's `use_frame_source`): a run builds more frames into them than its hosts alone
    could, and every frame (its CRC in the trace) and record is the one a run that gives them
    nothing makes."""
    from p4switch.runtime.cgen import nativebuild

    from inaemu.sim import SimJob, simulate
    from topologies.builders import fat_tree

    def run() -> tuple[list, list, int]:
        topology = fat_tree(4)
        hosts = tuple(h.name for h in topology.hosts)[:8]
        trace: list[str] = []
        before = native_module().spare_reused()
        result = simulate(topology, [SimJob(3, hosts, switch="c0", hierarchical=True)],
                          trace=trace, core="native", algo="ina", size_bytes=4 * 20_000,
                          seed=3, loss=1.0, bw=1000, elems_k=256)
        assert all(r.correct for r in result.records)
        return trace, [r.as_dict() for r in result.records], \
            native_module().spare_reused() - before

    given = run()
    nativebuild.use_frame_source(None)
    try:
        hosts_only = run()
    finally:
        nativebuild.use_frame_source(native_module().frame_source)
    assert given[:2] == hosts_only[:2]
    assert hosts_only[2] > 0 and given[2] > hosts_only[2] + 200    # (the switches' packets)
