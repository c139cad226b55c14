"""The native core's switches are guarded by a SwitchLock (inaemu/sim/native/switchlock.c), a
reentrant lock the switch ports take in C and Python code takes as an RLock: it must behave
as threading.RLock does, for the loop's thread and a P4Runtime server's threads alike."""

from __future__ import annotations

import threading
import time

import pytest

from inaemu.sim.native import native_classes, native_module

native = native_module()
if native is None:  # pragma: no cover - the build is part of set-up (bootstrap.sh)
    pytest.fail("the native core did not build", pytrace=False)


@pytest.fixture(params=["SwitchLock", "RLock"])
def lock(request):
    """Each behaviour is checked on the SwitchLock and on the RLock it stands in for."""
    return native.SwitchLock() if request.param == "SwitchLock" else threading.RLock()


def test_it_is_reentrant_for_its_holder(lock):
    assert lock.acquire() is True
    assert lock.acquire(blocking=False) is True
    with lock:
        assert lock._is_owned()
    lock.release()
    assert lock._is_owned()
    lock.release()
    assert not lock._is_owned()


def test_releasing_a_lock_not_held_is_a_runtime_error(lock):
    with pytest.raises(RuntimeError):
        lock.release()
    with lock:
        pass
    with pytest.raises(RuntimeError):
        lock.release()


def test_another_thread_waits_until_the_holder_has_released_every_level(lock):
    events: list[str] = []
    lock.acquire()
    lock.acquire()
    holder_ready = threading.Event()

    def other():
        holder_ready.set()
        assert lock.acquire(blocking=False) is False
        assert lock.acquire(timeout=0.01) is False
        with pytest.raises(RuntimeError):
            lock.release()                      # not this thread's
        with lock:
            events.append("other")

    thread = threading.Thread(target=other)
    thread.start()
    holder_ready.wait()
    time.sleep(0.05)
    events.append("holder")
    lock.release()
    time.sleep(0.05)
    assert events == ["holder"]                 # one level still held: the other waits
    lock.release()
    thread.join(timeout=10)
    assert not thread.is_alive() and events == ["holder", "other"]


def test_contended_counting_loses_nothing(lock):
    total = [0]

    def count():
        for _ in range(20_000):
            with lock:
                value = total[0]
                with lock:                      # nested, as the runtime's methods nest
                    total[0] = value + 1

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert total[0] == 80_000


def test_waiters_that_time_out_leave_the_others_to_be_woken(lock):
    """Threads that give up waiting (timeouts) beside threads that wait for ever: every one
    of the latter gets the lock once the holder lets go, none twice at once, and the lock
    is free at the end (a release that signalled a waiter who had left must not be lost nor
    let two in)."""
    inside = [0]
    most = [0]
    got: list[str] = []
    lock.acquire()
    started = threading.Barrier(7)

    def patient(name: str) -> None:
        started.wait()
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            time.sleep(0.002)
            got.append(name)
            inside[0] -= 1

    def impatient() -> None:
        started.wait()
        for _ in range(5):
            if lock.acquire(timeout=0.005):
                lock.release()

    threads = [threading.Thread(target=patient, args=(f"p{i}",)) for i in range(4)]
    threads += [threading.Thread(target=impatient) for _ in range(2)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.05)                    # every patient one waiting, the impatient timing out
    assert got == []
    lock.release()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(got) == ["p0", "p1", "p2", "p3"] and most[0] == 1
    assert lock.acquire(blocking=False) is True
    lock.release()


def test_its_arguments_are_checked_as_an_rlocks_are(lock):
    with pytest.raises(ValueError):
        lock.acquire(False, 1.0)
    with pytest.raises(ValueError):
        lock.acquire(timeout=-2)
    with pytest.raises(TypeError):
        lock.acquire(wait=True)
    assert lock.acquire(True, 0.5) is True
    lock.release()


def test_the_native_cores_switches_are_guarded_by_it():
    """A switch node of the native core makes its runtime switch with a SwitchLock (also after
    a restart), which the ports take in C; the switches run as before."""
    from inaemu.sim.switch_node import SwitchCost
    classes = native_classes()
    loop = classes.loop()
    node = classes.switch(loop, "s1", 1, cost=SwitchCost())
    assert type(node.switch.lock) is native.SwitchLock
    node.restart()
    assert type(node.switch.lock) is native.SwitchLock


def test_a_set_up_for_the_native_core_makes_its_switches_with_it():
    """`prepare_setup(core="native")` configures switches the native core's ports lock in C;
    the Python core's set-up keeps RLocks (no native code in its runs)."""
    from inaemu.sim import SimJob
    from inaemu.sim.driver import prepare_setup
    from topologies.builders import star
    topology = star(2)
    jobs = [SimJob(job=1, workers=["h1", "h2"])]
    native_setup = prepare_setup(topology, jobs, elems_k=8, pool_size=4, core="native")
    python_setup = prepare_setup(topology, jobs, elems_k=8, pool_size=4)
    assert {type(s.lock) for s in native_setup.switches.values()} == {native.SwitchLock}
    assert {type(s.lock) for s in python_setup.switches.values()} == {type(threading.RLock())}
