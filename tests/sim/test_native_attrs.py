"""The native core reads and writes the Python sessions' fields (inaemu/sim/native/attrs.c):
a plain slot at its cached offset, anything else by the generic protocol. Whatever path it
takes, it must see and leave what Python's own `getattr` / `setattr` would, also after the
class changes under the cache."""

from __future__ import annotations

import sys
import sysconfig

import pytest

from inaemu.sim.native import native_module

native = native_module()
if native is None:  # pragma: no cover - the build is part of set-up (bootstrap.sh)
    pytest.fail("the native core did not build", pytrace=False)


def slotted_class():
    class Slotted:
        __slots__ = ("size", "rate", "unset")

        def __init__(self, size, rate):
            self.size, self.rate = size, rate
    return Slotted


def test_a_slot_is_read_and_written_at_its_offset_after_the_first_access():
    cls = slotted_class()
    o = cls(3, 0.5)
    assert native.attr_get(o, "size") == 3
    misses = native.attr_misses()
    for value in range(100):
        native.attr_set(o, "size", value)
        assert o.size == value and native.attr_get(o, "size") == value
    assert native.attr_get(o, "rate") == 0.5           # another name: its own first miss
    assert native.attr_misses() == misses + 1
    other = cls(7, 1.5)                                 # another object of the class
    assert native.attr_get(other, "size") == 7 and native.attr_misses() == misses + 1


def test_values_are_owned_by_the_object():
    """A written value is referenced by the slot (not borrowed), the old one released."""
    import sys
    o = slotted_class()(0, 0.0)
    value = object()
    before = sys.getrefcount(value)
    native.attr_set(o, "size", value)
    assert sys.getrefcount(value) == before + 1
    native.attr_set(o, "size", 1)
    assert sys.getrefcount(value) == before
    assert native.attr_get(o, "size") == 1


def test_an_unset_slot_raises_as_python_does():
    o = slotted_class()(1, 2.0)
    native.attr_get(o, "size")                          # the class is cached
    with pytest.raises(AttributeError, match="unset"):
        native.attr_get(o, "unset")
    native.attr_set(o, "unset", "now")
    assert o.unset == "now" and native.attr_get(o, "unset") == "now"


def test_a_class_changed_after_caching_is_read_as_changed():
    """A property put over a cached slot: the type's version tag changes, the C follows."""
    cls = slotted_class()
    o = cls(5, 0.0)
    assert native.attr_get(o, "size") == 5
    descriptor = cls.__dict__["size"]
    cls.size = property(lambda self: 42, lambda self, value: None)
    assert native.attr_get(o, "size") == 42
    native.attr_set(o, "size", 9)                       # the property's setter drops it
    cls.size = descriptor                               # the slot back: the value kept
    assert native.attr_get(o, "size") == 5 == o.size


def test_a_subclass_with_its_own_setattr_or_property_takes_the_generic_path():
    cls = slotted_class()
    seen = []

    class Watched(cls):
        __slots__ = ()

        def __setattr__(self, name, value):
            seen.append((name, value))
            object.__setattr__(self, name, value)

    class Shadowed(cls):
        __slots__ = ()
        size = property(lambda self: -1)

    base, watched, shadowed = cls(1, 0.0), Watched(2, 0.0), Shadowed.__new__(Shadowed)
    assert native.attr_get(base, "size") == 1
    native.attr_set(watched, "size", 3)
    assert seen[-1] == ("size", 3) and watched.size == 3
    assert native.attr_get(watched, "size") == 3
    assert native.attr_get(shadowed, "size") == -1
    with pytest.raises(AttributeError):
        native.attr_set(shadowed, "size", 4)            # a property without a setter


def test_an_instance_dict_and_a_class_attribute_are_read_as_python_reads_them():
    class Plain:
        limit = 10

        def __init__(self):
            self.count = 1

    o = Plain()
    assert native.attr_get(o, "count") == 1 and native.attr_get(o, "limit") == 10
    native.attr_set(o, "limit", 11)                     # an instance field over the class's
    assert o.limit == 11 and Plain.limit == 10
    native.attr_set(o, "count", 2)
    assert o.__dict__ == {"count": 2, "limit": 11}
    with pytest.raises(AttributeError):
        native.attr_get(o, "missing")


