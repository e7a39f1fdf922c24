"""A mean of human labels estimated from a few human labels and many judge values, with the judge's error carried
into the interval: the prediction-powered estimate with power tuning (PPI++) of Angelopoulos, Duchi & Zrnic (2023,
"PPI++: Efficient Prediction-Powered Inference"), for a mean, as the authors' package `ppi_py` computes it
(`ppi_mean_pointestimate`, `ppi_mean_ci`; tests/core/ppi_reference.json holds its values).

The setting. A cell has items; a judge scored every one. People labelled n of them, a uniform random sample; the
other N have the judge's value only. The quantity estimated is the mean of the people's label over the items the
cell stands for. With Y the human labels and Yhat the judge's values on the n labelled items, and Yhat~ the
judge's values on the N items without a human label (the standard formulation: the two samples are disjoint, and
the labelled items are not counted again among the unlabelled ones):

    estimate(lambda) = lambda x mean(Yhat~) + mean(Y - lambda x Yhat)
                     = mean(Y) + lambda x (mean(Yhat~) - mean(Yhat))

The second form is the people's mean moved by lambda times how far the judge's mean on the unlabelled items lies
from its mean on the labelled ones. The judge's bias appears in both of those means and cancels, so the estimate is
unbiased at every fixed lambda whatever the judge does (a lambda tuned on the same data adds a bias of order 1 / n):
nothing is assumed about the judge, only that the labelled items are a uniform random sample of the cell's items. The judge buys precision, not validity: a good
judge narrows the interval, a useless one leaves it as wide as the people's alone (lambda near 0).

lambda (power tuning) is the value that minimises the estimate's estimated variance,

    lambda = cov(Y, Yhat) / ((1 + n / N) x var(Yhat and Yhat~ together))

with the covariance divided by n and the variance of all n + N judge values divided by n + N - 1 (ppi_py's
choice, kept so the numbers are the same), then clipped to [0, 1] as ppi_py does by default: 0 is the people's mean
alone, 1 the plain prediction-powered estimate. A fixed lambda may be given instead (1 in the reference check).

The standard error is sqrt(lambda^2 x var(Yhat~) / N + var(Y - lambda x Yhat) / n), both variances divided by
their counts (numpy's default, ppi_py's too), and the interval is estimate +/- z x se with z the normal quantile
of the level (1.96 for 95%). That is a central-limit interval: it needs enough labelled items for the mean of
Y - lambda x Yhat to be near normal (tens, not a handful). Choosing lambda from the same data makes the interval a
little narrower than it should be in small samples; bench/judge_correction.py measures the coverage.

The effective sample size is the number of human labels whose plain mean would have the same variance,
var(Y) / se^2: n when the judge adds nothing, more the better the judge tracks the people. The tuned lambda
minimises the variance as estimated with all n + N judge values, while the standard error uses the N unlabelled
ones, so in a small sample the reported se may come out a little above lambda 1's, or the effective sample size a
little below n; with N in the hundreds the two estimates agree closely.

Edge cases: fewer than 2 labelled items, values that are not finite, mismatched lengths and a level outside (0, 1)
raise ValueError. No unlabelled item (N = 0): the tuned lambda is 0 and the result is the people's mean (a fixed
lambda other than 0 raises); the judge-only figures are NaN. A judge that gave every item the same value: the
tuned lambda is 0 (the judge carries no information; ppi_py's formula is 0 / 0 there). People who gave every
labelled item the same value: the tuned lambda is 0 (the covariance is 0) and the interval has zero width. A
standard error of 0 is reported as it is, with a note, and an effective sample size of n when var(Y) is 0 too,
else infinity.

Pure; knows no benchmark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from eyt_dagster.core.explained import Explained, Step, figure, term

ASSUMPTION = (
    "assumed: the items with a human label are a uniform random sample of the cell's items; nothing is assumed "
    "about the judge (a biased judge moves the estimate's width, not its centre)"
)


@dataclass(frozen=True)
class PredictionPoweredMean:
    """The prediction-powered (PPI++) estimate of a mean of human labels, with the figures it is made of and the
    judge-only and people-only estimates beside it. Every interval is estimate +/- z x se at `level`."""

    estimate: float
    se: float
    low: float
    high: float
    level: float
    z: float  # the normal quantile of the level, 1.95996... for 95%
    n_labelled: int  # n: items with a human label (and a judge value)
    n_unlabelled: int  # N: items with the judge's value only
    lam: float  # the lambda used, in [0, 1] when tuned
    lam_tuned: bool  # chosen from the data (False: given)
    lam_unclipped: float  # the tuned value before clipping to [0, 1]; NaN when given or when the formula has none
    covariance: float  # cov(Y, Yhat) on the labelled items, divided by n
    judge_variance: float  # variance of all n + N judge values, divided by n + N - 1
    labelled_judge_mean: float  # mean(Yhat): the judge on the labelled items
    rectified_sd: float  # standard deviation of Y - lambda x Yhat on the labelled items, divided by n
    judge_mean: float  # judge only: mean(Yhat~), over the unlabelled items
    judge_sd: float  # standard deviation of Yhat~, divided by N
    judge_se: float
    judge_low: float
    judge_high: float
    people_mean: float  # people only: mean(Y)
    people_sd: float  # standard deviation of Y, divided by n
    people_se: float
    people_low: float
    people_high: float
    effective_n: float  # var(Y) / se^2: the human labels a people-only mean would need for this se
    notes: tuple[str, ...] = ()

    def explained(self, label: str) -> Explained:
        """The estimate with its arithmetic, written with the actual values (`Explained.value` is `estimate`)."""
        n, big_n, lam = self.n_labelled, self.n_unlabelled, self.lam
        steps = [
            Step(f"people: mean of the {n} human label(s)", "", self.people_mean),
            Step(f"judge: mean over the same {n} item(s)", "", self.labelled_judge_mean),
            Step(f"judge: mean over the {big_n} item(s) without a human label", "", self.judge_mean),
        ]
        if self.lam_tuned:
            steps += [
                Step(
                    f"covariance of human label and judge over the {n} labelled item(s) (divided by {n})",
                    "",
                    self.covariance,
                ),
                Step(
                    f"variance of the judge's {n + big_n} value(s), labelled or not (divided by {n + big_n - 1})",
                    "",
                    self.judge_variance,
                ),
            ]
            if not math.isnan(self.lam_unclipped):
                steps.append(
                    Step(
                        "weight of the judge, lambda = covariance / ((1 + n / N) x variance)",
                        f"{figure(self.covariance)} / ((1 + {n} / {big_n}) x {figure(self.judge_variance)})",
                        self.lam_unclipped,
                        (self.covariance, float(n), float(big_n), self.judge_variance),
                    )
                )
                if lam != self.lam_unclipped:
                    steps.append(Step("lambda clipped to [0, 1]", "", lam))
            else:
                steps.append(Step("weight of the judge, lambda (no value from the formula, see the notes)", "", lam))
        else:
            steps.append(Step("weight of the judge, lambda, given", "", lam))
        steps += [
            Step(
                "estimate = people's mean + lambda x (judge without labels - judge on the labelled items)",
                f"{figure(self.people_mean)} + {term(lam)} x ({figure(self.judge_mean)} - "
                f"{term(self.labelled_judge_mean)})",
                self.estimate,
                (self.people_mean, lam, self.judge_mean, self.labelled_judge_mean),
            ),
            Step(f"standard deviation of human label - lambda x judge over the {n} item(s)", "", self.rectified_sd),
            Step(f"standard deviation of the judge over the {big_n} unlabelled item(s)", "", self.judge_sd),
            Step(
                "standard error = sqrt((lambda x judge's sd)^2 / N + (sd of label - lambda x judge)^2 / n)",
                f"sqrt(({term(lam)} x {figure(self.judge_sd)})^2 / {big_n} + {figure(self.rectified_sd)}^2 / {n})",
                self.se,
                (lam, self.judge_sd, float(big_n), self.rectified_sd, float(n)),
            ),
            Step(
                f"{self.level:.0%} interval: estimate -/+ {figure(self.z)} x standard error",
                f"{figure(self.estimate)} -/+ {figure(self.z)} x {figure(self.se)}",
                f"{figure(self.low)} to {figure(self.high)}",
                (self.estimate, self.z, self.se),
            ),
            Step(
                "effective number of human labels = people's variance / standard error^2",
                f"{figure(self.people_sd)}^2 / {figure(self.se)}^2",
                self.effective_n,
                (self.people_sd, self.se),
            ),
        ]
        return Explained(label, self.estimate, tuple(steps), (ASSUMPTION, *self.notes))


def two_sided_z(level: float) -> float:
    """The normal quantile of a two-sided central-limit interval at `level` (1.959964 for 0.95): every corrected
    interval's, pooled or compared, uses this one."""
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def _vector(values: ArrayLike, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{name} must be one value per item, not shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} has {int((~np.isfinite(x)).sum())} value(s) that are missing or not finite")
    return x


