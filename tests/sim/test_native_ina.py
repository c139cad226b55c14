"""The INA worker's per-packet path in C (inaemu/sim/native/inaworker.c and inasession.c,
docs/sim-native.md "The INA worker's per-packet path in C") against the Python session it
stands for.

Whole runs: the same per-link trace (every send with its frame's CRC, every loss and drop, at
its virtual time), records, result bytes and every session's counters and state on the
Python core and on the native core with its C listener, over seeds, 0/1/5 % loss,
star/leaf-spine/fat-tree, flat and tree INA, kept and streamed results, several blocks of
the sum, options the C path covers and ones it leaves to Python, and a killed worker; each
run asserts how much the C path took (most, some or none). Directly: one worker fed the same
datagram stream (results in order, duplicated, lost, reordered, damaged, of another job,
marked retx or overflowed; QUERYs answered or NACKed) through the C listener and through the
worker's Python `_on_datagram`, with the frames sent and the session's state compared after
every datagram."""

import dataclasses
import random

import numpy as np
import pytest

from hosts.ina_session import InaSession
from hosts.ina_wire import INA_UDP_PORT
from hosts.timer_heap import TimerHeap
from inaemu.sim import InaOptions, SimJob, simulate
from inaemu.sim import ina_worker
from inaemu.sim.cores import core_classes
from inaemu.sim.frames import PROTO_UDP, Addressing, Datagram, parse
from inaemu.sim.native import native_classes, native_module, why_not
from topologies.builders import fat_tree, leaf_spine, star

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")


def fields_of(obj) -> dict:
    """An object's fields by name, whether slots (hosts' session classes: the native core
    reads them at their offsets) or an instance dict."""
    names = [name for cls in type(obj).__mro__ for name in cls.__dict__.get("__slots__", ())]
    values = {name: getattr(obj, name) for name in names if hasattr(obj, name)}
    values.update(getattr(obj, "__dict__", {}))
    return values


def session_state(session: InaSession) -> dict:
    """What a session holds between packets, for comparing two of them."""
    recovery, silence = session._recovery, session._silence
    flights = {key: tuple(getattr(flight, name) for name in type(flight).__slots__)
               for key, flight in session._in_flight.items()}
    estimators = [(e.srtt, e.rttvar, e.min_rtt, e.samples, e.rto, e.first_timer)
                  for e in (session.rto_estimator, session.host_rto_estimator,
                            session.barrier_estimator)]
    window = session.in_flight_window
    return {
        "state": session.state, "counters": dataclasses.asdict(session.counters),
        "next_position": session.next_position, "next_chunk": session._next_chunk,
        "answered": bytes(session._answered), "answered_count": session._answered_count,
        "highest": list(session._highest_answered), "flights": flights,
        "flight_order": list(session._in_flight), "estimators": estimators,
        "window": (window.size, window.slow_start, window._results),
        "timers": list(recovery.timers), "tail": (recovery.tail, recovery._tail_serial),
        "queried": recovery.queried, "serial": recovery.events.serial,
        "bursts": fields_of(recovery.loss_bursts),
        "silence": (silence.data_results, silence.last_progress, silence.last_progress_sent,
                    silence.last_progress_chunk),
        "result": None if session.result is None else session.result.tobytes(),
    }


@pytest.fixture
def spied(monkeypatch):
    """The InaWorkers made, in order, and the C listeners made (native core)."""
    made = {"workers": [], "listeners": []}
    original_init = ina_worker.InaWorker.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        made["workers"].append(self)

    monkeypatch.setattr(ina_worker.InaWorker, "__init__", init)
    host = core_classes("native").host
    original_listener = host.ina_listener

    def listener(node, worker):
        made["listeners"].append(original_listener(node, worker))
        return made["listeners"][-1]

    monkeypatch.setattr(host, "ina_listener", listener)
    return made


def _hosts(topology, count=None):
    return tuple(h.name for h in topology.hosts)[:count]


def _run(spied, core, topology, jobs, **kwargs):
    trace = []
    spied["workers"].clear()
    result = simulate(topology, jobs, trace=trace, core=core, **kwargs)
    sessions = [session_state(worker.session) for worker in spied["workers"]]
    return (trace, [r.as_dict() for r in result.records],
            [None if r.result is None else r.result.tobytes() for r in result.records],
            result.virtual_s, result.events, result.frames, result.links, sessions)


