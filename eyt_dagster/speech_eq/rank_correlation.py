"""How well the SpeechEQ metrics order the targets as humans do (paper §4.2, Table 4): Spearman's rho between each
metric of the SEQ leaderboard and a human ranking (eyt_dagster/speech_eq/human_ranking.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from eyt_dagster.core import stats
from eyt_dagster.speech_eq.conditions import DEFAULT_CONDITION
from eyt_dagster.speech_eq.human_ranking import HumanRanking
from eyt_dagster.speech_eq.seq_tables import CHANCE_TARGET, seq_leaderboard

CORRELATION_METRICS = ("acc1", "acc2", "acc_traj", "seq")
CORRELATION_COLUMNS = ("metric", "condition", "n_targets", "rho", "p_value", "targets", "item_scope", "n_scope_items")
NAN = float("nan")


def human_correlation(
    leaderboard: pd.DataFrame,
    ranking: pd.DataFrame,
    condition: str = DEFAULT_CONDITION,
    metrics: Sequence[str] = CORRELATION_METRICS,
) -> pd.DataFrame:
    """Spearman's rho (ties share their average rank) between each metric and the human ranking over the
    targets in both, for one condition. The ranking is negated first (rank 1 = best, a high metric = best),
    so a metric that orders the targets exactly as the humans do gives +1. p_value is scipy's two-sided
    test (as reported in paper Table 4); NaN for fewer than 3 targets or constant input."""
    from scipy import stats as sps  # imported here: loading the code location stays light

    rows = leaderboard[(leaderboard["condition"] == condition) & (leaderboard["target"] != CHANCE_TARGET)]
    both = rows.merge(ranking[["target", "rank"]], on="target", how="inner")
    out = []
    for metric in metrics:
        pairs = both[both[metric].notna()].sort_values("target")
        x, y = pairs[metric].to_numpy(dtype=float), -pairs["rank"].to_numpy(dtype=float)
        rho = stats.spearman_rho(x, y)
        p = float(sps.spearmanr(x, y).pvalue) if len(pairs) >= 3 and not np.isnan(rho) else NAN
        out.append(
            {
                "metric": metric,
                "condition": condition,
                "n_targets": len(pairs),
                "rho": rho,
                "p_value": p,
                "targets": ",".join(pairs["target"].astype(str)),
            }
        )
    return pd.DataFrame(out, columns=list(CORRELATION_COLUMNS[:-2]))


def human_alignment(
    choices: pd.DataFrame,
    ranking: HumanRanking,
    *,
    resamples: int,
    seed: int,
    cohort: Sequence[str] | None = None,
    condition: str = DEFAULT_CONDITION,
) -> pd.DataFrame:
    """`human_correlation` with the metrics computed over the items the humans rated (paper §4.2 compares
    rankings "on the same examples"): the leaderboard is rebuilt from those items' rows, SEQ on that
    leaderboard's cohort. A ranking that names no items is compared over every item. `item_scope` says
    which ('rated' | 'all'), `n_scope_items` how many items."""
    evaluated = set(choices["item_id"].astype(str))
    if ranking.items is None:
        scope, rows = "all", choices
        n_items = len(evaluated)
    else:
        unknown = sorted(set(ranking.items) - evaluated)
        if unknown:
            raise ValueError(
                f"{ranking.path or 'human ranking'}: item(s) {unknown} are not in speech.slm_choices; "
                "name items by their dataset_id, as evaluated"
            )
        scope, rows = "rated", choices[choices["item_id"].astype(str).isin(ranking.items)]
        n_items = len(ranking.items)
    board = seq_leaderboard(rows, resamples=resamples, seed=seed, cohort=cohort)
    out = human_correlation(board, ranking.targets, condition)
    return out.assign(item_scope=scope, n_scope_items=n_items)
