"""The worker pool `eyt` runs its Dagster runs in: a worker that crashes in native code or is killed fails its own
task only; the other worker's task finishes, and the next task gets a fresh worker. Plain tasks in spawned
processes (no code location), so each case costs well under a second."""

import os
import signal
import time

import pytest

from eyt_dagster.ops.worker_pool import WorkerDied, WorkerPool, WorkerStartFailed, exit_cause

pytestmark = pytest.mark.unit


def answer(value):
    return value, os.getpid()


def fail(text):
    raise ValueError(text)


def crash_in_native_code():
    import ctypes

    ctypes.string_at(0)  # reads address 0 in C: a real segmentation fault


def sleep_then_answer(seconds):
    time.sleep(seconds)
    return os.getpid()


def broken_start():
    raise ImportError("no module named 'the_code_location'")


def wait_until(predicate, seconds=20.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_tasks_run_in_reused_workers_and_errors_come_back_as_exceptions():
    with WorkerPool(1) as pool:
        value, pid = pool.submit(answer, 7).result(30)
        assert value == 7 and pid != os.getpid()
        with pytest.raises(ValueError, match="bad input"):
            pool.submit(fail, "bad input").result(30)
        assert pool.submit(answer, 8).result(30) == (8, pid)  # the same worker: the initializer ran once
    with pytest.raises(ValueError, match="at least one"):
        WorkerPool(0)


def test_a_native_crash_fails_only_its_task_and_the_next_task_gets_a_new_worker():
    with WorkerPool(2) as pool:
        neighbour = pool.submit(sleep_then_answer, 1.5)
        wait_until(lambda: len(pool.pids) == 1)
        survivor = pool.pids[0]
        crashed = pool.submit(crash_in_native_code)
        with pytest.raises(WorkerDied) as died:
            crashed.result(30)
        assert died.value.exitcode == -signal.SIGSEGV and died.value.cause.startswith("SIGSEGV")
        assert died.value.pid != survivor and died.value.process_start  # read while the worker lived
        assert neighbour.result(30) == survivor  # the other worker's task was not interrupted
        assert died.value.pid not in pool.pids  # dropped
        assert pool.submit(answer, 1).result(30)[1] != died.value.pid


def test_a_worker_killed_from_outside_fails_its_task_with_the_signal_named():
    with WorkerPool(1) as pool:
        task = pool.submit(sleep_then_answer, 30)
        wait_until(lambda: len(pool.pids) == 1)
        [pid] = pool.pids
        time.sleep(0.3)  # let it take the task
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerDied, match="SIGKILL") as died:
            task.result(30)
        assert died.value.pid == pid and "out-of-memory" in died.value.cause
        assert pool.submit(answer, 2).result(30)[1] != pid  # replaced


def test_a_worker_whose_initializer_fails_answers_every_task_with_the_traceback():
    with WorkerPool(1, broken_start) as pool:
        for _ in range(2):
            with pytest.raises(WorkerStartFailed, match="the_code_location"):
                pool.submit(answer, 1).result(30)


def test_exit_causes_name_the_signal_and_what_it_usually_means():
    assert exit_cause(-signal.SIGSEGV) == "SIGSEGV (a crash in native code)"
    assert exit_cause(-signal.SIGKILL).startswith("SIGKILL (killed by the kernel's out-of-memory killer")
    assert exit_cause(-signal.SIGTERM) == "SIGTERM"
    assert exit_cause(3) == "exit status 3"