TOPOLOGIES = [
    ("star", lambda: star(4), lambda t: [SimJob(1, _hosts(t))]),
    ("leaf-spine flat, two jobs", lambda: leaf_spine(2, 2, 3),
     lambda t: [SimJob(1, _hosts(t)[:3]), SimJob(2, _hosts(t)[3:6])]),
    ("fat-tree tree", lambda: fat_tree(4),
     lambda t: [SimJob(3, _hosts(t, 8), switch="c0", hierarchical=True)]),
    ("fat-tree flat", lambda: fat_tree(4), lambda t: [SimJob(1, _hosts(t, 8), switch="c0")]),
]


def _both(spied, topology_of, jobs_of, **kwargs):
    topology = topology_of()
    python = _run(spied, "python", topology, jobs_of(topology), **kwargs)
    spied["listeners"].clear()
    native = _run(spied, "native", topology, jobs_of(topology), **kwargs)
    return python, native


def _assert_same(python, native, spied, fast="most"):
    """The same events and states; the C path took `fast` ("most", "some" or "none") of the
    workers' RESULTs, the Python one the rest (never none: the MAX round is Python's)."""
    assert python[0], "no trace recorded"
    assert native[0] == python[0]
    assert native[1:] == python[1:]
    # (RESULTs: a NACK is the C's in every data phase, whatever the RESULTs' case)
    taken = sum(listener.fast - listener.nacks for listener in spied["listeners"])
    fallback = sum(listener.fallback for listener in spied["listeners"])
    assert spied["listeners"] and fallback > 0
    assert {"most": taken > fallback, "some": taken > 0, "none": taken == 0}[fast], \
        (taken, fallback)


@pytest.mark.parametrize("keep", [True, False], ids=["kept", "streamed"])
@pytest.mark.parametrize("seed", [0, 3, 11])
@pytest.mark.parametrize("loss", [0.0, 1.0, 5.0])
@pytest.mark.parametrize("case", TOPOLOGIES, ids=[case[0] for case in TOPOLOGIES])
def test_the_c_path_runs_the_same_events(spied, case, loss, seed, keep):
    _name, topology_of, jobs_of = case
    python, native = _both(spied, topology_of, jobs_of, algo="ina", size_bytes=4 * 6001,
                           seed=seed, loss=loss, bw=1000, elems_k=32, keep_results=keep)
    # (at 5 % most results follow a loss: some are still the C path's)
    _assert_same(python, native, spied, "most" if loss < 5.0 else "some")


@pytest.mark.parametrize("seed", [1, 2, 5, 7, 13, 17])
@pytest.mark.parametrize("loss", [1.0, 3.0, 5.0])
@pytest.mark.parametrize("case", TOPOLOGIES, ids=[case[0] for case in TOPOLOGIES])
def test_loss_detection_in_c_runs_the_same_events(spied, case, loss, seed):
    """At loss, the results the C path takes find earlier chunks lost and resend them in C
    (inasession.c's `detect_losses_c`, the recovery's `detect_losses` in Python's place), the
    workers' timers expire reorder and RTO timers in C (inaworker.c's `ina_fast_timer`, with
    the silence rules: `rto_expiry_plan`), duplicates
    and NACKs (the values resent once per QUERY) are C's: the same events and states as the
    Python core, every detection and some expiries the C's."""
    _name, topology_of, jobs_of = case
    python, native = _both(spied, topology_of, jobs_of, algo="ina", size_bytes=4 * 6001,
                           seed=seed, loss=loss, bw=1000, elems_k=32)
    _assert_same(python, native, spied, "most" if loss < 5.0 else "some")
    assert sum(listener.c_detections for listener in spied["listeners"]) > 0
    assert sum(listener.python_detections for listener in spied["listeners"]) == 0
    assert sum(listener.timer_fast for listener in spied["listeners"]) > 0
    # RTO timers in C: moved later by the silence rules, or expired (the values resent)
    assert sum(listener.rto_postponed + listener.rto_resends
               for listener in spied["listeners"]) > 0
    if _name == "fat-tree flat":
        assert sum(listener.rto_resends for listener in spied["listeners"]) > 0
    if _name == "fat-tree tree":     # a QUERY's answer reaches every worker: duplicates
        assert sum(listener.duplicates for listener in spied["listeners"]) > 0
        assert sum(listener.nacks for listener in spied["listeners"]) > 0   # QUERYs NACKed
    retransmissions = sum(session["counters"]["fast_retransmissions"]
                          for session in native[-1])
    assert retransmissions > 0


