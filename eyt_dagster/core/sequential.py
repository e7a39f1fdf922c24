"""A sequential design for comparing targets pairwise: play items in a fixed seeded order, look after each batch,
and stop a target once every comparison it takes part in is settled (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled).

Pure functions over numpy (scipy-free arithmetic, pandas for the decision table); no Dagster, no I/O. The module
knows no benchmark: it speaks of *items* (what every target plays, in one shared order), *targets* (what is
compared) and *metrics* (one per-item value each).

The statistics:

- `normal_mixture_bound` is the two-sided normal-mixture uniform boundary of Howard, Ramdas, McAuliffe & Sekhon
  (2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences"), with the mixture precision that makes
  it tightest at intrinsic time `v_opt`, as `confseq.boundaries.normal_mixture_bound(..., is_one_sided=False)`
  computes it (tests/core/confseq_reference.json holds confseq's values).
- `running_intervals` turns it into the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy &
  Ramdas (2021, "Time-uniform central limit theory and asymptotic confidence sequences") for the mean of paired
  per-item differences, at every prefix length at once.
- `verdicts` applies the three-way decision rule with a margin; `run_sequential` plays a whole design from the
  per-item values and reports each pair's verdict, the items each target played and the share of calls spent.

Error control: a pool's pairs on one metric form the family the pairwise table adjusts over (Holm over every pair
of one pool and metric). Here each of the K pairs of a family gets a confidence sequence at alpha / K (Bonferroni),
so, for each pool and metric, the chance that *any* pair is ever decided wrongly (declared ahead in the wrong
direction, or within the margin when its true difference is at least the margin) is at most alpha, at whatever look
the decision is taken. The guarantee is asymptotic (see `running_intervals`). A step-down (Holm) reallocation of
the settled pairs' alpha to the open ones is not used: every pair, settled or not, has a verdict that would be wrong
(one of the two separations at least), so the closed-testing argument gives nothing beyond alpha / K, and on tied
pairs the step-down's family-wise error exceeds alpha (bench/sequential_step_down.py; the docs section above).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

# Verdict codes of one pair (a, b) on one metric, a before b in the targets' order; the difference is a - b.
UNDECIDED = "undecided"
A_AHEAD = "a_ahead"
B_AHEAD = "b_ahead"
WITHIN_MARGIN = "within_margin"
VERDICTS = (UNDECIDED, A_AHEAD, B_AHEAD, WITHIN_MARGIN)  # index = the integer code `verdicts` returns

# The floor of the standard deviation of the paired differences, as a share of the metric's margin. Without one,
# a pair whose differences are all equal so far (two targets that both solved every item of the prefix) would get a
# zero-width interval and be settled at once on a handful of items. A quarter of the margin is far below the spread
# of any real per-item metric (it only acts on such degenerate prefixes) and still lets a pair that really is equal
# be settled as within the margin once the interval is narrower than the margin.
SD_FLOOR_OF_MARGIN = 0.25


def normal_mixture_bound(v: ArrayLike, alpha: float, v_opt: float, alpha_opt: float | None = None) -> np.ndarray:
    """The two-sided normal-mixture boundary u(v) of Howard et al. (2021): with S_t a sum whose increments are
    1-sub-Gaussian at intrinsic time V_t (the accumulated variance), P(exists t: |S_t| >= u(V_t)) <= alpha.

        rho  = v_opt / (2 log(1/alpha_opt) + log(1 + 2 log(1/alpha_opt)))
        u(v) = sqrt((v + rho) * (log(1 + v / rho) + 2 log(1/alpha)))

    rho is the precision of the normal mixture, chosen so that the boundary is (nearly) tightest at v = v_opt for
    the level alpha_opt; this is confseq's `TwoSidedNormalMixture` (best_rho and bound) exactly. `alpha_opt=None`
    means alpha_opt = alpha (confseq's own default is 0.05; pass it explicitly to compare). Vectorised over v."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    a_opt = alpha if alpha_opt is None else alpha_opt
    if not 0 < a_opt < 1:
        raise ValueError(f"alpha_opt must be in (0, 1), got {a_opt}")
    if not v_opt > 0:
        raise ValueError(f"v_opt must be positive, got {v_opt}")
    rho = _mixture_rho(v_opt, a_opt)
    x = np.asarray(v, dtype=float)
    return np.sqrt((x + rho) * (np.log1p(x / rho) + 2.0 * math.log(1.0 / alpha)))


def _mixture_rho(v_opt: float, alpha_opt: float) -> float:
    """The precision rho of the normal mixture tightest at v_opt for the level alpha_opt (`normal_mixture_bound`)."""
    log_inv = math.log(1.0 / alpha_opt)
    return v_opt / (2.0 * log_inv + math.log(1.0 + 2.0 * log_inv))


@dataclass(frozen=True)
class Intervals:
    """A confidence sequence at every prefix length: arrays of one shape (..., items), position t - 1 describing the
    first t items. `n` counts the items of the prefix with a value (NaN items are skipped)."""

    n: np.ndarray
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def running_intervals(diffs: ArrayLike, alpha: float, t_opt: float, sd_floor: ArrayLike = 0.0) -> Intervals:
    """The asymptotic confidence sequence for the mean of `diffs` (the last axis runs over items in playing order),
    at every prefix, from cumulative sums (so all prefixes cost one pass).

    Waudby-Smith et al. (2021), Theorem 2.2 (the Gaussian-mixture asymptotic CS): with mu_hat_t the mean and
    sigma_hat_t the standard deviation of the first t values and any rho > 0,

        mu_hat_t +- sqrt( 2 (t sigma_hat_t^2 rho^2 + 1) / (t^2 rho^2) * log( sqrt(t sigma_hat_t^2 rho^2 + 1) / alpha ) )

    is an asymptotic (1 - alpha) confidence sequence for i.i.d. values with finite variance: its coverage at every
    time at once tends to 1 - alpha as the start time grows. Writing v = t sigma_hat_t^2 and rho_H = 1 / rho^2 it is
    mu_hat_t +- normal_mixture_bound(v, alpha, .)/t, Howard et al.'s boundary for S_t = t (mu_hat_t - mu).

    The mixture is tuned on the standardised scale: v_opt = t_opt * sigma_hat_t^2, so the half-width is
    sigma_hat_t * u_1(t) / t with u_1 the boundary tightest at t_opt items. The interval is then invariant to the
    metric's units (a 0-1 rate and a 0-100 score get the same relative width), and it is the paper's rho chosen for
    time t_opt (their rho*(t*)) applied to the standardised values; sigma_hat_t enters the mixture as it enters the
    boundary, as a consistent plug-in, so the guarantee stays the paper's asymptotic one.

    sigma_hat_t is the sample standard deviation (ddof = 1) floored at `sd_floor` (broadcast against the leading
    axes): a prefix of identical values would otherwise get a zero width. Prefixes with fewer than two values get an
    infinite half-width."""
    d = np.asarray(diffs, dtype=float)
    valid = ~np.isnan(d)
    x = np.where(valid, d, 0.0)
    n = np.cumsum(valid, axis=-1).astype(float)
    # centre on each series' first value so the sums of squares do not cancel for values far from 0
    first = np.take_along_axis(x, np.argmax(valid, axis=-1)[..., None], axis=-1)
    c = np.where(valid, x - first, 0.0)
    s1 = np.cumsum(c, axis=-1)
    s2 = np.cumsum(c * c, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_c = s1 / n
        var = np.maximum(s2 - n * mean_c * mean_c, 0.0) / (n - 1.0)
        sd = np.maximum(np.sqrt(var), np.asarray(sd_floor, dtype=float)[..., None])
        half = sd * normal_mixture_bound(n, alpha, t_opt) / np.where(n > 0, n, np.nan)
    half = np.where(n >= 2, half, np.inf)
    mean = np.where(n > 0, mean_c + first, np.nan)
    return Intervals(n=n, mean=mean, lo=mean - half, hi=mean + half)


def anytime_p_value(ci: Intervals, alpha: float, t_opt: float, d0: ArrayLike = 0.0) -> np.ndarray:
    """The anytime-valid p-value of "the mean difference is d0" at every prefix of `ci`, the intervals
    `running_intervals(..., alpha, t_opt)` returned: the smallest level a at which the interval of the same
    confidence sequence, with the mixture kept as it is (rho tuned for `alpha`) and only the level changed, excludes
    d0. The interval at level a excludes d0 exactly when a > p (the boundary is strictly decreasing in a).

    With z = u_alpha(n) |mean - d0| / half (the distance in the boundary's units, half the interval's half-width at
    `alpha`), solving u_a(n) = z for a, where u_a(n)^2 = (n + rho) (log(1 + n / rho) + 2 log(1/a)), gives

        p = min(1, sqrt(1 + n / rho) * exp(-z^2 / (2 (n + rho))))

    which is 1 / the normal-mixture martingale's value: by Ville's inequality the chance that it ever falls to a or
    below when d0 is the true mean is at most a, so its running minimum over prefixes (np.minimum.accumulate along
    the last axis) is a valid p-value too, asymptotically as the interval is. Prefixes with an infinite or NaN
    interval get 1."""
    n = np.asarray(ci.n, dtype=float)
    rho = _mixture_rho(t_opt, alpha)
    half = (ci.hi - ci.lo) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = normal_mixture_bound(n, alpha, t_opt) * np.abs(ci.mean - np.asarray(d0, dtype=float)) / half
        p = np.sqrt(1.0 + n / rho) * np.exp(-(z * z) / (2.0 * (n + rho)))
    return np.where(np.isfinite(half) & np.isfinite(z), np.minimum(p, 1.0), 1.0)


def verdict_p_values(ci: Intervals, alpha: float, t_opt: float, margin: ArrayLike) -> np.ndarray:
    """Per prefix, the smallest level at which each verdict's condition holds (shape (..., items, 3), in the order
    A_AHEAD, B_AHEAD, WITHIN_MARGIN): the anytime p-values of the hypotheses each verdict rejects, delta <= 0,
    delta >= 0 and |delta| >= m (the interval must exclude both m and -m, so the nearer one decides). A verdict
    whose condition cannot hold at any level (A_AHEAD with a mean at or below 0, WITHIN_MARGIN with |mean| >= m)
    gets 1. `verdicts` at level alpha gives a verdict exactly where the smallest of the three is below alpha."""
    m = np.asarray(margin, dtype=float)[..., None]
    p0 = anytime_p_value(ci, alpha, t_opt, 0.0)
    pw = np.maximum(anytime_p_value(ci, alpha, t_opt, m), anytime_p_value(ci, alpha, t_opt, -m))
    mean = ci.mean
    with np.errstate(invalid="ignore"):
        out = (np.where(mean > 0, p0, 1.0), np.where(mean < 0, p0, 1.0), np.where(np.abs(mean) < m, pw, 1.0))
    return np.stack(out, axis=-1)


def verdicts(lo: ArrayLike, hi: ArrayLike, margin: ArrayLike) -> np.ndarray:
    """The verdict code (index into VERDICTS) of intervals (lo, hi) for the mean difference a - b, with margin m > 0:

    - A_AHEAD (1) if lo > 0: the whole interval is above zero;
    - B_AHEAD (2) if hi < 0: the whole interval is below zero;
    - WITHIN_MARGIN (3) if -m < lo and hi < m (and neither of the above): the whole interval is inside (-m, m);
    - UNDECIDED (0) otherwise.

    A separation takes precedence: an interval (0.01, 0.04) with m = 0.05 is A_AHEAD, the statement the pairwise
    table would make. Each verdict is wrong only if the interval misses the true difference delta: A_AHEAD needs
    delta <= 0 outside it, WITHIN_MARGIN needs |delta| >= m outside it. Infinite or NaN intervals are UNDECIDED."""
    low, high, m = (np.asarray(a, dtype=float) for a in (lo, hi, margin))
    out = np.zeros(np.broadcast(low, high, m).shape, dtype=np.int8)
    out = np.where((-m < low) & (high < m), 3, out)
    out = np.where(high < 0, 2, out)
    out = np.where(low > 0, 1, out)
    return out.astype(np.int8)


def look_points(min_dialogues: int, batch: int, n_total: int) -> np.ndarray:
    """The item counts at which the design looks: min_dialogues, min_dialogues + batch, ... and n_total last (also
    when it is not on that grid). A design with n_total <= min_dialogues looks once, at n_total."""
    if n_total <= min_dialogues:
        return np.array([n_total])
    points = np.arange(min_dialogues, n_total + 1, batch)
    return points if points[-1] == n_total else np.append(points, n_total)


def prefix_order(item_ids: Iterable[str], seed: int) -> list[str]:
    """Items in the design's playing order: sorted by SHA-256 of "seed:id" (ties, which need equal hashes, by id).
    The order depends on the set of ids and the seed only, not on the order they come in; adding items slots each
    new one in at its own place and leaves the relative order of the others unchanged, so a prefix already played
    stays a prefix of the longer order except where a new item falls inside it."""
    ids = sorted(set(item_ids))
    return sorted(ids, key=lambda i: (hashlib.sha256(f"{seed}:{i}".encode()).hexdigest(), i))


@dataclass(frozen=True)
class SequentialDesign:
    """The settings of the sequential design. `alpha` is the family-wise error per pool and metric (split over the
    family's pairs), `min_dialogues` the items every target plays before the first look, `batch` the items between
    looks, `margin` the smallest difference worth resolving, per metric (in the metric's units); a metric without a
    margin is not used to stop."""

    enabled: bool = False
    alpha: float = 0.05
    min_dialogues: int = 20
    batch: int = 10
    margin: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be a number in (0, 1), got {self.alpha!r}")
        for name, least in (("min_dialogues", 2), ("batch", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if not isinstance(self.margin, Mapping):
            raise ValueError(f"margin must be a mapping of metric -> positive number, got {self.margin!r}")
        for metric, m in self.margin.items():
            if isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m) or m <= 0:
                raise ValueError(f"margin of {metric!r} must be a positive number, got {m!r}")
        if self.enabled and not self.margin:
            raise ValueError("margin is required when the sequential design is enabled: a positive number per metric")

    def t_opt(self, n_total: int) -> float:
        """The item count at which the confidence sequence is tightest: the geometric mean of the first look and
        N, sqrt(min_dialogues x N), the middle of the looks on the log scale on which the boundary's width moves
        (looking before min_dialogues is impossible and after N pointless)."""
        return math.sqrt(min(self.min_dialogues, n_total) * n_total)


@dataclass(frozen=True)
class StopState:
    """Which targets (indices) play the next batch, and whether the design is finished (every pair decided, or
    every target still playing has reached N)."""

    to_play: tuple[int, ...]
    finished: bool


def stop_state(
    pairs: Sequence[tuple[int, int]], decided: ArrayLike, n_targets: int, played: ArrayLike, n_total: int
) -> StopState:
    """The stop rule. `decided` is (pairs x metrics) booleans; `played` the items each target has played. A target
    stops when every pair it belongs to is decided on every metric, or when it has played `n_total`. A pair whose
    one target stopped is decided (that is why it stopped), so the other target plays on only for its undecided
    pairs; a pair's comparison uses the items both played, a common prefix of the order."""
    done = [bool(row.all()) for row in np.asarray(decided, dtype=bool).reshape(len(pairs), -1)]
    n_played = np.asarray(played)
    open_targets = {t for (a, b), ok in zip(pairs, done, strict=True) if not ok for t in (a, b)}
    to_play = tuple(t for t in range(n_targets) if t in open_targets and n_played[t] < n_total)
    return StopState(to_play=to_play, finished=not to_play)


def common_prefix(played: ArrayLike, a: int, b: int) -> int:
    """The number of items a pair's comparison uses: both targets played the first min(played) items."""
    n = np.asarray(played)
    return int(min(n[a], n[b]))


@dataclass(frozen=True)
class SequentialResult:
    """What `run_sequential` reports.

    `decisions`: one row per pair (target_a < target_b in the targets' order) and metric with `verdict` (VERDICTS;
    `undecided` when the pair was never settled), `decided_look` (1-based) and `decided_items` (the items of the
    look; NaN when undecided), `undecided_at_n` (True when both targets reached N without a decision: the caller's
    full design gives the verdict), and `n`, `diff`, `lo`, `hi`: the paired item count, mean difference a - b and
    interval at the decision (at the last look when undecided). `items_played`: per target. `call_fraction`:
    items played summed over targets / (targets x N). `looks`: the item counts looked at."""

    decisions: pd.DataFrame
    items_played: np.ndarray
    call_fraction: float
    looks: np.ndarray
    finished: bool


def run_sequential(
    scores: ArrayLike,
    design: SequentialDesign,
    n_total: int | None = None,
    *,
    metrics: Sequence[str],
    targets: Sequence[str] | None = None,
    t_opt: float | None = None,
) -> SequentialResult:
    """Play the design on per-item values and report the decisions.

    `scores` is an array (targets x items x metrics), items in the prefix order (`prefix_order`), metrics named by
    `metrics`; NaN means no value (an item a target has not played, or a metric undefined on it), and a pair uses
    the items both have a value for. Only metrics with a margin in `design` are compared. `n_total` is the
    design's N (default: the items in `scores`); with fewer items in `scores` than N the run is replayed up to the
    items there are, so the run loop can call this after every batch with what has been played: the decisions
    taken at earlier looks are the same as before, and `finished` says whether anything is left to play.

    Every pair gets alpha / K with K = targets x (targets - 1) / 2, the pairs of the family (one pool, one metric).
    A pair still undecided is always one of two targets both still playing, so each pair's first decisive look can
    be found on its own; a target plays until the last decision among its pairs (N if one never comes)."""
    x = np.asarray(scores, dtype=float)
    if x.ndim != 3 or x.shape[2] != len(metrics):
        raise ValueError(f"scores must be (targets x items x {len(metrics)} metrics), got shape {x.shape}")
    n_targets, n_items, _ = x.shape
    n_total = n_items if n_total is None else int(n_total)
    if n_items < n_total:
        x = np.concatenate([x, np.full((n_targets, n_total - n_items, x.shape[2]), np.nan)], axis=1)
    x = x[:, :n_total]
    names = list(targets) if targets is not None else [str(i) for i in range(n_targets)]
    used = [j for j, m in enumerate(metrics) if m in design.margin]
    margins = np.array([design.margin[metrics[j]] for j in used], dtype=float)
    pairs = list(combinations(range(n_targets), 2))
    looks_all = look_points(design.min_dialogues, design.batch, n_total)
    reached = looks_all[looks_all <= min(n_items, n_total)]
    t_star = design.t_opt(n_total) if t_opt is None else t_opt

    decided_items = np.full((len(pairs), len(used)), np.nan)
    decided_look = np.full((len(pairs), len(used)), np.nan)
    code = np.zeros((len(pairs), len(used)), dtype=np.int8)
    at = np.zeros((len(pairs), len(used), 4))  # n, diff, lo, hi
    if pairs and used:
        a = np.array([p[0] for p in pairs])
        b = np.array([p[1] for p in pairs])
        diffs = np.moveaxis(x[a][:, :, used] - x[b][:, :, used], 1, 2)  # pairs x metrics x items
        ci = running_intervals(diffs, design.alpha / len(pairs), t_star, SD_FLOOR_OF_MARGIN * margins[None, :])
        if reached.size:
            idx = reached - 1
            look_codes = verdicts(ci.lo[..., idx], ci.hi[..., idx], margins[None, :, None])
            hit = look_codes > 0
            first = np.argmax(hit, axis=-1)
            any_hit = hit.any(axis=-1)
            which = np.where(any_hit, first, len(reached) - 1)
            code = np.where(any_hit, np.take_along_axis(look_codes, first[..., None], -1)[..., 0], 0).astype(np.int8)
            decided_look = np.where(any_hit, which + 1.0, np.nan)
            decided_items = np.where(any_hit, reached[which].astype(float), np.nan)
            col = idx[which][..., None]
            for k, arr in enumerate((ci.n, ci.mean, ci.lo, ci.hi)):
                at[..., k] = np.take_along_axis(arr, col, -1)[..., 0]

    current = int(reached[-1]) if reached.size else 0  # items every target still playing has played
    if pairs and used:
        # each target plays until the last decision among its pairs; an undecided pair keeps both to `current`
        last = np.where(np.isnan(decided_items), current, decided_items).max(axis=1)
        played = np.zeros(n_targets, dtype=int)
        for (i, j), items in zip(pairs, last, strict=True):
            played[i] = max(played[i], int(items))
            played[j] = max(played[j], int(items))
        finished = stop_state(pairs, ~np.isnan(decided_items), n_targets, played, n_total).finished
    else:  # nothing to compare: every target stops at the first look
        played = np.full(n_targets, int(reached[0]) if reached.size else 0)
        finished = bool(reached.size)

    rows = {
        "target_a": np.repeat([names[p[0]] for p in pairs], len(used)).astype(object),
        "target_b": np.repeat([names[p[1]] for p in pairs], len(used)).astype(object),
        "metric": np.tile(np.array([metrics[j] for j in used], dtype=object), len(pairs)),
        "verdict": np.array(VERDICTS, dtype=object)[code.ravel()],
        "decided_look": decided_look.ravel(),
        "decided_items": decided_items.ravel(),
        "undecided_at_n": (np.isnan(decided_items) & (current >= n_total)).ravel(),
        "n": at[..., 0].ravel(),
        "diff": at[..., 1].ravel(),
        "lo": at[..., 2].ravel(),
        "hi": at[..., 3].ravel(),
    }
    return SequentialResult(
        decisions=pd.DataFrame(rows),
        items_played=played,
        call_fraction=float(played.sum() / (n_targets * n_total)) if n_targets and n_total else float("nan"),
        looks=looks_all,
        finished=finished,
    )
