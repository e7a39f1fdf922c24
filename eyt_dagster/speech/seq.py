"""The Spoken Emotional Quotient (paper §2.5, SPEC §4.4): accuracy over a cohort of models standardised
like an IQ scale. Pure logic."""

from __future__ import annotations

import numpy as np

MAD_SCALE = 1.4826  # makes the median absolute deviation a consistent estimate of the standard deviation
SEQ_MEAN, SEQ_SD = 100.0, 15.0
SEQ_MIN, SEQ_MAX = 40.0, 160.0  # +-4 standard deviations
CHANCE = {"acc1": 0.5, "acc2": 0.5, "acc_traj": 0.25}  # two options per round; both rounds right by chance


def robust_z(values: dict[str, float]) -> dict[str, float]:
    """Z_i = (X_i - median(X)) / (1.4826 * MAD(X)) over the cohort; a cohort with MAD = 0 gives Z = 0."""
    x = np.array(list(values.values()), dtype=float)
    median = float(np.median(x))
    mad = float(np.median(np.abs(x - median)))
    if mad == 0:
        return {name: 0.0 for name in values}
    return {name: (value - median) / (MAD_SCALE * mad) for name, value in values.items()}


def seq_scores(acc_traj: dict[str, float]) -> dict[str, float]:
    """SEQ_i = clip(100 + 15 Z_i, 40, 160) with X = Acc_traj; relative to the cohort given (record it)."""
    return {name: float(np.clip(SEQ_MEAN + SEQ_SD * z, SEQ_MIN, SEQ_MAX)) for name, z in robust_z(acc_traj).items()}
