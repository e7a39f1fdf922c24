"""A small pool of spawned, long-lived worker processes, one task at a time each, in which a worker that dies
fails only its own task (no Dagster here; eyt_dagster/ops/launch.py runs the location's jobs through it).

Each worker is a spawned process with one connection (a pipe) to this process. It runs the pool's initializer
once, then answers one task after another: it receives `(function, args)`, sends back `("ok", result)` or
`("error", exception)`, and ends on `None` or when the pipe closes. This process waits for a task's answer with
`multiprocessing.connection.wait` on the worker's connection and its process sentinel, so a worker that dies
without answering (a native crash, the out-of-memory killer, `kill -9`) is seen at once: its task's Future gets a
`WorkerDied` naming the signal or exit status, the worker is dropped and the next task gets a fresh worker. The
other workers are never touched (the standard library's ProcessPoolExecutor instead marks itself broken when one
worker dies and terminates the others, interrupting their tasks).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext
from typing import Any

from resources.runs.processes import process_start

# Signals that mean the process crashed in native code (a segmentation fault in a compiled extension, an abort).
CRASH_SIGNALS = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"}


def exit_cause(exitcode: int | None) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it), for a person to read."""
    if exitcode is None:
        return "an unknown cause"
    if exitcode >= 0:
        return f"exit status {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"
    if name in CRASH_SIGNALS:
        return f"{name} (a crash in native code)"
    if name == "SIGKILL":
        return "SIGKILL (killed by the kernel's out-of-memory killer or by kill -9)"
    return name


class WorkerDied(Exception):
    """A worker process ended while a task of its was running, without answering."""

    def __init__(self, pid: int, exitcode: int | None, process_start: str | None) -> None:
        self.pid, self.exitcode, self.process_start = pid, exitcode, process_start
        super().__init__(f"worker process {pid} died: {self.cause}")

    @property
    def cause(self) -> str:
        return exit_cause(self.exitcode)


class WorkerStartFailed(RuntimeError):
    """The worker's initializer raised, so it cannot run tasks; the message holds its traceback."""


def _serve(conn: Connection, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    """A worker's life: initialise once, then answer tasks until told to stop or the pipe closes. The worker leaves
    the terminal's process group first, so a Ctrl-C reaches only the pool's process, which hands it on to the
    workers with a task (WorkerPool.interrupt): the helper processes a task starts are never signalled by the
    terminal and print nothing."""
    import os

    try:
        os.setpgrp()
    except OSError:  # already a group leader
        pass
    broken = None
    try:
        if initializer is not None:
            initializer(*initargs)
    except BaseException:
        broken = WorkerStartFailed(f"the worker process could not start:\n{traceback.format_exc()}")
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):  # the pool's process is gone, or Ctrl-C while idle
            return
        if task is None:
            return
        if broken is not None:
            conn.send(("error", broken))
            continue
        function, args = task
        try:
            answer: tuple[str, Any] = ("ok", function(*args))
        except BaseException as exc:  # every failure is the task's: sent back to the caller
            answer = ("error", exc)
        try:
            conn.send(answer)
        except Exception as exc:  # an answer that does not pickle
            conn.send(("error", RuntimeError(f"the task's answer could not be sent back: {exc!r}")))


class _Worker:
    def __init__(
        self, context: SpawnContext, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]
    ) -> None:
        self.conn, child = context.Pipe()
        # not daemonic: a run may start processes of its own through multiprocessing (daemons may not)
        self.process = context.Process(target=_serve, args=(child, initializer, initargs))
        self.process.start()
        child.close()
        assert self.process.pid is not None  # set by start()
        self.pid: int = self.process.pid
        self.start_time = process_start(self.pid)  # readable until the process is reaped, even if already dead
        self.busy = False


class WorkerPool:
    """At most `size` spawned worker processes, each running `initializer(*initargs)` once and then one task at a
    time. `submit` hands a task to an idle worker (spawning one when fewer than `size` live) and returns a Future
    of its result; the caller keeps at most `size` tasks in flight. Use it as a context manager."""

    def __init__(
        self, size: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
    ) -> None:
        if size < 1:
            raise ValueError(f"a worker pool needs at least one worker, got {size}")
        self.size = size
        self._initializer, self._initargs = initializer, initargs
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(wait_for_tasks=exc[0] is None)

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._workers]

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run `function(*args)` in an idle worker; the Future raises WorkerDied if that worker dies meanwhile."""
        future: Future[Any] = Future()
        for _ in range(2):  # an idle worker may have died since its last task: then once more with a fresh one
            worker = self._idle_worker()
            try:
                worker.conn.send((function, args))
            except OSError:
                self._drop(worker)
                continue
            threading.Thread(target=self._await, args=(worker, future), daemon=True).start()
            return future
        raise RuntimeError("could not hand a task to a worker process: two fresh workers died at once")

    def _idle_worker(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            for worker in list(self._workers):
                if not worker.busy and not worker.process.is_alive():
                    self._workers.remove(worker)  # died between tasks: nothing of its to fail
            for worker in self._workers:
                if not worker.busy:
                    worker.busy = True
                    return worker
            if len(self._workers) >= self.size:
                raise RuntimeError(f"all {self.size} worker processes are busy")
            worker = _Worker(self._context, self._initializer, self._initargs)
            worker.busy = True
            self._workers.append(worker)
            return worker

    def _drop(self, worker: _Worker) -> None:
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)
        worker.conn.close()

    def _await(self, worker: _Worker, future: Future[Any]) -> None:
        """Wait for the worker's answer or its end, whichever comes first, and settle the Future."""
        try:
            ready = wait([worker.conn, worker.process.sentinel])
        except (OSError, ValueError):  # the pool was closed under it (close without waiting)
            ready = []
        if worker.conn in ready:
            try:
                kind, value = worker.conn.recv()
            except (EOFError, OSError):
                pass  # it died while answering
            else:
                with self._lock:
                    worker.busy = False
                if kind == "ok":
                    future.set_result(value)
                else:
                    future.set_exception(value)
                return
        worker.process.join()
        self._drop(worker)
        future.set_exception(WorkerDied(worker.pid, worker.process.exitcode, worker.start_time))

    def interrupt(self) -> int:
        """Send SIGINT to every worker with a task (what Ctrl-C does to a process), so each ends its task as an
        interrupted one; how many were signalled."""
        import os

        with self._lock:
            busy = [w for w in self._workers if w.busy and w.process.is_alive()]
        for worker in busy:
            try:
                os.kill(worker.pid, signal.SIGINT)
            except OSError:
                pass
        return len(busy)

    def close(self, wait_for_tasks: bool = True, timeout_s: float = 30.0) -> None:
        """Stop every worker: idle ones at once; busy ones after their task (or, with `wait_for_tasks` False, after
        at most `timeout_s`, then they are terminated)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
        for worker in workers:
            try:
                worker.conn.send(None)  # a busy worker reads it after its task
            except OSError:
                pass
        for worker in workers:
            worker.process.join(None if wait_for_tasks else timeout_s)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
