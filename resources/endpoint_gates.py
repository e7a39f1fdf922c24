"""Per-endpoint concurrency budgets shared by every caller in the process, and a shared backoff on 429.

An endpoint is a (base URL, model) pair. Its gate lets at most `budget` HTTP requests be in flight to it at
once, whichever thread, client object, role or Dagster step sends them (the budget is the model's
`max_concurrency` in the slate; two slate entries naming the same endpoint share one gate, with the smaller
budget). Every HTTP attempt passes the gate, the SDK's own retries included.

A 429 (rate limited) pauses the whole endpoint: no caller sends until the pause ends (the Retry-After /
retry-after-ms the server sent, else DEFAULT_PAUSE_S), and the effective budget halves (at least 1); each
later success grows it back by one up to the budget. So a rate-limited provider sees fewer errors, and the
run still finishes. Gates are per process: concurrent runs in separate processes do not share them (see
docs/throughput.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime

DEFAULT_PAUSE_S = 1.0  # a 429 without Retry-After pauses the endpoint this long
MAX_PAUSE_S = 120.0  # the longest pause taken from a Retry-After (the SDK does not retry beyond this either)


class EndpointGate:
    """The budget and backoff state of one endpoint."""

    def __init__(self, name: str, budget: int) -> None:
        self.name = name
        self.budget = max(1, budget)
        self.limit = self.budget  # the effective budget: lowered by a 429, grown back by successes
        self.in_flight = 0
        self.max_in_flight = 0
        self.paused_until = 0.0  # time.monotonic() before which nothing is sent
        self.rate_limited_count = 0
        self._cond = threading.Condition()

    def narrow(self, budget: int) -> None:
        """A second slate entry for the same endpoint: keep the smaller budget."""
        with self._cond:
            self.budget = min(self.budget, max(1, budget))
            self.limit = min(self.limit, self.budget)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the endpoint's slots for one HTTP attempt (waits for a free slot and for any pause)."""
        with self._cond:
            while True:
                wait = self.paused_until - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                elif self.in_flight >= self.limit:
                    self._cond.wait()
                else:
                    break
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        finally:
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
                self._cond.notify_all()
            elif status < 400 and self.limit < self.budget:
                self.limit += 1
                self._cond.notify_all()


def retry_after_seconds(headers) -> float | None:  # noqa: ANN001 - any mapping of header names to values
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


def gate_for(base_url: str, model: str, budget: int) -> EndpointGate:
    """The process-wide gate of an endpoint (created on first use; a smaller budget narrows it)."""
    key = (base_url.rstrip("/"), model)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = EndpointGate(f"{model} at {key[0]}", budget)
            return gate
    if budget < gate.budget:
        gate.narrow(budget)
    return gate
