"""Each target's rank with a 95% bootstrap interval, per pool and metric (dialogue.rank_intervals).

A rank is only as certain as the scores under it: two targets 0.2 points apart on Empathy may swap places on
another draw of ChatSEEDs. So the ChatSEEDs every target of the pool played (in id order) are resampled together (one
(resamples x n) index matrix, seeded, the one core.stats draws for n units), each target's mean of its
per-dialogue values is taken on every resample, the targets are ranked on each resample (1 = best; ties share
the best rank of the tie), and the 2.5th and 97.5th percentiles of a target's ranks are its interval. The rank
itself is that of the target's mean on those ChatSEEDs. Per-dialogue values are the pairwise comparisons' (a
ratio metric is each dialogue's own ratio), so the ranks read with dialogue.pairwise_comparisons.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd

from eyt_dagster.core import result_cache, stats
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import per_dialogue
from eyt_dagster.eyt_bench.table_contracts import RANK_INTERVALS_COLUMNS
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS

# Metrics where a lower value is better (every other metric: higher is better).
LOWER_IS_BETTER = frozenset({"drift"})

# the table's columns as its contract (table_contracts.py) orders them, without what the asset adds
# (the baseline flags, created_at)
RANK_COLUMNS = tuple(
    column_names(RANK_INTERVALS_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at"))
)


def column_ranks(means: np.ndarray, lower_is_better: bool) -> np.ndarray:
    """Ranks of the rows of `means` (targets x draws) within each column, 1 = best, ties the best of the tie; a
    NaN mean ranks last. scipy.stats.rankdata(method="min", axis=0) in numpy (its algorithm: a stable sort, each run
    of equal values given its first position), so the reports' run does not import scipy.stats for it."""
    keyed = means if lower_is_better else -means
    keyed = np.where(np.isnan(keyed), np.inf, keyed)
    order = np.argsort(keyed, axis=0, kind="stable")
    ordered = np.take_along_axis(keyed, order, axis=0)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    position = np.arange(1, ordered.shape[0] + 1, dtype=np.int64).reshape((-1,) + (1,) * (ordered.ndim - 1))
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=0)
    ranks = np.empty_like(first)
    np.put_along_axis(ranks, order, first, axis=0)
    return ranks


DRAWS_KIND = "rank_intervals.target_draws.v1"  # what a target's stored resample means are computed by


def rank_intervals(
    scores: pd.DataFrame,
    *,
    resamples: int,
    seed: int,
    level: float = 0.95,
    store: result_cache.ResultStore | None = None,
) -> pd.DataFrame:
    """One row per pool, metric and target: its rank among the pool's targets and the rank's bootstrap interval,
    over the ChatSEEDs every target of the pool played, in id order (see the module docstring). A target's means
    on the resamples depend on its own values on those ChatSEEDs, the seed and the resamples: with a `store`
    (core.result_cache) they are kept under a key of exactly those, and only the targets not stored are
    resampled; the ranks over all targets are taken afresh."""
    store = store if store is not None else result_cache.MemoryStore()
    rows = []
    tail = (1.0 - level) / 2.0
    for pool, in_pool in scores.groupby("pool", sort=True):
        targets = sorted(in_pool["target"].unique())
        played = in_pool.drop_duplicates(["target", "seed_id"]).set_index(["target", "seed_id"])
        seeds = sorted(s for s in pd.unique(in_pool["seed_id"]) if all((t, s) in played.index for t in targets))
        if not seeds:
            continue
        matrices = np.stack(
            [
                per_dialogue(played, metric).unstack("seed_id").reindex(index=targets, columns=seeds).to_numpy(float)
                for metric in PAIRED_METRICS
            ]
        )  # metrics x targets x ChatSEEDs
        all_draws = _target_draws(matrices, seeds, resamples, seed, store) if len(seeds) >= 2 else None
        for m, metric in enumerate(PAIRED_METRICS):
            matrix = matrices[m]
            with np.errstate(invalid="ignore"), _quiet():
                point = np.nanmean(matrix, axis=1)
            lower = metric in LOWER_IS_BETTER
            rank = column_ranks(point[:, None], lower)[:, 0]
            low = high = np.full(len(targets), np.nan)
            if all_draws is not None:
                ranked = column_ranks(all_draws[:, m, :], lower)  # targets x resamples
                low, high = np.quantile(ranked, [tail, 1.0 - tail], axis=1)
            for k, target in enumerate(targets):
                rows.append(
                    {
                        "pool": pool,
                        "metric": metric,
                        "target": target,
                        "n_dialogues": int(np.sum(~np.isnan(matrix[k]))),
                        "n_targets": len(targets),
                        "value": float(point[k]),
                        "rank": int(rank[k]),
                        "rank_low": float(low[k]),
                        "rank_high": float(high[k]),
                        "resamples": resamples,
                    }
                )
    return pd.DataFrame(rows, columns=list(RANK_COLUMNS))


def _target_draws(
    matrices: np.ndarray, seeds: list[str], resamples: int, seed: int, store: result_cache.ResultStore
) -> np.ndarray:
    """(targets x metrics x resamples): each target's mean (NaN skipped) on every resample of the ChatSEEDs."""
    n_metrics, n_targets, n = matrices.shape
    columns = result_cache.content_key("chat_seeds", tuple(str(s) for s in seeds), resamples, seed)
    keys = [result_cache.content_key(columns, matrices[:, t, :]) for t in range(n_targets)]
    idx = stats.resample_indices(n, resamples, seed)

    def compute(which: list[int]) -> list[np.ndarray]:
        with _quiet():
            return [np.stack([np.nanmean(matrices[m, t][idx], axis=1) for m in range(n_metrics)]) for t in which]

    return np.stack(result_cache.cached_arrays(store, DRAWS_KIND, keys, (n_metrics, resamples), compute))


@contextmanager
def _quiet() -> Iterator[None]:
    """numpy's 'mean of empty slice' warning off: an all-NaN row is a NaN mean, which ranks last."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