def test_the_session_classes_fields_the_c_reads_are_slots():
    """The classes whose fields an INA RESULT (~50 a result), a ring segment or a switch's
    packet (the runtime's engine, its queues, the output stage) reads and writes keep them in
    slots: a field added in __init__ without one would raise here, in the class itself."""
    from hosts.congestion import CongestionEvents, InFlightWindow, LossBursts, RtoEstimator
    from hosts.ina_codec import FloatCodec
    from hosts.ina_recovery import LossRecovery
    from hosts.ina_session import InaSession
    from hosts.ina_silence import SilenceRules
    from hosts.ina_state import Counters
    from hosts.ring_session import RingCounters, RingSession
    from hosts.ring_wire import StreamDecoder
    from inaemu.sim.host_node import Timer, WorkerOutcome
    from inaemu.sim.reliable import ReliableReceiver, ReliableSender, SenderCounters
    from inaemu.sim.ring_worker import RingWorker
    from p4switch.ports.output import OutputStage
    from p4switch.runtime.engine import Engine
    from p4switch.runtime.state.queues import EgressQueues
    from p4switch.runtime.switch import Switch
    for cls in (CongestionEvents, InFlightWindow, LossBursts, RtoEstimator, FloatCodec,
                LossRecovery, InaSession, SilenceRules, Counters, Timer, WorkerOutcome,
                RingCounters, RingSession, StreamDecoder, ReliableReceiver, ReliableSender,
                SenderCounters, RingWorker, Switch, Engine, EgressQueues, OutputStage):
        assert "__slots__" in cls.__dict__, cls.__name__
        assert "__dict__" not in dir(cls) or cls in (Switch, Engine), cls.__name__
    session = InaSession(job=1, worker=0, n=2, k=8, pool_size=4, window=4, rto=0.01,
                         rto_max=0.1, max_retx=5)
    native.attr_get(session, "_next_chunk")             # cached now, if no test did before
    native.attr_get(session.counters, "packets_sent")
    misses = native.attr_misses()
    for _ in range(3):
        native.attr_get(session, "_next_chunk")
        native.attr_set(session.counters, "packets_sent", 1)
    assert native.attr_misses() == misses and session.counters.packets_sent == 1


def test_more_classes_than_the_cache_holds_are_each_read_right():
    """2,000 (name, class) pairs over a cache of 1,024 entries: entries are replaced, never
    confused (each class's slots at other offsets)."""
    classes = [type(f"C{i}", (), {"__slots__": tuple(f"f{j}" for j in range(i % 7 + 1))})
               for i in range(2000)]
    objects = []
    for i, cls in enumerate(classes):
        o = cls()
        for j in range(i % 7 + 1):
            setattr(o, f"f{j}", (i, j))
        objects.append(o)
    for i, o in enumerate(objects):
        assert native.attr_get(o, f"f{i % 7}") == (i, i % 7)
        native.attr_set(o, "f0", (i, "set"))
        assert o.f0 == (i, "set")
    for i, o in enumerate(objects):                     # again, over entries replaced since
        assert native.attr_get(o, "f0") == (i, "set")
        assert native.attr_get(o, f"f{i % 7}") == ((i, "set") if i % 7 == 0 else (i, i % 7))


def test_a_native_host_keeps_its_loop_and_ident_where_the_c_reads_them():
    """HostNode's `loop` and `_ident` are HostPort's own fields under the native core (its
    other fields are in the subclass's dict, which the C reads the generic way)."""
    from inaemu.sim.network import SimNetwork
    from topologies.builders import star
    net = SimNetwork(star(2), seed=0, core="native")
    host = next(iter(net.hosts.values()))
    assert "loop" not in host.__dict__ and "_ident" not in host.__dict__
    assert native.attr_get(host, "loop") is net.loop
    assert host.next_ident() == native.attr_get(host, "_ident") == 1
    misses = native.attr_misses()
    native.attr_set(host, "_ident", 0xFFFF)
    assert host.next_ident() == 0 and native.attr_misses() == misses