OPTIONS = [
    ("fixed rto and window", InaOptions(window=16, rto=0.004, rto_max=0.016), "most"),
    ("no fast retransmit", InaOptions(fast_retransmit=False), "most"),
    ("every-loss window rule, values not queries", InaOptions(window_rule="every_loss",
                                                              query=False), "most"),
    ("int8 lanes", InaOptions(fmt="int8"), "most"),
    # the overflowed RESULTs and the redo pass are Python's
    ("an int16 divisor below n (overflow redos)", InaOptions(fmt="int16", divisor=1), "some"),
    # not the C path's case: every datagram goes to the Python session
    ("block scaling", InaOptions(scaling="block"), "none"),
    ("a timeline", InaOptions(timeline=True), "none"),
    ("hashed sharing", InaOptions(sharing="hashed", shared_pairs=64), "none"),
]


@pytest.mark.parametrize("loss", [0.0, 2.0])
@pytest.mark.parametrize("case", OPTIONS, ids=[case[0] for case in OPTIONS])
def test_options_the_c_path_covers_or_leaves_to_python(spied, case, loss):
    _name, options, fast = case
    python, native = _both(spied, lambda: star(4), lambda t: [SimJob(1, _hosts(t))],
                           algo="ina", size_bytes=4 * 6001, seed=5, loss=loss, bw=1000,
                           elems_k=32, ina=options)
    _assert_same(python, native, spied, fast)


@pytest.mark.parametrize("keep", [True, False], ids=["kept", "streamed"])
@pytest.mark.parametrize("loss", [0.0, 1.0])
def test_several_blocks_of_the_sum(spied, loss, keep):
    """A vector of three blocks of the codec's sum (BLOCK_VALUES each): the RESULTs that
    complete the first two come through the C path, which stores them and has the codec
    dequantize the block (into the result, or to the streamed check)."""
    python, native = _both(spied, lambda: star(3), lambda t: [SimJob(1, _hosts(t))],
                           algo="ina", size_bytes=4 * (2 * 65536 + 3001), seed=2, loss=loss,
                           bw=1000, elems_k=32, keep_results=keep)
    _assert_same(python, native, spied)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("loss", [1.0, 3.0])
@pytest.mark.parametrize("case", TOPOLOGIES[2:], ids=[case[0] for case in TOPOLOGIES[2:]])
def test_a_killed_worker_on_a_fat_tree(spied, case, loss, seed):
    """A worker dies: the others' timers expire (in C) until a chunk is out of retries; that
    expiry, Python's, raises PeerUnreachable and ends the worker, and nothing the same
    expiry resent before it goes out (the Python `expire` returned none of it)."""
    _name, topology_of, jobs_of = case
    python, native = _both(spied, topology_of, jobs_of, algo="ina", size_bytes=4 * 6001,
                           seed=seed, loss=loss, bw=1000, elems_k=32,
                           deaths={"h2": 0.008 + 0.0005 * seed},
                           ina=InaOptions(rto=0.002, rto_max=0.004, max_retx=2))
    _assert_same(python, native, spied, "some")
    assert any(record["error"] for record in python[1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_killed_worker(spied, seed):
    python, native = _both(spied, lambda: star(4), lambda t: [SimJob(1, _hosts(t))],
                           algo="ina", size_bytes=4 * 6001, seed=seed, loss=1.0, bw=1000,
                           elems_k=32, deaths={"h2": 0.0004},
                           ina=InaOptions(rto=0.002, rto_max=0.004, max_retx=2))
    _assert_same(python, native, spied)
    assert any(record["error"] for record in python[1])


# ---- one worker, fed directly --------------------------------------------------------------

HOST_IP, AGGREGATOR_IP = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 254])


class Collector:
    def __init__(self):
        self.frames = []

    def send(self, frame, on_left=None):
        self.frames.append(frame)


def _result_of(payload: bytes, n: int) -> bytes:
    """The switch's answer to a contribution when every worker sent the same (n copies)."""
    kind = 3 if payload[0] == 2 else 1
    return bytes((kind,)) + payload[1:12] + n.to_bytes(2, "big") + payload[14:]


