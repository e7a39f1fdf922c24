"""Statistics of the analysis tables (docs/method.md#statistics): bootstrap intervals clustered by dialogue, agreement
coefficients and rank correlations. Pure functions over numpy / pandas; no Dagster, no I/O.

The coefficients delegate to well-kept implementations (scipy.stats, scikit-learn, the `krippendorff`
package); this module only fixes the options (tie handling, level of measurement, label sets) and the
missing-value rules. Bootstraps resample units (dialogues) with a (resamples x n) index matrix drawn from
`numpy.random.default_rng(seed)`, exactly as scipy.stats.bootstrap does, and report percentile intervals
(numpy's linear quantiles). Completion voting lives in metrics.combine_final_verdicts.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

NAN = float("nan")


def _interval(draws: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval of bootstrap draws; resamples whose statistic is undefined (NaN) are skipped."""
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return NAN, NAN
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def resample_indices(n: int, resamples: int, seed: int | None) -> np.ndarray:
    """The (resamples x n) resample-index matrix every interval of this module draws for n units. It depends on
    (n, resamples, seed) alone, so a seeded one is drawn once and shared, read-only, by every interval of that
    size (a report draws the same few sizes thousands of times); an unseeded one is drawn afresh."""
    if seed is None:
        return np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    return _seeded_indices(int(n), int(resamples), int(seed))


@lru_cache(maxsize=64)
def _seeded_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    idx.setflags(write=False)
    return idx


_indices = resample_indices


def bootstrap_mean_ci(
    values: ArrayLike, *, resamples: int = 1000, seed: int | None, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of per-unit values (one per dialogue) with a percentile bootstrap interval. NaN values are
    dropped first; with fewer than two units the interval is (nan, nan)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return NAN, NAN, NAN
    est = float(x.mean())
    if x.size < 2:
        return est, NAN, NAN
    return (est, *_interval(x[_indices(x.size, resamples, seed)].mean(axis=1), level))


def bootstrap_ratio_ci(
    numerators: ArrayLike, denominators: ArrayLike, *, resamples: int = 1000, seed: int | None, level: float = 0.95
) -> tuple[float, float, float]:
    """Pooled mean sum(num) / sum(den) with units (dialogues) resampled, e.g. per-dialogue sums of turn
    scores over per-dialogue turn counts. Units with NaN on either side are dropped; a resample whose
    denominators sum to 0 is skipped."""
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    keep = ~(np.isnan(num) | np.isnan(den))
    num, den = num[keep], den[keep]
    est = float(num.sum() / den.sum()) if den.sum() != 0 else NAN
    if num.size < 2:
        return est, NAN, NAN
    idx = _indices(num.size, resamples, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    draws[~np.isfinite(draws)] = np.nan
    return (est, *_interval(draws, level))


def class_counts(gold: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any]) -> np.ndarray:
    """(n_classes x 3) array of (tp, fp, fn) per label for one unit's turns."""
    g, p = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    return np.array(
        [[np.sum((g == c) & (p == c)), np.sum((g != c) & (p == c)), np.sum((g == c) & (p != c))] for c in labels],
        dtype=float,
    ).reshape(len(labels), 3)


def class_counts_by_unit(
    units: ArrayLike, n_units: int, gold: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any]
) -> np.ndarray:
    """class_counts of every unit at once: rows (turns) carry their unit's number 0..n_units-1 in `units`; returns
    (n_units x n_classes x 3) counts of (tp, fp, fn), a unit without rows all zeros. A value not in `labels`
    counts for no class, as in class_counts."""
    position = {label: k for k, label in enumerate(labels)}
    g = np.array([position.get(v, -1) if isinstance(v, str | int | float) else -1 for v in gold], dtype=int)
    p = np.array([position.get(v, -1) if isinstance(v, str | int | float) else -1 for v in predicted], dtype=int)
    u = np.asarray(units, dtype=int)
    n_labels = len(labels)
    out = np.zeros((n_units, n_labels, 3))
    hit = g == p
    for column, (rows, label) in enumerate(((hit & (g >= 0), g), (~hit & (p >= 0), p), (~hit & (g >= 0), g))):
        counts = np.bincount(u[rows] * n_labels + label[rows], minlength=n_units * n_labels)
        out[:, :, column] = counts.reshape(n_units, n_labels)
    return out


