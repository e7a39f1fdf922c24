"""Independent items through a thread pool, results in the items' order (model calls are I/O-bound).

The pool only decides how many items are started at once; how many requests reach one endpoint at once is
the endpoint's budget (resources/models/endpoint_gates.py), so a pool may be larger than any one budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(
    fn: Callable[[T], R], items: Iterable[T], workers: int, on_done: Callable[[int, int], None] | None = None
) -> list[R]:
    """[fn(item) for item in items], up to `workers` at once. `on_done(done, total)` is told (0, total) before the
    first item starts, so a progress display knows the total from the start, then after each item in item order.
    An exception from fn is raised (after the items already started end; the others are not started)."""
    items = list(items)
    total = len(items)
    out: list[R] = []
    if on_done is not None and total:
        on_done(0, total)
    if workers <= 1 or total <= 1:
        for item in items:
            out.append(fn(item))
            if on_done is not None:
                on_done(len(out), total)
        return out
    pool = ThreadPoolExecutor(max_workers=min(workers, total))
    try:
        futures = [pool.submit(fn, item) for item in items]
        for future in futures:
            out.append(future.result())
            if on_done is not None:
                on_done(len(out), total)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out
