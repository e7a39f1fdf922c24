"""Rankings under correction: the targets' ranks and pairwise verdicts from the prediction-powered estimates of
dialogue.judge_corrected, beside the judge-only ones of dialogue.rank_intervals and dialogue.pairwise_comparisons
(dialogue.corrected_rank_intervals, dialogue.corrected_pairwise).

Only a pool and metric all of whose targets show a corrected figure (judge_corrected's `shown` is "corrected")
gets rows: a ranking that mixes corrected and judge-only figures would compare the people's scale with the judge's.

A pair's corrected difference is corrected_mean_a - corrected_mean_b with the standard error
sqrt(se_a² + se_b²), i.e. the two estimates are treated as independent. The human labels of the two cells are
drawn and scored apart, so their errors are independent; the only thing the cells share is the ChatSEEDs (every
target of a pool plays the same ones), which if anything correlates the two estimates positively (a hard ChatSEED
is hard for both), and a positive correlation makes the true standard error of the difference smaller than this
one. The standard error is therefore conservative: an interval too wide rather than too narrow. The interval is
diff ± z·se (z = 1.959964 for 95%), the p-value two-sided normal, and the p-values are Holm-adjusted over the same
family as the judge-only table (every pair of one pool and metric), so `significant` means the same in both
tables. A pair's verdict is "a_better", "b_better" or "no_clear_difference" (better respects metrics where lower
is better); `changed` says the corrected verdict differs from the judge-only one (never for a pair the judge-only
table has no difference for).

A target's corrected rank is that of its corrected mean among the pool's targets (1 = best, ties share the best
rank of the tie, as in rank_intervals); its interval is the 2.5th and 97.5th percentiles of its rank over a
seeded parametric bootstrap: on each of `resamples` draws every target's estimate is drawn from
Normal(corrected_mean, corrected_se), independently of the others (the same independence as above), and the
targets are ranked. The draws are numpy.random.default_rng(seed).standard_normal((resamples, targets)), the targets
in id order, one generator per pool and metric seeded with the slate's seed, as rank_intervals seeds its resamples.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from eyt_dagster.core import stats
from eyt_dagster.core.prediction_powered import two_sided_z
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import SIGNIFICANCE_LEVEL, holm_by_family
from eyt_dagster.eyt_bench.judge_correction import LEVEL  # the corrected estimates' level
from eyt_dagster.eyt_bench.rank_intervals import LOWER_IS_BETTER, column_ranks
from eyt_dagster.eyt_bench.table_contracts import CORRECTED_PAIRWISE_COLUMNS, CORRECTED_RANK_INTERVALS_COLUMNS

CORRECTED = "corrected"  # judge_corrected's `shown` for a cell whose figure is the prediction-powered one
A_BETTER, B_BETTER, NO_CLEAR_DIFFERENCE = "a_better", "b_better", "no_clear_difference"
# How a metric is named in a sentence (the leaderboard's headings).
METRIC_TITLES = {
    "empathy": "Empathy",
    "persona": "Persona",
    "anthropomorphic": "Anthropomorphic",
    "ficr": "FICR",
    "satisfaction": "Satisfaction",
}

RANK_COLUMNS = tuple(
    column_names(CORRECTED_RANK_INTERVALS_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at"))
)
PAIR_COLUMNS = tuple(
    column_names(CORRECTED_PAIRWISE_COLUMNS, without=("is_baseline_pair", "self_preference_risk", "created_at"))
)


def corrected_groups(judge_corrected: pd.DataFrame, *judge_tables: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """(pool, metric) -> that group's judge_corrected rows (one per target, in id order), for every group in which
    every target of the pool shows a corrected figure with a finite mean and standard error. A pool's targets are
    every target judge_corrected names on it, on any metric, and every target the judge-only `judge_tables` name
    on that pool and metric (their `target`, or `target_a` and `target_b`): a target missing from judge_corrected
    leaves its groups out."""
    groups: dict[tuple[str, str], pd.DataFrame] = {}
    if judge_corrected.empty:
        return groups
    named: dict[tuple[str, str], set[str]] = {}
    for table in judge_tables:
        for column in ("target", "target_a", "target_b"):
            if column in table.columns and len(table):
                for (pool, metric), targets in table.groupby(["pool", "metric"], sort=False)[column]:
                    named.setdefault((str(pool), str(metric)), set()).update(map(str, targets))
    pool_targets = judge_corrected.groupby("pool")["target"].agg(lambda t: set(map(str, t)))
    for (pool, metric), rows in judge_corrected.groupby(["pool", "metric"], sort=True):
        key = (str(pool), str(metric))
        targets = pool_targets[pool] | named.get(key, set())
        usable = rows[
            (rows["shown"].astype("string") == CORRECTED).fillna(False).to_numpy(bool)
            & np.isfinite(rows["corrected_mean"].astype(float))
            & np.isfinite(rows["corrected_se"].astype(float))
        ].drop_duplicates("target")
        if set(map(str, usable["target"])) == targets:
            groups[key] = usable.sort_values("target", kind="stable").reset_index(drop=True)
    return groups


def verdict(diff: float, significant: bool, metric: str) -> str:
    """Which target of a pair the comparison favours: A_BETTER, B_BETTER or NO_CLEAR_DIFFERENCE (`diff` is a - b;
    for a metric in LOWER_IS_BETTER a negative difference favours a)."""
    if not significant or not np.isfinite(diff) or diff == 0:
        return NO_CLEAR_DIFFERENCE
    return A_BETTER if (diff > 0) != (metric in LOWER_IS_BETTER) else B_BETTER


def corrected_pairwise(judge_corrected: pd.DataFrame, pairwise_comparisons: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of targets (a before b in id order, as in pairwise_comparisons) of every pool and metric
    all of whose targets are corrected (corrected_groups): the judge-only difference, interval and Holm
    significance read from `pairwise_comparisons`, and the corrected difference, standard error, interval,
    p-value, Holm-adjusted p-value and significance (see the module docstring), both verdicts and `changed`."""
    z = two_sided_z(LEVEL)
    frames = []
    for (pool, metric), rows in corrected_groups(judge_corrected, pairwise_comparisons).items():
        pairs = list(combinations(range(len(rows)), 2))
        if not pairs:
            continue
        a, b = (np.array([p[k] for p in pairs], dtype=int) for k in (0, 1))
        mean = rows["corrected_mean"].to_numpy(float)
        se = rows["corrected_se"].to_numpy(float)
        target = rows["target"].astype(str).to_numpy(dtype=object)
        diff = mean[a] - mean[b]
        pair_se = np.sqrt(se[a] ** 2 + se[b] ** 2)
        frames.append(
            pd.DataFrame(
                {
                    "pool": pool,
                    "metric": metric,
                    "target_a": target[a],
                    "target_b": target[b],
                    "corrected_diff": diff,
                    "corrected_se": pair_se,
                    "corrected_low": diff - z * pair_se,
                    "corrected_high": diff + z * pair_se,
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=list(PAIR_COLUMNS))
    table = pd.concat(frames, ignore_index=True)
    table["corrected_p"] = stats.normal_p_value(table["corrected_diff"], table["corrected_se"])
    table["corrected_p_adjusted"] = holm_by_family(table, "corrected_p")
    table["corrected_significant"] = (table["corrected_p_adjusted"] < SIGNIFICANCE_LEVEL).astype(bool)
    judge = pairwise_comparisons.reindex(
        columns=["pool", "metric", "target_a", "target_b", "diff", "ci_low", "ci_high", "significant_adjusted"]
    ).rename(
        columns={"diff": "judge_diff", "ci_low": "judge_low", "ci_high": "judge_high", "significant_adjusted": "sig"}
    )
    keys = ["pool", "metric", "target_a", "target_b"]
    for column in keys:
        judge[column] = judge[column].astype(str)
    table = table.merge(judge, on=keys, how="left", validate="one_to_one")
    table["judge_significant"] = table["sig"].astype("boolean").fillna(False).astype(bool)
    table["judge_verdict"] = [
        verdict(d, s, m)
        for d, s, m in zip(table["judge_diff"].astype(float), table["judge_significant"], table["metric"])
    ]
    table["corrected_verdict"] = [
        verdict(d, s, m) for d, s, m in zip(table["corrected_diff"], table["corrected_significant"], table["metric"])
    ]
    # a pair the judge-only table has no difference for has no judge-only verdict to change from
    table["changed"] = table["judge_diff"].notna() & (table["judge_verdict"] != table["corrected_verdict"])
    return table[list(PAIR_COLUMNS)].reset_index(drop=True)


def corrected_rank_intervals(
    judge_corrected: pd.DataFrame, rank_intervals: pd.DataFrame, *, resamples: int, seed: int, level: float = LEVEL
) -> pd.DataFrame:
    """One row per target of every pool and metric all of whose targets are corrected (corrected_groups): its
    judge-only rank and interval read from `rank_intervals` (missing when that table has no row for it), its
    corrected rank and the rank's parametric-bootstrap interval (see the module docstring), and `rank_changed`
    (both ranks known and different)."""
    tail = (1.0 - level) / 2.0
    judge = rank_intervals.reindex(columns=["pool", "metric", "target", "rank", "rank_low", "rank_high"]).copy()
    for column in ("pool", "metric", "target"):
        judge[column] = judge[column].astype(str)
    judge = judge.drop_duplicates(["pool", "metric", "target"]).set_index(["pool", "metric", "target"])
    rows = []
    for (pool, metric), group in corrected_groups(judge_corrected, rank_intervals).items():
        lower = metric in LOWER_IS_BETTER
        mean = group["corrected_mean"].to_numpy(float)
        se = group["corrected_se"].to_numpy(float)
        rank = column_ranks(mean[:, None], lower)[:, 0]
        low = high = np.full(len(group), np.nan)
        if resamples > 0:
            noise = np.random.default_rng(seed).standard_normal((resamples, len(group))).T  # targets x resamples
            ranked = column_ranks(mean[:, None] + se[:, None] * noise, lower)
            low, high = np.quantile(ranked, [tail, 1.0 - tail], axis=1)
        for k, cell in enumerate(group.itertuples(index=False)):
            target = str(cell.target)
            known = (pool, metric, target) in judge.index
            judged = judge.loc[(pool, metric, target)] if known else None
            judge_rank = int(judged["rank"]) if judged is not None and pd.notna(judged["rank"]) else None
            rows.append(
                {
                    "pool": pool,
                    "metric": metric,
                    "target": target,
                    "n_labelled": cell.n_labelled,
                    "judge_rank": judge_rank,
                    "judge_rank_low": float(judged["rank_low"]) if judged is not None else np.nan,
                    "judge_rank_high": float(judged["rank_high"]) if judged is not None else np.nan,
                    "corrected_mean": float(mean[k]),
                    "corrected_se": float(se[k]),
                    "corrected_rank": int(rank[k]),
                    "corrected_rank_low": float(low[k]),
                    "corrected_rank_high": float(high[k]),
                    "rank_changed": judge_rank is not None and judge_rank != int(rank[k]),
                    "resamples": resamples,
                }
            )
    table = pd.DataFrame(rows, columns=list(RANK_COLUMNS))
    for column in ("n_labelled", "judge_rank", "corrected_rank", "resamples"):
        table[column] = table[column].astype("Int64")
    table["rank_changed"] = table["rank_changed"].astype(bool)
    return table


def ordinal(n: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _labelled(counts: pd.Series) -> str:
    known = sorted({int(n) for n in counts.dropna()})
    if not known:
        return "human labels"
    span = str(known[0]) if len(known) == 1 else f"{known[0]}-{known[-1]}"
    return f"human labels on {span} dialogue{'' if known == [1] else 's'} per cell"


def ranking_changes(corrected_ranks: pd.DataFrame) -> list[str]:
    """One sentence per target whose rank changes under correction (rank_changed), in pool, metric and judge-rank
    order, e.g. "nemotron_usa, Empathy: terse-baseline ranks 1st judged alone, 2nd corrected (human labels on 12
    dialogues per cell)". The count is the group's labelled dialogues per cell (a range when the cells differ).
    Plain text: whoever shows it escapes it."""
    if corrected_ranks.empty:
        return []
    sentences = []
    for (pool, metric), group in corrected_ranks.groupby(["pool", "metric"], sort=True):
        moved = group[group["rank_changed"].astype(bool)].sort_values(["judge_rank", "target"], kind="stable")
        labelled = _labelled(group["n_labelled"])
        title = METRIC_TITLES.get(str(metric), str(metric))
        for row in moved.itertuples(index=False):
            sentences.append(
                f"{pool}, {title}: {row.target} ranks {ordinal(int(row.judge_rank))} judged alone, "
                f"{ordinal(int(row.corrected_rank))} corrected ({labelled})"
            )
    return sentences
