"""Draws ahead on fastnormals.c's own thread (`fast_normals.draw_job`, `DrawAhead.submit_draw`):
NumPy's values and the generator left where NumPy leaves it, jobs in the order submitted, a
job cancelled before it runs never touches its generator, a job freed while queued or running
is safe, waiting for one lets other Python threads run, and a stream drawing ahead through it
reads its gradient's values."""

import os
import threading
import time

import numpy as np
import pytest

from hosts import draw_ahead as draw_ahead_module
from hosts.agent import gradient
from hosts.draw_ahead import DrawAhead
from hosts.gradient_stream import GradientStream, draw, numpy_draw
from inaemu.sim.native import fast_normals, native_loop_class
from inaemu.sim.native import why_not as native_why_not

pytestmark = pytest.mark.skipif(native_loop_class() is None,
                                reason=f"no native core here: {native_why_not()}")
LONG = 1 << 22          # ~10 ms of drawing: the worker is busy with it for a while


def test_jobs_draw_numpys_values_in_order_across_generators():
    generators = [np.random.default_rng([7, rank]) for rank in range(6)]
    references = [np.random.default_rng([7, rank]) for rank in range(6)]
    for count in (0, 1, 65_536, 100_003):
        jobs = [fast_normals.draw_job(g, count, 0.5) for g in generators]
        assert all(job is not None for job in jobs)
        for job, reference in zip(jobs, references):
            assert job.result().tobytes() == numpy_draw(reference, count, 0.5).tobytes()
            assert job.done() and not job.cancelled()
    for generator, reference in zip(generators, references):
        assert generator.bit_generator.state == reference.bit_generator.state


def test_a_job_cancelled_before_it_runs_leaves_its_generator_alone():
    busy = fast_normals.draw_job(np.random.default_rng(1), LONG, 1.0)
    generator = np.random.default_rng(2)
    before = generator.bit_generator.state
    job = fast_normals.draw_job(generator, 1000, 1.0)
    assert job.cancel() is True
    assert job.cancelled() and job.done()
    with pytest.raises(RuntimeError, match="cancelled"):
        job.result()
    busy.result()
    assert generator.bit_generator.state == before
    assert busy.cancel() is False and not busy.cancelled()     # (done: nothing to cancel)


def test_jobs_freed_while_queued_or_running_are_safe():
    """A job dropped while queued is taken out of the queue; one dropped while its values are
    drawn is waited for: the jobs after them still draw NumPy's values. (Their generators are
    dropped with them: a job keeps its bit generator alive.)"""
    for _ in range(3):
        running = fast_normals.draw_job(np.random.default_rng(3), LONG, 1.0)
        queued = fast_normals.draw_job(np.random.default_rng(4), LONG, 1.0)
        time.sleep(0.001)
        del running, queued
    reference = np.random.default_rng(5)
    job = fast_normals.draw_job(np.random.default_rng(5), 1000, 1.0)
    assert job.result().tobytes() == numpy_draw(reference, 1000, 1.0).tobytes()


def test_waiting_for_a_job_lets_other_python_threads_run():
    job = fast_normals.draw_job(np.random.default_rng(6), 8 * LONG, 1.0)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.0005)
    thread = threading.Thread(target=count)
    thread.start()
    try:
        job.result()
    finally:
        stop.set()
        thread.join()
    assert len(ticks) > 5


def test_bad_submissions_are_refused():
    module = fast_normals.module()
    bit_generator = np.random.default_rng(0).bit_generator
    capsule = bit_generator.capsule
    with pytest.raises(ValueError):
        module.submit(capsule, -1, 1.0, np.empty(4, np.float32), bit_generator)
    with pytest.raises(ValueError):
        module.submit(capsule, 8, 1.0, np.empty(4, np.float32), bit_generator)   # no room
    with pytest.raises(ValueError):
        module.submit(capsule, 4, 1.0, np.empty(4, np.float64), bit_generator)
    with pytest.raises(ValueError):
        module.submit(object(), 4, 1.0, np.empty(4, np.float32), bit_generator)
    with pytest.raises(TypeError):
        module.submit(capsule, 4, 1.0, np.empty(4, np.float32))
    assert fast_normals.draw_job(np.random.default_rng(0), 4, float("inf")) is None


def test_drawing_ahead_uses_the_worker_where_installed_and_threads_otherwise(monkeypatch):
    monkeypatch.setattr(draw_ahead_module, "_draw_worker", fast_normals.draw_job)
    with DrawAhead(threads=1) as ahead:
        job = ahead.submit_draw(draw, np.random.default_rng(8), 100, 1.0)
        assert type(job).__name__ == "DrawJob"
        future = ahead.submit_draw(draw, np.random.default_rng(8), 100, float("nan"))
        assert type(future).__name__ == "Future"          # (the C declines: a thread draws)
        assert job.result().tobytes() == numpy_draw(np.random.default_rng(8), 100).tobytes()
        busy = ahead.submit_draw(draw, np.random.default_rng(9), LONG, 1.0)
        queued = ahead.submit_draw(draw, np.random.default_rng(9), 10, 1.0)
    assert queued.cancelled()                             # the exit cancels what waits
    assert busy.done()
    monkeypatch.setattr(draw_ahead_module, "_draw_worker", None)
    with DrawAhead(threads=1) as ahead:
        assert type(ahead.submit_draw(draw, np.random.default_rng(8), 10, 1.0)).__name__ \
            == "Future"
    assert DrawAhead(threads=1).submit_draw(draw, np.random.default_rng(8), 10, 1.0) is None


def test_a_stream_drawing_ahead_through_the_worker_reads_its_gradient(monkeypatch):
    monkeypatch.setattr(draw_ahead_module, "_draw_worker", fast_normals.draw_job)
    length, block = 5 * 65_536 + 11, 65_536
    whole = gradient(3, 2, length)
    with DrawAhead(threads=1) as ahead:
        stream = GradientStream(3, 2, length, ahead=ahead)
        for first in range(0, length, block):
            end = min(first + block, length)
            assert stream.read(first, end).tobytes() == whole[first:end].tobytes()
        assert stream.read(0, 10).tobytes() == whole[:10].tobytes()     # (a read behind)
        stream.close()
    assert ahead.held == 0


def test_a_forked_child_draws_on_a_thread_of_its_own():
    """The child of a fork has no drawing thread: a job it inherited mid-draw is cancelled
    there (done, not waited for forever), and its own jobs start one."""
    busy = fast_normals.draw_job(np.random.default_rng(10), 8 * LONG, 1.0)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                       # the child: report, never return
        try:
            ok = busy.done()          # (cancelled, or drawn before the fork)
            job = fast_normals.draw_job(np.random.default_rng(11), 1000, 1.0)
            ok = ok and job.result().tobytes() == \
                numpy_draw(np.random.default_rng(11), 1000).tobytes()
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    assert answer == b"1"
    assert busy.result().size == 8 * LONG and not busy.cancelled()