def _make_worker(fast: bool, session_kwargs: dict, vector):
    classes = native_classes()
    loop = classes.loop()
    node = classes.host(loop, "h1", Addressing(b"\x02" * 6, HOST_IP, b"\x04" * 6))
    node.uplink = Collector()
    if not fast:
        node.ina_listener = None
    # (the C listener's session keeps its timers in the C heap, as the native core's runs do)
    heap = type(node).timer_heap_class if fast else TimerHeap
    session = InaSession(**session_kwargs, timer_heap=heap)
    worker = ina_worker.InaWorker(node, session, AGGREGATOR_IP, vector, lambda _w: None)
    return loop, node, worker


SWITCH = Addressing(b"\x04" * 6, AGGREGATOR_IP, b"\x02" * 6)   # (frames towards the host)


@pytest.mark.parametrize("through", ["listener", "frames"])
@pytest.mark.parametrize("seed", range(6))
def test_one_worker_fed_the_same_datagrams(seed, through):
    """Results in order, duplicated, lost (then the timers), reordered, damaged, of another
    job or a wrong count, marked retx or overflowed; QUERYs answered or NACKed: the C
    listener and the Python one send the same frames and leave the same session state after
    every datagram. `frames`: each goes to the host's `receive` as a whole frame (the C
    listener then reads it in place, hostport.c), among frames for another host, of another
    port and cut short, which both hosts must count as ignored."""
    rng = random.Random(seed)
    n = 1 + seed % 3
    kwargs = dict(job=7, worker=0, n=n, k=16, pool_size=32, window=32, rto=0.004,
                  rto_max=0.05, max_retx=8, adaptive=seed % 2 == 0,
                  fast_retransmit=seed != 3, fmt=("int32", "int16", "int8")[seed % 3])
    vector = np.random.default_rng(seed).standard_normal(16 * 4 * 300 + 5).astype(np.float32)
    pairs = [_make_worker(fast, kwargs, vector) for fast in (True, False)]
    for loop, _node, worker in pairs:
        worker.start()
    fast_listener = pairs[0][1].handlers[(PROTO_UDP, INA_UDP_PORT)]
    assert fast_listener != pairs[0][2]._on_datagram
    held: list[bytes] = []
    contributions: dict[bytes, bytes] = {}      # chunk -> its latest CONTRIB
    now = 0.0
    for _step in range(20_000):
        sent = [parse(f).payload for f in pairs[0][1].uplink.frames]
        assert sent == [parse(f).payload for f in pairs[1][1].uplink.frames]
        assert pairs[0][1].uplink.frames == pairs[1][1].uplink.frames
        for _loop, node, _worker in pairs:
            node.uplink.frames.clear()
        if pairs[0][2].outcome.finished:
            break
        for payload in sent:
            draw = rng.random()
            if payload[0] == 0:
                contributions[payload[8:12]] = payload
            if draw < 0.03:                           # lost
                continue
            if payload[0] == 4:                       # a QUERY: answered, or NACKed
                if draw < 0.5:
                    nack = bytes((5,)) + payload[1:16]
                    held.append(nack)
                    if draw < 0.3:     # a damaged NACK besides: Python's verdicts, the same
                        held.append(rng.choice([
                            nack[:1] + bytes((nack[1] | 0x0C,)) + nack[2:],   # format 3
                            nack[:1] + bytes((nack[1] | 0x40,)) + nack[2:],   # unknown flag
                            nack[:5] + b"\x01" + nack[6:],                   # padding
                            nack[:2] + bytes((nack[2] ^ 1,)) + nack[3:],      # another job
                            nack[:4] + bytes((nack[4] ^ 1,)) + nack[5:],      # another worker
                            nack + b"\x00"]))                                # not header-only
                    continue
                payload = contributions[payload[8:12]]
                payload = payload[:1] + bytes((payload[1] | 0x02,)) + payload[2:]
            result = _result_of(payload, n)
            held.append(result)
            if draw < 0.06:
                held.append(result)                   # a duplicate
            elif draw < 0.08:
                held.append(bytes([1]) + result[1:2] + bytes([result[2] ^ 1]) + result[3:])
            elif draw < 0.09:
                held.append(result[:12] + (n + 1).to_bytes(2, "big") + result[14:])
            elif draw < 0.10:
                held.append(result[:-1])
            elif draw < 0.16:      # the switch marks it retx (its cell took a resent piece)
                held[-1] = result[:1] + bytes((result[1] | 0x02,)) + result[2:]
            elif draw < 0.17:      # a packed sum overflowed: the chunk is redone
                held[-1] = result[:1] + bytes((result[1] | 0x10,)) + result[2:]
        if not held:
            now += 0.01                               # silence: the timers fire
            for loop, _node, _worker in pairs:
                loop.run(until=now)
            continue
        if rng.random() < 0.2 and len(held) > 1:
            i = rng.randrange(len(held) - 1)
            held[i], held[i + 1] = held[i + 1], held[i]
        result = held.pop(0)
        now += rng.random() * 0.0002
        datagram = Datagram(PROTO_UDP, AGGREGATOR_IP, HOST_IP, INA_UDP_PORT, INA_UDP_PORT,
                            result)
        frame = SWITCH.udp_frame(HOST_IP, INA_UDP_PORT, INA_UDP_PORT, result, 1)
        stray = rng.choice([SWITCH.udp_frame(bytes([10, 0, 0, 2]), INA_UDP_PORT,
                                             INA_UDP_PORT, result, 2),
                            SWITCH.udp_frame(HOST_IP, INA_UDP_PORT, INA_UDP_PORT + 1, result, 3),
                            frame[:40], None, None])
        for loop, node, _worker in pairs:
            loop.run(until=now)
            if through == "listener":
                node.handlers[(PROTO_UDP, INA_UDP_PORT)](datagram)
                continue
            node.receive(frame)
            if stray is not None:
                node.receive(stray)
        assert session_state(pairs[0][2].session) == session_state(pairs[1][2].session)
        assert pairs[0][2]._timer.deadline == pairs[1][2]._timer.deadline
    assert pairs[0][2].outcome.finished and pairs[1][2].outcome.finished
    assert pairs[0][2].outcome.error == pairs[1][2].outcome.error
    counts = [dataclasses.astuple(node.counters) if dataclasses.is_dataclass(node.counters)
              else (node.counters.frames_received, node.counters.ignored) for _, node, _ in pairs]
    assert counts[0] == counts[1]
    assert (pairs[0][1].counters.ignored > 0) == (through == "frames")
    # (frames: all but the first, which the host's receive looks its listener up for)
    assert fast_listener.in_place == (0 if through == "listener" else
                                      fast_listener.fast + fast_listener.fallback - 1)
    assert fast_listener.fast > 50 and fast_listener.fallback > 0
    assert fast_listener.duplicates > 0
    assert fast_listener.rto_postponed > 0     # (resends: the tail probes come first here)
    assert fast_listener.nacks > 0 or not kwargs["fast_retransmit"]    # (QUERYs: early ones)