def _macro_f1(pooled: np.ndarray) -> np.ndarray:
    """Macro-F1 of pooled (..., n_classes, 3) counts over the classes with tp + fp + fn > 0."""
    tp, fp, fn = pooled[..., 0], pooled[..., 1], pooled[..., 2]
    present = (tp + fp + fn) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(present, 2 * tp / (2 * tp + fp + fn), 0.0)
        return f1.sum(axis=-1) / present.sum(axis=-1)


def bootstrap_macro_f1_ci(
    per_unit_counts: ArrayLike, *, resamples: int = 1000, seed: int | None, level: float = 0.95
) -> tuple[float, float, float]:
    """Macro-F1 of counts pooled over units (n_units x n_classes x 3 of tp, fp, fn), units resampled. A
    class counts in a resample when it occurs in gold or predictions there, which is sklearn's
    f1_score(average="macro") on the pooled labels."""
    counts = np.asarray(per_unit_counts, dtype=float)
    if counts.shape[0] == 0:
        return NAN, NAN, NAN
    est = float(_macro_f1(counts.sum(axis=0)))
    if counts.shape[0] < 2:
        return est, NAN, NAN
    draws = _macro_f1(counts[_indices(counts.shape[0], resamples, seed)].sum(axis=1))
    return (est, *_interval(draws, level))


def paired_bootstrap_diff(
    a: ArrayLike, b: ArrayLike, *, resamples: int = 1000, seed: int | None, level: float = 0.95
) -> dict[str, float | bool | int]:
    """Mean of a - b over units aligned on the same ChatSEEDs (pairs with NaN on either side dropped), its
    bootstrap interval, whether the interval excludes 0, and the number n of pairs used."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired values differ in length: {x.shape} vs {y.shape}")
    keep = ~(np.isnan(x) | np.isnan(y))
    diff, low, high = bootstrap_mean_ci(x[keep] - y[keep], resamples=resamples, seed=seed, level=level)
    excludes = bool(low > 0 or high < 0)  # False when the interval is NaN
    return {"diff": diff, "low": low, "high": high, "excludes_zero": excludes, "n": int(keep.sum())}


def resample_means(row: ArrayLike, *, resamples: int = 1000, seed: int | None) -> np.ndarray:
    """The mean of one row of values (no NaN) on every resample of its n columns (the (resamples x n) index
    matrix of n units): what paired_bootstrap_table draws for each complete row."""
    r = np.asarray(row, dtype=float)
    return np.asarray(r[_indices(r.size, resamples, seed)].mean(axis=1))


def paired_bootstrap_table(
    values: ArrayLike,
    pairs: Sequence[tuple[int, int]],
    *,
    resamples: int = 1000,
    seed: int | None,
    level: float = 0.95,
    means: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """paired_bootstrap_diff for many pairs of rows of `values` (units x the same columns: one row per target, one
    column per ChatSEED), with one resample-index matrix shared by every pair: a pair of rows without NaN uses the
    (resamples x n) matrix of all n columns, the one paired_bootstrap_diff draws for them, so its interval is the
    same up to floating-point rounding; a pair with NaN falls back to paired_bootstrap_diff on its complete columns.
    A resample's mean difference is the difference of the two rows' resample means, so each row is resampled once
    (rows x resamples) instead of once per pair. Returns arrays over `pairs`: diff, low, high, excludes_zero, n and
    se (the bootstrap standard error of the mean difference, NaN with fewer than two units). `means` (rows x
    resamples), when given, holds resample_means of the complete rows the pairs name (kept from an earlier call)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"values must be rows x columns, not shape {v.shape}")
    rows, n = v.shape
    out = {k: np.full(len(pairs), NAN) for k in ("diff", "low", "high", "se")}
    out["n"] = np.zeros(len(pairs), dtype=int)
    complete = ~np.isnan(v).any(axis=1)
    shared = [k for k, (i, j) in enumerate(pairs) if n >= 2 and complete[i] and complete[j]]
    if shared:
        a = np.array([pairs[k][0] for k in shared])
        b = np.array([pairs[k][1] for k in shared])
        if means is None:
            means = np.full((rows, resamples), NAN)
            for r in np.unique(np.concatenate([a, b])):  # one row at a time: rows x resamples x n would not fit
                means[r] = resample_means(v[r], resamples=resamples, seed=seed)
        draws = means[a] - means[b]
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(draws, [tail, 1.0 - tail], axis=1)
        out["diff"][shared] = (v[a] - v[b]).mean(axis=1)
        out["low"][shared], out["high"][shared] = low, high
        out["se"][shared] = draws.std(axis=1, ddof=1)
        out["n"][shared] = n
    done = set(shared)
    for k, (i, j) in enumerate(pairs):  # paired_bootstrap_diff on the complete columns, its draws giving se too
        if k in done:
            continue
        keep = ~(np.isnan(v[i]) | np.isnan(v[j]))
        d = v[i][keep] - v[j][keep]
        out["n"][k] = d.size
        if d.size:
            out["diff"][k] = float(d.mean())
        if d.size >= 2:
            one = d[_indices(d.size, resamples, seed)].mean(axis=1)
            out["low"][k], out["high"][k] = _interval(one, level)
            out["se"][k] = float(one.std(ddof=1))
    out["excludes_zero"] = (out["low"] > 0) | (out["high"] < 0)  # False when the interval is NaN
    return out


