"""An endpoint's budget and 429 pause shared by every process on the machine (lock files; no Dagster here).

resources/models/endpoint_gates.py keeps one process's calls to an endpoint within its `max_concurrency`. Several
processes call the same endpoint at once (the worker processes of `eyt run --parallel N`, two `eyt` commands,
`dagster job execute` beside them), so the budget is also held per machine here:

* **Slots.** An endpoint with budget N has N slot files `<key>.slot<i>` in the slots folder; an HTTP attempt holds
  an exclusive `flock` on one of them. `flock` belongs to the open file, so the kernel releases it when the holder
  closes it or dies in any way (kill -9 included): a killed process never keeps a slot. A caller first tries every
  slot without blocking; when all are taken it blocks on one slot that no other thread of its process holds or
  waits for, so every taken slot has at most one waiter per process and whoever frees one hands it on at once.
* **Pause.** A 429 seen by any process pauses the endpoint for all: the pause's end (epoch seconds) is the
  modification time of `<key>.pause`, set with `os.utime` under a lock and read with one `os.stat` before each
  attempt. A process that finds a pause it did not set lowers its own budget as if it had seen the 429 itself.
* **Key.** The first 16 hex digits of sha256(base URL + model): the files name neither the server nor any key.

The folder is `EYT_ENDPOINT_SLOTS` when set (`off` turns the machine-wide budget off), else
`<temp dir>/eyt-endpoint-slots-<uid>`: one per user and machine, whatever the data directory. Processes on other
machines are not counted; a cluster uses Dagster pools instead (docs/endpoint-budgets.md).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import random
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eyt_dagster.core import env_settings

SLOTS_ENV = env_settings.ENDPOINT_SLOTS.name
OFF = "off"


def slots_dir() -> Path | None:
    """The machine's slots folder (None: the machine-wide budget is turned off)."""
    return env_settings.ENDPOINT_SLOTS.get()


def endpoint_key(base_url: str, model: str) -> str:
    """The files' name for an endpoint: a digest of its base URL and model (never a credential)."""
    return hashlib.sha256(f"{base_url.rstrip('/')}\n{model}".encode()).hexdigest()[:16]


class MachineSlots:
    """The machine-wide slots and pause of one endpoint, as seen from this process."""

    def __init__(self, folder: Path, key: str, budget: int) -> None:
        self.folder = Path(folder)
        self.key = key
        self.budget = max(1, budget)
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._pause_file = self.folder / f"{key}.pause"
        self._lock = threading.Lock()
        self._fds: dict[int, int] = {}  # slot index -> this process's open file of it
        self._busy: set[int] = set()  # slots a thread of this process holds or waits for
        _OPEN.add(self)

    def narrow(self, budget: int) -> None:
        with self._lock:
            self.budget = min(self.budget, max(1, budget))

    def _fd(self, index: int) -> int:
        fd = self._fds.get(index)
        if fd is None:
            fd = self._fds[index] = os.open(self.folder / f"{self.key}.slot{index}", os.O_RDWR | os.O_CREAT, 0o600)
        return fd

    def _try(self, index: int) -> bool:
        try:
            fcntl.flock(self._fd(index), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False
            raise

    def acquire(self) -> int:
        """Take a slot (blocking while all N are held on the machine); returns its index for `release`."""
        with self._lock:
            free = [i for i in range(self.budget) if i not in self._busy]
            start = random.randrange(len(free)) if free else 0
            for index in free[start:] + free[:start]:
                if self._try(index):
                    self._busy.add(index)
                    return index
            if not free:  # more threads than slots: only when the budget narrowed under running calls
                raise RuntimeError(f"endpoint {self.key}: every slot is busy in this process")
            index = random.choice(free)
            self._busy.add(index)
            fd = self._fd(index)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # releases the GIL while it waits
        except BaseException:
            with self._lock:
                self._busy.discard(index)
            raise
        return index

    def release(self, index: int) -> None:
        with self._lock:
            fcntl.flock(self._fds[index], fcntl.LOCK_UN)
            self._busy.discard(index)

    @contextmanager
    def slot(self) -> Iterator[int]:
        index = self.acquire()
        try:
            yield index
        finally:
            self.release(index)

    # -- the shared pause ---------------------------------------------------------------------------

    def paused_until(self) -> float:
        """The end of the endpoint's pause as epoch seconds (0 when none was ever set)."""
        try:
            return os.stat(self._pause_file).st_mtime
        except FileNotFoundError:
            return 0.0

    def pause(self, until: float) -> float:
        """Pause the endpoint on the whole machine until `until` (epoch seconds), unless a later pause is set;
        returns the pause's end now in force."""
        fd = os.open(self._pause_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            current = os.fstat(fd).st_mtime
            if until > current:
                os.utime(fd, (until, until))
                return until
            return current
        finally:
            os.close(fd)  # also releases the flock

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            self._busy.clear()

    def _forget_inherited(self) -> None:
        """In a forked child: close the parent's open slot files. The parent's locks stay with the parent (they
        belong to its open files), and the child no longer keeps them alive should the parent die first."""
        self._lock = threading.Lock()
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds, self._busy = {}, set()


_OPEN: weakref.WeakSet[MachineSlots] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for slots in list(_OPEN):
        slots._forget_inherited()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def wait_for_pause(slots: MachineSlots) -> float:
    """Sleep until the machine-wide pause (if any) is over; returns the seconds slept."""
    slept = 0.0
    while True:
        wait = slots.paused_until() - time.time()
        if wait <= 0:
            return slept
        time.sleep(wait)
        slept += wait