def _answering_one_worker(seed: int, each_round, each_result=lambda _in_flight: None,
                          k: int = 16) -> tuple:
    """A worker (n = 1) started on the C path and given a RESULT for every chunk it sends,
    round after round, until it finishes: `each_round(in_flight)` after each round's sends,
    `each_result(in_flight)` after each RESULT (the session's in-flight table); `k` lanes a
    chunk. The worker and its listener."""
    kwargs = dict(job=7, worker=0, n=1, k=k, pool_size=32, window=32, rto=0.004,
                  rto_max=0.05, max_retx=8)
    vector = np.random.default_rng(seed).standard_normal(k * 4 * 300 + 5).astype(np.float32)
    loop, node, worker = _make_worker(True, kwargs, vector)
    worker.start()
    listener = node.handlers[(PROTO_UDP, INA_UDP_PORT)]
    now = 0.0
    for _step in range(5_000):
        sent = [parse(f).payload for f in node.uplink.frames]
        node.uplink.frames.clear()
        if worker.outcome.finished or not sent:
            break
        each_round(worker.session._in_flight)
        for payload in sent:
            now += 0.0001
            loop.run(until=now)
            listener(Datagram(PROTO_UDP, AGGREGATOR_IP, HOST_IP, INA_UDP_PORT, INA_UDP_PORT,
                              _result_of(payload, 1)))
            each_result(worker.session._in_flight)
    assert worker.outcome.finished and worker.outcome.error is None
    return worker, listener


