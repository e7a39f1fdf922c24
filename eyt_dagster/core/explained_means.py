"""A mean, and a mean of paired differences, with their arithmetic (`Explained`): what a table stores as a mean of
per-unit values is computed here, so the stored number and the steps a reader sees come out of one call.

The value is numpy's mean of the values kept (those without NaN), as `core.stats` computes the estimates of its
bootstrap intervals (`bootstrap_mean_ci`, `paired_bootstrap_diff`), so a table that stores either gets the same
number to the bit; the sum the steps show is numpy's sum of the same values, which that mean divides. Pure; knows
no benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eyt_dagster.core.explained import Explained, Step, figure, sum_of, term

SHOWN = 12  # a long list of values: its first and last six, with how many are between


def _with_values(values: Sequence[float] | np.ndarray, unit: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """The values that are not NaN, and the note saying how many units were left out for having none."""
    numbers = np.asarray(values, dtype=float)
    kept = numbers[~np.isnan(numbers)]
    left = len(numbers) - len(kept)
    return kept, (f"{left} {unit}(s) without a value left out",) if left else ()


def explained_mean(label: str, values: Sequence[float] | np.ndarray, what: str, unit: str = "unit") -> Explained:
    """The mean of `values` (NaN dropped) with its arithmetic: `what` of the N `unit`(s) with a value, summed, then
    divided by N. NaN when no value is left."""
    kept, notes = _with_values(values, unit)
    if not len(kept):
        return Explained(label, float("nan"), (Step(f"no {unit} has a value: missing"),), notes)
    total, value = float(kept.sum()), float(kept.mean())
    steps = (
        Step(f"{what} of the {len(kept)} {unit}(s) with a value, summed", sum_of(kept.tolist(), SHOWN), total),
        Step(f"mean over those {unit}s", f"{figure(total)} / {len(kept)}", value, (total, float(len(kept)))),
    )
    return Explained(label, value, steps, notes)


def explained_paired_difference(
    label: str,
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    units: Sequence[str],
    names: tuple[str, str] = ("A", "B"),
    unit: str = "unit",
) -> Explained:
    """The mean of a - b over the units both have a value for (a pair with NaN on either side dropped), with its
    arithmetic: each unit's difference (the first and last few of a long list), their sum, the division. `names`
    are what a and b stand for. The value is `paired_bootstrap_diff`'s `diff` of the same values, to the bit."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or len(x) != len(units):
        raise ValueError(f"paired values differ in length: {x.shape}, {y.shape}, {len(units)} units")
    keep = ~(np.isnan(x) | np.isnan(y))
    left = int((~keep).sum())
    notes = (f"{left} {unit}(s) left out: no value of {names[0]} or of {names[1]}",) if left else ()
    differences = x[keep] - y[keep]
    if not len(differences):
        return Explained(label, float("nan"), (Step(f"no {unit} has a value of both: missing"),), notes)
    kept = [u for u, k in zip(units, keep) if k]
    each = [
        Step(f"{unit} {u}: {names[0]} - {names[1]}", f"{figure(p)} - {term(q)}", d, (float(p), float(q)))
        for u, p, q, d in zip(kept, x[keep], y[keep], differences)
    ]
    if len(each) > SHOWN:  # the first and last few: the sum below has them all
        half = SHOWN // 2
        each = [*each[:half], Step(f"... {len(each) - SHOWN} more {unit}(s) ..."), *each[-half:]]
    total, value = float(differences.sum()), float(differences.mean())
    steps = (
        *each,
        Step(f"the {len(differences)} difference(s), summed", sum_of(differences.tolist(), SHOWN), total),
        Step(f"mean over those {unit}s", f"{figure(total)} / {len(differences)}", value),
    )
    return Explained(label, value, steps, notes)


def explained_share(label: str, hits: Sequence[float] | np.ndarray, what: str, unit: str = "unit") -> Explained:
    """The share of the units that are hits (1.0; 0.0 a miss, NaN left out), with its arithmetic k / n: the same
    number as `explained_mean` of the same values (a sum of ones and zeros is exact)."""
    kept, notes = _with_values(hits, unit)
    if not len(kept):
        return Explained(label, float("nan"), (Step(f"no {unit}: missing"),), notes)
    k, value = int(kept.sum()), float(kept.mean())
    said = Step(f"{unit}s {what}, of the {len(kept)}", f"{k} / {len(kept)}", value, (float(k), float(len(kept))))
    return Explained(label, value, (said,), notes)


def interval_steps(n: int, unit: str, low: float, high: float, how: str, level: float = 0.95) -> tuple[Step, ...]:
    """How a stored percentile-bootstrap interval of a mean over `n` units was drawn (`how`: the resamples and the
    seed, or where they are set when the table does not record them), and its bounds."""
    drawn = Step(f"the {n} {unit}(s) resampled with replacement ({how}); each resample's mean", "", None, (float(n),))
    if np.isnan(low) or np.isnan(high):
        return drawn, Step(f"fewer than two {unit}s: no interval")
    tail = (1.0 - level) / 2.0 * 100
    bounds = Step(
        f"{level:.0%} interval: the {tail:g}th and {100 - tail:g}th percentiles of the resampled means",
        "",
        f"{figure(low)} to {figure(high)}",
        (low, high),
    )
    return drawn, bounds