def test_a_number_only_its_field_holds_is_given_the_new_value_in_place():
    """Counters and times the C updates per packet are written into the object the field holds
    when nothing else holds it (attrs.c `set_ll`, `set_double`): the same object, the new
    value, as getattr reads it. (Ints are written in place only on the CPython versions
    whose digits attrs.c knows; this machine's 3.11 and Debian 13's 3.13 are among them.)"""
    floats_in_place, ints_in_place = native.numbers_in_place
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert floats_in_place != free_threaded
    assert ints_in_place == (not free_threaded and sys.version_info < (3, 15))
    o = slotted_class()(int("10001"), float("1.25"))    # (made at run time: not constants)
    native.attr_get(o, "size")
    size, rate = id(o.size), id(o.rate)
    for value in (10_002, 999_999, (1 << 30) - 1):
        native.attr_set_number(o, "size", value)
        assert o.size == value and native.attr_get(o, "size") == value
        assert id(o.size) == size or not ints_in_place
    native.attr_set_number(o, "size", 5, True)
    assert o.size == (1 << 30) + 4                      # past one digit: a new int
    for value in (1.5, -0.0, float("inf"), 1e-300):
        native.attr_set_number(o, "rate", value)
        assert o.rate == value and str(o.rate) == str(value)
    assert id(o.rate) == rate or not floats_in_place
    o.size = int("12345")
    size = id(o.size)
    native.attr_set_number(o, "size", 3, True)
    assert o.size == 12_348 and (id(o.size) == size or not ints_in_place)


def test_a_number_held_elsewhere_is_never_changed():
    """Where another reference holds the field's object (a caller's variable, a cached small
    int, a constant), the field gets a new object and the old one keeps its value."""
    o = slotted_class()(int("20001"), float("3.5"))
    kept_size, kept_rate = o.size, o.rate
    native.attr_set_number(o, "size", 20_002)
    native.attr_set_number(o, "rate", 7.25)
    assert (kept_size, kept_rate) == (20_001, 3.5)
    assert (o.size, o.rate) == (20_002, 7.25)
    o.size = 7                                          # a cached small int
    native.attr_set_number(o, "size", 9)
    native.attr_set_number(o, "size", 1, True)
    assert o.size == 10 and 3 + 4 == 7 and int("7") == 7
    for value in (0, -5, 1 << 40, -(1 << 40)):          # zero, negative, more than one digit
        o.size = int("30001")
        native.attr_set_number(o, "size", value)
        assert o.size == value


def test_counters_and_times_are_read_as_python_reads_them():
    """`get_ll` reads a one-digit int from its object directly and anything else through
    PyLong_AsLongLong; `get_double` a float directly, anything else through PyFloat_AsDouble:
    the same values, and the same errors."""
    o = slotted_class()(0, 0.0)
    for value in (0, 1, -1, 255, 257, (1 << 30) - 1, 1 << 30, -(1 << 30), 1 << 62,
                  -(1 << 63), (1 << 63) - 1, True, False):
        o.size = value
        got = native.attr_get_number(o, "size", False)
        assert got == int(value) and type(got) is int
    for value in (1 << 63, -(1 << 63) - 1):
        o.size = value
        with pytest.raises(OverflowError):
            native.attr_get_number(o, "size", False)
    o.size = 1.5
    with pytest.raises(TypeError):
        native.attr_get_number(o, "size", False)
    for value in (0.0, -0.0, 1e300, float("inf"), 3, True):
        o.rate = value
        got = native.attr_get_number(o, "rate", True)
        assert got == float(value) and str(got) == str(float(value))
    o.rate = "slow"
    with pytest.raises(TypeError):
        native.attr_get_number(o, "rate", True)
    with pytest.raises(AttributeError):
        native.attr_get_number(o, "unset", False)


def test_ints_are_compared_as_python_compares_them():
    """`int_compare` (chunk numbers in the INA path): one-digit ints as C numbers, the rest
    (ints past a digit, bools, floats, other types) as Python compares them, for every op."""
    import operator
    ops = [operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]
    digit = 1 << 30
    values = [0, 1, -1, 5, 255, 256, 257, 1000, digit - 1, digit, digit + 1, -digit,
              (1 << 62) + 3, True, False, 2.5, 5.0]
    for a in values:
        for b in values:
            for code, op in enumerate(ops):
                assert native.int_compare(a, b, code) is op(a, b), (a, b, op)
    with pytest.raises(TypeError):
        native.int_compare(1, "1", 0)           # as Python: no order between int and str
    assert native.int_compare(1, "1", 2) is False
    with pytest.raises(TypeError):
        native.int_compare(1, 2, 6)