def test_a_flight_someone_holds_is_never_made_another_chunks():
    """The C path recycles an answered chunk's Flight as a later chunk's only when nothing
    else holds it: a Flight taken from the in-flight table and kept keeps its chunk's fields
    while every later chunk is sent and answered."""
    held: dict[int, object] = {}            # some flights, held from outside
    answered: dict[int, tuple] = {}         # their fields once their chunk was answered

    def hold(in_flight) -> None:
        for chunk, flight in list(in_flight.items()):
            if chunk % 7 == 3:
                held.setdefault(chunk, flight)

    def note_answered(in_flight) -> None:
        for chunk, flight in held.items():
            if chunk not in in_flight and chunk not in answered:
                answered[chunk] = dataclasses.astuple(_flight_fields(flight))

    _worker, listener = _answering_one_worker(5, hold, note_answered)
    assert listener.fast > 100 and len(answered) > 10
    for chunk, fields in answered.items():
        assert dataclasses.astuple(_flight_fields(held[chunk])) == fields, chunk


def test_a_payload_someone_holds_is_never_made_another_chunks():
    """The C path lets an answered chunk's payload go to the spare bytes (eventloop.c) when it
    recycles its Flight, and writes later payloads into them, only when nothing else holds
    them: payloads taken from in-flight chunks and kept keep their bytes while every later
    chunk is sent in reused ones."""
    held: dict[int, tuple[bytes, bytes]] = {}   # chunk -> (its payload, a copy made then)

    def hold(in_flight) -> None:
        for chunk, flight in list(in_flight.items()):
            if chunk % 5 == 2 and chunk not in held:
                held[chunk] = (flight.payload, bytes(bytearray(flight.payload)))

    before = native_module().spare_reused()
    _answering_one_worker(6, hold, k=128)       # (528-byte payloads: spare ones are >= 256)
    assert native_module().spare_reused() - before > 100
    assert len(held) > 20
    for chunk, (payload, copy) in held.items():
        assert payload == copy, chunk


@dataclasses.dataclass
class _FlightFields:
    payload: bytes
    slot: int
    ver: int
    deadline: float
    sent_at: float
    last_sent: float
    wait: float
    serial: int


def _flight_fields(flight) -> _FlightFields:
    return _FlightFields(flight.payload, flight.slot, flight.ver, flight.deadline,
                         flight.sent_at, flight.last_sent, flight.wait, flight.serial)


def test_a_finished_run_frees_its_listeners():
    """The C listener holds its worker (which holds the host, which holds the listener): the
    collector must see those references (tp_traverse), so a run, a killed worker's too,
    leaves none behind."""
    import gc

    from inaemu.sim.native import native_module
    listener_type = native_module().InaFastPath
    topology = star(4)
    for deaths in (None, {"h2": 0.0004}):
        simulate(topology, [SimJob(1, _hosts(topology))], algo="ina", size_bytes=4 * 6001,
                 seed=1, loss=1.0, bw=1000, elems_k=32, core="native", deaths=deaths,
                 ina=InaOptions(rto=0.002, rto_max=0.004, max_retx=2))
        gc.collect()
        assert not [o for o in gc.get_objects() if type(o) is listener_type]


# ---- the C arithmetic against hosts/congestion.py's, float for float ------------------------

def _rtts(rng: random.Random, count: int):
    """Round trips as a run sees them: mostly near a base, some far, a few negative (clock
    steps: clamped to 0), some tiny, some huge (the clamps of the RTO)."""
    base = 10.0 ** rng.uniform(-6, -1)
    for _ in range(count):
        draw = rng.random()
        if draw < 0.03:
            yield -rng.random() * base
        elif draw < 0.08:
            yield base * rng.uniform(10, 1000)
        elif draw < 0.12:
            yield base * rng.uniform(0, 0.01)
        else:
            yield base * rng.lognormvariate(0, 0.5)


@pytest.mark.parametrize("seed", range(20))
def test_the_c_rtt_sample_gives_the_same_floats(seed):
    """InaFastPath.rto_sample (the C `RtoEstimator.sample` of the path) leaves every field of
    an estimator bit for bit as hosts/congestion.py's `sample` does, sample after sample."""
    from hosts.congestion import RtoEstimator
    from inaemu.sim.native import native_module
    c_sample = native_module().InaFastPath.rto_sample
    rng = random.Random(seed)
    bounds = dict(initial=rng.choice([0.001, 0.004, 0.2]), minimum=rng.choice([1e-5, 1e-3]),
                  maximum=rng.choice([0.016, 0.05, 1.0]))
    python, native = RtoEstimator(**bounds), RtoEstimator(**bounds)
    for rtt in _rtts(rng, 400):
        python.sample(rtt)
        c_sample(native, rtt)
        assert fields_of(native) == fields_of(python)
        assert all(type(fields_of(native)[name]) is type(value)
                   for name, value in fields_of(python).items())


