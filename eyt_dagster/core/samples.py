"""Repeated samples of one model call (the noise floor: docs/eyt-metrics.md#the-noise-floor). Sample 0 is the
call as it was made before repeats existed; sample r sends the seed `sample_seed(slate seed, r)` where the API takes
one, and its calls have their own cache keys (resources/models/call_cache.py)."""

from __future__ import annotations


def sample_seed(slate_seed: int, repeat: int) -> int:
    """The seed sample `repeat` sends: the slate's seed for sample 0, then the next integers."""
    if repeat < 0:
        raise ValueError(f"a repeat index is 0 or more, got {repeat}")
    return slate_seed + repeat