def normal_p_value(diff: ArrayLike, se: ArrayLike) -> np.ndarray:
    """Two-sided p-value of a mean difference from its bootstrap standard error (normal approximation: a bootstrap
    with R resamples cannot give a p-value below 1/R itself, too coarse for a correction over thousands of
    pairs). NaN where either is NaN; a zero standard error gives 1 for a zero difference, else 0. The normal
    survival function is scipy.special's `ndtr(-z)`, which is what scipy.stats.norm.sf computes (bit for bit),
    without importing scipy.stats (about a second per run of the reports)."""
    from scipy.special import ndtr

    d, s = np.asarray(diff, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(d) / s
    z = np.where(s == 0, np.where(d == 0, 0.0, np.inf), z)
    p = 2.0 * ndtr(-z)
    return np.where(np.isnan(d) | np.isnan(s), NAN, p)


def holm_adjusted(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values over one family (controls the chance of any false claim at the level
    one compares them with). NaN p-values are left out of the family and stay NaN."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, NAN)
    present = np.flatnonzero(~np.isnan(p))
    m = present.size
    if m == 0:
        return out
    order = present[np.argsort(p[present], kind="stable")]
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(stepped, 1.0)
    return out


def min_detectable_difference(se: ArrayLike, *, alpha: float = 0.05, power: float = 0.8) -> np.ndarray:
    """The smallest true difference a two-sided test at `alpha` detects with probability `power`, for a mean
    difference with standard error `se`: (z_{1-alpha/2} + z_{power}) x se. The normal quantiles are
    scipy.special's `ndtri`, what scipy.stats.norm.ppf computes (bit for bit)."""
    from scipy.special import ndtri

    return (float(ndtri(1 - alpha / 2)) + float(ndtri(power))) * np.asarray(se, dtype=float)


def krippendorff_alpha(
    ratings: ArrayLike, level: Literal["nominal", "ordinal", "interval"], value_domain: Sequence[float] | None = None
) -> float:
    """Krippendorff's alpha of a (raters x units) matrix, NaN = missing, via the `krippendorff` package.

    The value domain defaults to the sorted distinct ratings. For ordinal data the order is the numeric
    order of the values, and the distance between two values sums the pairable counts of the values
    between them, so a declared value nobody used weighs nothing: passing the whole scale (as
    human_alignment does) gives the same alpha and additionally rejects out-of-scale ratings. Returns NaN
    with fewer than 2 raters, no unit rated by 2 raters, or a single value used throughout (alpha is 0/0).
    """
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2 or data.shape[0] < 2:
        return NAN
    if not ((~np.isnan(data)).sum(axis=0) >= 2).any():
        return NAN
    observed = np.unique(data[~np.isnan(data)])
    if observed.size < 2:
        return NAN
    domain = observed if value_domain is None else np.asarray(sorted(value_domain), dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))


def coincidences(ratings: ArrayLike, domain: ArrayLike) -> np.ndarray:
    """Krippendorff's (V x V) coincidence matrix of a (raters x units) matrix (NaN = missing) over the sorted values
    `domain`: per unit, each ordered pair of two raters' values counted 1 / (raters of the unit - 1), summed over
    the units in order (the `krippendorff` package's matrix). Units of disjoint sets add up, so a table over many
    cells can keep each cell's matrix and sum them."""
    data, values = np.asarray(ratings, dtype=float), np.asarray(domain, dtype=float)
    counts = (data.T[..., np.newaxis] == values[np.newaxis, np.newaxis, :]).sum(axis=1)  # units x V
    pairable = np.maximum(counts.sum(axis=1), 2)
    same = counts[:, np.newaxis, :] * np.eye(values.size)[np.newaxis, ...]
    pairs = counts[..., np.newaxis] * counts[:, np.newaxis, :] - same
    return np.asarray(np.divide(pairs, (pairable - 1).reshape((-1, 1, 1)), dtype=float).sum(axis=0))


def alpha_from_coincidences(
    observed: np.ndarray, domain: ArrayLike, level: Literal["nominal", "ordinal", "interval"]
) -> float:
    """Krippendorff's alpha from a coincidence matrix over the sorted values `domain` (at least two values, some
    unit rated twice): 1 - observed / expected disagreement, with the package's distances (ordinal: the pairable
    counts between two values, less half of the two ends', squared)."""
    values = np.asarray(domain, dtype=float)
    n_v = observed.sum(axis=0)
    expected = np.divide(np.outer(n_v, n_v) - np.diagflat(n_v), n_v.sum() - 1, dtype=float)
    i, j = np.arange(values.size)[:, np.newaxis], np.arange(values.size)[np.newaxis, :]
    if level == "nominal":
        d = (values[i] != values[j]).astype(float)
    elif level == "interval":
        d = (values[i] - values[j]).astype(float) ** 2
    else:
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        ranges = np.dstack((lo, hi + 1))
        between = np.add.reduceat(np.append(n_v, 0), ranges.reshape(-1))[::2].reshape(*lo.shape)
        d = (between - np.divide(n_v[lo] + n_v[hi], 2, dtype=float)) ** 2
    return float(1 - (observed * d).sum() / (expected * d).sum())


def quadratic_weighted_kappa(a: ArrayLike, b: ArrayLike, labels: Sequence[float]) -> float:
    """Cohen's kappa with quadratic weights between two raters' scores.

    `labels` is the ordered scale (e.g. the half-point grid 0, 0.5, ..., 5). Each score is mapped to its
    integer position on that scale and sklearn is given the full position list, so the weight of a
    disagreement is the squared number of grid steps even for steps nobody used (the observed values
    alone would squeeze the scale). Pairs with a NaN are dropped; a score off the scale raises; NaN when
    kappa is undefined (fewer than 2 pairs or no variation)."""
    from sklearn.metrics import cohen_kappa_score  # imported here: loading the code location stays light

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    scale = np.asarray(sorted(labels), dtype=float)
    pos = {float(v): i for i, v in enumerate(scale)}
    bad = sorted({float(v) for v in np.concatenate([x, y]) if float(v) not in pos})
    if bad:
        raise ValueError(f"scores not on the label scale {scale.tolist()}: {bad}")
    if x.size < 2:
        return NAN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = cohen_kappa_score(
            [pos[float(v)] for v in x], [pos[float(v)] for v in y], labels=list(range(len(scale))), weights="quadratic"
        )
    return float(k)


def _rank_input(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs without NaN, or None when a correlation is undefined (fewer than 2 pairs, constant side)."""
    u, v = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(u) | np.isnan(v))
    u, v = u[keep], v[keep]
    if u.size < 2 or np.all(u == u[0]) or np.all(v == v[0]):
        return None
    return u, v


def pearson_r(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson correlation (scipy); NaN pairs dropped, NaN for constant input."""
    from scipy import stats as sps  # imported here: loading the code location stays light

    pair = _rank_input(x, y)
    return NAN if pair is None else float(sps.pearsonr(*pair).statistic)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of a 1-D array, ties sharing the mean of their positions: scipy.stats.rankdata's default
    (`method="average"`), by its algorithm (a stable sort; a run of equal values starting at position p with c
    members gets p + (c - 1) / 2), which is exact in float64."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    ordered = v[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, v.size])
    ranks = np.empty(v.size, dtype=float)
    ranks[order] = np.repeat((starts + 1).astype(float) + (counts.astype(float) - 1) / 2, counts)
    return ranks


def spearman_rho(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman correlation: Pearson on average ranks (ties share a rank), computed as scipy.stats.spearmanr
    computes it (np.corrcoef of the two rank columns), so it is the same float, without importing scipy.stats
    (tests/core/test_stats.py compares); NaN pairs dropped, NaN for constant input."""
    pair = _rank_input(x, y)
    if pair is None:
        return NAN
    ranked = np.column_stack((average_ranks(pair[0]), average_ranks(pair[1])))
    return float(np.corrcoef(ranked, rowvar=False)[1, 0])


def kendall_tau(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b (scipy's default variant, corrected for ties on either side): (concordant - discordant) /
    sqrt(pairs - ties in x) / sqrt(pairs - ties in y) from integer pair counts, the arithmetic of
    scipy.stats.kendalltau (the same float, tests/core/test_stats.py compares) without importing scipy.stats; NaN pairs
    dropped, NaN for constant input. Counts every pair at once: for the few hundred values it is given (targets,
    annotated cells)."""
    pair = _rank_input(x, y)
    if pair is None:
        return NAN
    u, v = pair
    i, j = np.triu_indices(u.size, k=1)
    sx, sy = np.sign(u[i] - u[j]), np.sign(v[i] - v[j])
    both = sx * sy
    con_minus_dis = int((both > 0).sum()) - int((both < 0).sum())
    total = u.size * (u.size - 1) // 2
    x_ties, y_ties = int((sx == 0).sum()), int((sy == 0).sum())
    tau = con_minus_dis / np.sqrt(total - x_ties) / np.sqrt(total - y_ties)
    return float(np.minimum(1.0, max(-1.0, tau)))


def rank_flips(scores: pd.DataFrame) -> list[tuple[object, object, object, object]]:
    """Pairs of targets (index) whose strict order differs between two settings (columns).

    A flip (setting_a, setting_b, target_i, target_j) needs i and j strictly ordered in both settings, in
    opposite directions: a tie (or a NaN) in either setting is not a flip. Settings follow column order
    and targets index order. Each pair of settings compares all pairs of targets at once (numpy)."""
    values = scores.to_numpy(dtype=float)
    i, j = np.triu_indices(len(scores.index), k=1)  # the pairs of targets in combinations() order
    signs = np.sign(values[i] - values[j])  # (pairs x settings)
    settings, targets = list(scores.columns), list(scores.index)
    flips = []
    for a, b in combinations(range(values.shape[1]), 2):
        with np.errstate(invalid="ignore"):
            found = np.flatnonzero(signs[:, a] * signs[:, b] < 0)
        flips += [(settings[a], settings[b], targets[i[k]], targets[j[k]]) for k in found]
    return flips