def prediction_powered_mean(
    human: ArrayLike, judged: ArrayLike, judged_unlabelled: ArrayLike, *, lam: float | None = None, level: float = 0.95
) -> PredictionPoweredMean:
    """The PPI++ estimate of the mean of the human labels (the module's docstring has the formulas). `human` and
    `judged` are the people's and the judge's values on the n labelled items, in the same order; `judged_unlabelled`
    the judge's values on the N items without a human label (not the labelled ones again). `lam` None tunes lambda
    from the data and clips it to [0, 1]; a number fixes it (0: people only, 1: plain prediction-powered)."""
    y, yhat, unlabelled = (
        _vector(human, "human"),
        _vector(judged, "judged"),
        _vector(judged_unlabelled, "judged_unlabelled"),
    )
    n, big_n = len(y), len(unlabelled)
    if len(yhat) != n:
        raise ValueError(f"human and judged differ in length: {n} human label(s), {len(yhat)} judge value(s)")
    if n < 2:
        raise ValueError(f"need at least 2 items with a human label to estimate a variance, got {n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if lam is not None and not math.isfinite(lam):
        raise ValueError(f"lam must be a finite number or None, got {lam}")
    notes: list[str] = []
    people_mean, people_sd = float(y.mean()), float(y.std())
    labelled_judge_mean = float(yhat.mean())
    covariance = float(np.mean((y - people_mean) * (yhat - labelled_judge_mean)))
    judge_variance = float(np.concatenate([yhat, unlabelled]).var(ddof=1))
    unclipped = math.nan
    if big_n == 0:
        if lam not in (None, 0.0):
            raise ValueError(f"no item without a human label: lambda must be 0 or tuned, got {lam}")
        used = 0.0
        notes.append("every item has a human label: the estimate is the people's mean (lambda 0)")
    elif lam is not None:
        used = float(lam)
    elif judge_variance == 0.0:
        used = 0.0
        notes.append("the judge gave every item the same value: it carries no information (lambda 0)")
    else:
        unclipped = covariance / ((1.0 + n / big_n) * judge_variance)
        used = min(max(unclipped, 0.0), 1.0)
    z = two_sided_z(level)
    rectified_sd = float((y - used * yhat).std())
    if big_n:
        judge_mean, judge_sd = float(unlabelled.mean()), float(unlabelled.std())
        judge_se = judge_sd / math.sqrt(big_n)
        imputed_var = (used * judge_sd) ** 2 / big_n
        estimate = people_mean + used * (judge_mean - labelled_judge_mean)
    else:
        judge_mean = judge_sd = judge_se = math.nan
        imputed_var, estimate = 0.0, people_mean
    se = math.sqrt(imputed_var + rectified_sd**2 / n)
    people_se = people_sd / math.sqrt(n)
    if se > 0.0:
        effective_n = people_sd**2 / se**2
    else:
        effective_n = float(n) if people_sd == 0.0 else math.inf
        notes.append(
            "the standard error is 0 (no spread in the human labels, or none left after the judge's correction): "
            "the interval has zero width, which says only that these values did not vary"
        )
    return PredictionPoweredMean(
        estimate=estimate,
        se=se,
        low=estimate - z * se,
        high=estimate + z * se,
        level=level,
        z=z,
        n_labelled=n,
        n_unlabelled=big_n,
        lam=used,
        lam_tuned=lam is None,
        lam_unclipped=unclipped,
        covariance=covariance,
        judge_variance=judge_variance,
        labelled_judge_mean=labelled_judge_mean,
        rectified_sd=rectified_sd,
        judge_mean=judge_mean,
        judge_sd=judge_sd,
        judge_se=judge_se,
        judge_low=judge_mean - z * judge_se,
        judge_high=judge_mean + z * judge_se,
        people_mean=people_mean,
        people_sd=people_sd,
        people_se=people_se,
        people_low=people_mean - z * people_se,
        people_high=people_mean + z * people_se,
        effective_n=effective_n,
        notes=tuple(notes),
    )
