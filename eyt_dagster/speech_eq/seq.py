"""The Spoken Emotional Quotient (paper §2.5, Eq. 2-3; docs/method.md#seq): accuracy over a cohort of models scaled
like an IQ scale. Pure logic."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from eyt_dagster.core.explained import Explained, Step, figure, term

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
    return explained_seq(value, list(cohort)).number()


def explained_seq(value: float, cohort: Sequence[float], names: Sequence[str] | None = None) -> Explained:
    """SEQ of an Acc_traj `value` on the scale of a cohort's Acc_traj values (members named by `names`), with the
    arithmetic of Eq. 2-3: the cohort's median and MAD, Z, 100 + 15 Z, kept within [40, 160]. `seq_on_scale`, which
    the SEQ leaderboard stores, is its value."""
    labels = list(names) if names is not None else [""] * len(cohort)
    kept = [(name, float(v)) for name, v in zip(labels, cohort) if not np.isnan(v)]
    x = np.array([v for _, v in kept], dtype=float)
    title = "SEQ (Eq. 2-3)"
    if x.size == 0 or np.isnan(value):
        why = "no cohort member has an Acc_traj" if x.size == 0 else "no Acc_traj to place"
        return Explained(title, float("nan"), (Step(f"{why}: SEQ is missing"),))
    median, mad = _scale(x)
    z = _z(float(value), median, mad)
    result = _seq(z)
    members = ", ".join(f"{name} {figure(v)}".strip() for name, v in sorted(kept, key=lambda p: (p[1], p[0])))
    ordered = ", ".join(figure(v) for v in np.sort(x))
    deviations = ", ".join(figure(v) for v in np.sort(np.abs(x - median)))
    steps = [
        Step(f"the cohort's Acc_traj ({x.size} member(s))", members, None, tuple(x.tolist())),
        Step("median of the cohort", f"median({ordered})", median),
        Step("MAD: the median of the absolute deviations from it", f"median({deviations})", mad),
    ]
    if mad == 0:
        steps.append(Step("MAD = 0: Z is 0 (every value sits at the cohort's centre)", "", 0.0))
    else:
        written = f"({figure(value)} - {term(median)}) / ({MAD_SCALE} x {figure(mad)})"
        steps.append(Step("Z = (Acc_traj - median) / (1.4826 x MAD)", written, z, (float(value), median, mad)))
    raw = SEQ_MEAN + SEQ_SD * z
    steps.append(Step("SEQ = 100 + 15 x Z", f"{figure(SEQ_MEAN)} + {figure(SEQ_SD)} x {term(z)}", raw))
    if raw != result:
        steps.append(Step(f"kept within [{figure(SEQ_MIN)}, {figure(SEQ_MAX)}] (4 standard deviations)", "", result))
    notes = ("1.4826 makes the MAD estimate a standard deviation; a cohort with MAD = 0 gives every value 100",)
    return Explained(title, result, tuple(steps), notes)
