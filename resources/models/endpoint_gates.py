"""Per-endpoint concurrency budgets shared by every caller in the process, and a shared backoff on 429.

An endpoint is a (base URL, model) pair. Its gate lets at most `budget` HTTP requests be in flight to it at
once, whichever thread, client object, role or Dagster step sends them (the budget is the model's
`max_concurrency` in the slate; two slate entries naming the same endpoint share one gate, with the smaller
budget). Every HTTP attempt passes the gate, the SDK's own retries included.

A 429 (rate limited) pauses the whole endpoint: no caller sends until the pause ends (the Retry-After /
retry-after-ms the server sent, else DEFAULT_PAUSE_S), and the effective budget halves (at least 1); each
later success grows it back by one up to the budget. So a rate-limited provider sees fewer errors, and the
run still finishes.

The budget and the pause also hold across the processes of the machine (`eyt run --parallel N` workers, several
`eyt` or `dagster job execute` commands at once): each attempt holds one of the endpoint's machine-wide slots too,
and a 429 seen by any process pauses the others (resources/models/endpoint_slots.py, docs/endpoint-budgets.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from resources.models.endpoint_slots import MachineSlots, endpoint_key, slots_dir, wait_for_pause

DEFAULT_PAUSE_S = 1.0  # a 429 without Retry-After pauses the endpoint this long
MAX_PAUSE_S = 120.0  # the longest pause taken from a Retry-After (the SDK does not retry beyond this either)


class EndpointGate:
    """The budget and backoff state of one endpoint."""

    def __init__(self, name: str, budget: int, machine: MachineSlots | None = None) -> None:
        self.name = name
        self.machine = machine  # the machine-wide slots and pause (None: this process only)
        self._shared_seen = 0.0  # the latest machine-wide pause end (epoch seconds) this gate has taken in
        self.budget = max(1, budget)
        self.limit = self.budget  # the effective budget: lowered by a 429, grown back by successes
        self.in_flight = 0
        self.max_in_flight = 0
        self.paused_until = 0.0  # time.monotonic() before which nothing is sent
        self.rate_limited_count = 0
        self.sent = 0  # HTTP attempts let through (a step's progress shows the endpoints it sent to)
        self.shared_pauses_seen = 0  # pauses set by other processes' 429s
        self._cond = threading.Condition()

    def narrow(self, budget: int) -> None:
        """A second slate entry for the same endpoint: keep the smaller budget."""
        with self._cond:
            self.budget = min(self.budget, max(1, budget))
            self.limit = min(self.limit, self.budget)
        if self.machine is not None:
            self.machine.narrow(budget)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the endpoint's slots for one HTTP attempt (waits for a free slot and for any pause), and
        one of its machine-wide slots when it has them."""
        with self._cond:
            while True:
                self._take_in_shared_pause()
                wait = self.paused_until - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                elif self.in_flight >= self.limit:
                    self._cond.wait()
                else:
                    break
            self.in_flight += 1
            self.sent += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        index = None
        try:
            if self.machine is not None:
                index = self.machine.acquire()
                wait_for_pause(self.machine)  # a pause set while this call waited for the slot
            yield
        finally:
            if index is not None and self.machine is not None:
                self.machine.release(index)
            with self._cond:
                self.in_flight -= 1
                self._cond.notify_all()

    def answered(self, status: int, retry_after_s: float | None) -> None:
        """Adjust to one HTTP answer: a 429 pauses the endpoint and halves the budget; a success grows it by one."""
        with self._cond:
            if status == 429:
                self.rate_limited_count += 1
                self.limit = max(1, self.limit // 2)
                pause = DEFAULT_PAUSE_S if retry_after_s is None else min(max(retry_after_s, 0.0), MAX_PAUSE_S)
                self.paused_until = max(self.paused_until, time.monotonic() + pause)
                if self.machine is not None:
                    self._shared_seen = max(self._shared_seen, self.machine.pause(time.time() + pause))
                self._cond.notify_all()
            elif status < 400 and self.limit < self.budget:
                self.limit += 1
                self._cond.notify_all()

    def _take_in_shared_pause(self) -> None:
        """A machine-wide pause another process set after a 429: pause here too and halve the budget, as if this
        process had seen the 429 (called holding the condition)."""
        if self.machine is None:
            return
        until = self.machine.paused_until()
        if until <= self._shared_seen:
            return
        self._shared_seen = until
        left = until - time.time()
        if left > 0:
            self.shared_pauses_seen += 1
            self.limit = max(1, self.limit // 2)
            self.paused_until = max(self.paused_until, time.monotonic() + min(left, MAX_PAUSE_S))


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: retry-after-ms, else Retry-After in seconds or as an HTTP date."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            return parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None


_GATES: dict[tuple[str, str], EndpointGate] = {}
_GATES_LOCK = threading.Lock()


@dataclass(frozen=True)
class GateState:
    """One gate at one moment, for progress figures: its endpoint (model and base URL), requests in flight, its
    budget, attempts sent and 429s seen in this process so far."""

    model: str
    base_url: str
    in_flight: int
    budget: int
    sent: int
    rate_limited: int


def gate_states() -> list[GateState]:
    """Every gate of this process as it is now (a read of counters, no waiting on a gate)."""
    with _GATES_LOCK:
        gates = list(_GATES.items())
    return [
        GateState(model, base_url, gate.in_flight, gate.budget, gate.sent, gate.rate_limited_count)
        for (base_url, model), gate in gates
    ]


def gate_for(base_url: str, model: str, budget: int) -> EndpointGate:
    """The process-wide gate of an endpoint (created on first use; a smaller budget narrows it), with the
    endpoint's machine-wide slots unless EYT_ENDPOINT_SLOTS is `off`."""
    key = (base_url.rstrip("/"), model)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            folder = slots_dir()
            machine = None if folder is None else MachineSlots(folder, endpoint_key(*key), budget)
            gate = _GATES[key] = EndpointGate(f"{model} at {key[0]}", budget, machine)
            return gate
    if budget < gate.budget:
        gate.narrow(budget)
    return gate
