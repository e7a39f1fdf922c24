"""The Spoken Emotional Quotient (paper §2.5, Eq. 2-3; docs/method.md#seq): accuracy over a cohort of models scaled
like an IQ scale. Pure logic."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

MAD_SCALE = 1.4826  # makes the median absolute deviation a consistent estimate of the standard deviation
SEQ_MEAN, SEQ_SD = 100.0, 15.0
SEQ_MIN, SEQ_MAX = 40.0, 160.0  # +-4 standard deviations
CHANCE = {"acc1": 0.5, "acc2": 0.5, "acc_traj": 0.25}  # two options per round; both rounds right by chance


def _scale(cohort: np.ndarray) -> tuple[float, float]:
    """The cohort's median and median absolute deviation."""
    median = float(np.median(cohort))
    return median, float(np.median(np.abs(cohort - median)))


def _z(value: float, median: float, mad: float) -> float:
    return 0.0 if mad == 0 else (value - median) / (MAD_SCALE * mad)


def _seq(z: float) -> float:
    return float(np.clip(SEQ_MEAN + SEQ_SD * z, SEQ_MIN, SEQ_MAX))


def robust_z(values: dict[str, float]) -> dict[str, float]:
    """Z_i = (X_i - median(X)) / (1.4826 * MAD(X)) over the cohort; a cohort with MAD = 0 gives Z = 0."""
    median, mad = _scale(np.array(list(values.values()), dtype=float))
    return {name: _z(value, median, mad) for name, value in values.items()}


def seq_scores(acc_traj: dict[str, float]) -> dict[str, float]:
    """SEQ_i = clip(100 + 15 Z_i, 40, 160) with X = Acc_traj; relative to the cohort given (record it)."""
    return {name: _seq(z) for name, z in robust_z(acc_traj).items()}


def seq_on_scale(value: float, cohort: Iterable[float]) -> float:
    """SEQ of a value placed on a cohort's scale without joining it (e.g. chance, or another persona condition
    on the default cohort's scale). NaN for an empty cohort or a NaN value; MAD = 0 gives 100."""
    x = np.array([v for v in cohort if not np.isnan(v)], dtype=float)
    if x.size == 0 or np.isnan(value):
        return float("nan")
    return _seq(_z(float(value), *_scale(x)))