@pytest.mark.parametrize("seed", range(20))
def test_the_c_loss_burst_check_gives_the_same_verdicts(seed):
    """InaFastPath.bursts_lost (the C `LossBursts.lost` of the early resend) says and
    leaves what hosts/congestion.py's does, over windows of transmissions and losses."""
    from hosts.congestion import LossBursts
    from inaemu.sim.native import native_module
    c_lost = native_module().InaFastPath.bursts_lost
    rng = random.Random(seed)
    python, native = LossBursts(), LossBursts()
    rate = rng.choice([0.001, 0.01, 0.05, 0.3])
    verdicts, burst_left, window = [], 0, 16
    for _ in range(3000):
        if rng.random() < 0.01:                         # the window changes now and then
            window = rng.choice([1, 2, 7, 16, 64, 256])
        python.transmitted(window)
        native.transmitted(window)
        if not burst_left and rng.random() < 0.01:
            burst_left = rng.randrange(10, 80)         # a queue overflows for a while
        burst_left = max(0, burst_left - 1)
        if rng.random() < (0.9 if burst_left else rate):
            verdict = python.lost(window)
            assert c_lost(native, window) is verdict
            verdicts.append(verdict)
        assert fields_of(native) == fields_of(python)
    assert False in verdicts and True in verdicts


@pytest.mark.parametrize("seed", range(6))
def test_one_worker_gives_up_in_a_silence(seed):
    """Results with heavy loss (so every chunk's timer counts, not only the earliest's), then
    silence in long steps until a chunk is out of retries: the RTO timers expire in C until
    the give-up, which the C hands to Python; both listeners send the same frames, leave the
    same state after every step and end with the same error."""
    rng = random.Random(seed)
    kwargs = dict(job=7, worker=0, n=1, k=16, pool_size=32, window=32, rto=0.004,
                  rto_max=0.016, max_retx=2 + seed % 2, adaptive=seed % 3 != 0,
                  fast_retransmit=seed % 2 == 0)
    vector = np.random.default_rng(seed).standard_normal(16 * 4 * 200).astype(np.float32)
    pairs = [_make_worker(fast, kwargs, vector) for fast in (True, False)]
    for _loop, _node, worker in pairs:
        worker.start()
    fast_listener = pairs[0][1].handlers[(PROTO_UDP, INA_UDP_PORT)]
    now, answered = 0.0, 0
    for _step in range(5_000):
        assert pairs[0][1].uplink.frames == pairs[1][1].uplink.frames
        sent = [parse(f).payload for f in pairs[0][1].uplink.frames]
        for _loop, node, _worker in pairs:
            node.uplink.frames.clear()
        if pairs[0][2].outcome.finished:
            break
        results = [_result_of(p, 1) for p in sent if p[0] in (0, 2)]
        if answered > 120 or not results:
            now += 0.02 * rng.random() + 0.001          # silence: the timers fire together
            for loop, _node, _worker in pairs:
                loop.run(until=now)
            assert session_state(pairs[0][2].session) == session_state(pairs[1][2].session)
            continue
        for result in results:
            if result[0] == 1 and rng.random() < 0.3:   # lost
                continue
            answered += result[0] == 1
            now += rng.random() * 0.0001
            datagram = Datagram(PROTO_UDP, AGGREGATOR_IP, HOST_IP, INA_UDP_PORT,
                                INA_UDP_PORT, result)
            for loop, node, _worker in pairs:
                loop.run(until=now)
                node.handlers[(PROTO_UDP, INA_UDP_PORT)](datagram)
        assert session_state(pairs[0][2].session) == session_state(pairs[1][2].session)
    assert pairs[0][2].outcome.finished and pairs[1][2].outcome.finished
    assert pairs[0][2].outcome.error == pairs[1][2].outcome.error
    assert pairs[0][2].outcome.error is not None
    assert fast_listener.rto_resends + fast_listener.rto_postponed > 0
