"""Two targets on the ChatSEEDs both finished in one pool: the paired difference (A - B) of one per-dialogue metric
of dialogue.dialogue_scores, largest absolute difference first, paginated; the mean difference is what
dialogue.pairwise_comparisons resamples, computed with its arithmetic (core.explained_means), so the page's number
and its explanation are one value."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from eyt_dagster.core.explained import Explained
from eyt_dagster.core.explained_means import explained_paired_difference
from eyt_dagster.explorer.queries import HEADLINE, PAGE_SIZE, SCORE_COLUMNS
from eyt_dagster.explorer.reads import Warehouse

METRICS = tuple(c for c in SCORE_COLUMNS if not c.startswith("n_failed"))


def metric_column(name: str) -> str:
    """A dialogue_scores column for `name` (a column, or a leaderboard metric made of one); ValueError if none."""
    column = name if name in METRICS else HEADLINE.get(name, "")
    if column not in METRICS:
        raise ValueError(f"unknown metric '{name}'; the metrics are {', '.join(METRICS)}")
    return column


@dataclass(frozen=True)
class PairPage:
    rows: pd.DataFrame  # seed_id, a, b, difference: one page
    total: int  # ChatSEEDs both targets finished
    page: int
    pages: int
    mean_difference: float | None  # `mean`'s value (None when no ChatSEED has a value of both)
    mean: Explained  # the mean difference A - B over every ChatSEED both finished, with its arithmetic


def paired(wh: Warehouse, pool: str, a: str, b: str, metric: str, page: int = 1) -> PairPage:
    column = metric_column(metric)
    params = {"pool": pool, "a": a, "b": b}
    base = f"""
        SELECT x.seed_id, CAST(x.{column} AS DOUBLE) AS a, CAST(y.{column} AS DOUBLE) AS b,
            CAST(x.{column} AS DOUBLE) - CAST(y.{column} AS DOUBLE) AS difference
        FROM dialogue_scores x JOIN dialogue_scores y ON x.pool = y.pool AND x.seed_id = y.seed_id
        WHERE x.pool = $pool AND x.target = $a AND y.target = $b
    """
    with wh.sql(["dialogue.dialogue_scores"], {"pool": pool, "target": [a, b]}) as con:
        every = con.execute(f"SELECT seed_id, a, b FROM ({base}) ORDER BY seed_id", params).df()
        total = len(every)
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, page), pages)
        rows = con.execute(
            f"{base} ORDER BY abs(difference) DESC NULLS LAST, seed_id "
            f"LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}",
            params,
        ).df()
    mean = mean_difference(every, a, b, column)
    value = mean.number()
    return PairPage(rows, total, page, pages, None if pd.isna(value) else value, mean)


def mean_difference(rows: pd.DataFrame, a: str, b: str, column: str) -> Explained:
    """The mean of A - B of `column` over `rows` (seed_id, a, b: the ChatSEEDs both finished), those without a value
    of both left out, with its arithmetic."""
    return explained_paired_difference(
        f"mean paired difference {a} - {b} of {column}",
        rows["a"].to_numpy(dtype=float, na_value=float("nan")),
        rows["b"].to_numpy(dtype=float, na_value=float("nan")),
        [str(s) for s in rows["seed_id"]],
        (a, b),
        "ChatSEED",
    ).then(notes=(f"one value per dialogue: its {column} (dialogue.dialogue_scores)",))


def seed_targets(wh: Warehouse, pool: str, seed_id: str) -> list[str]:
    """Every target with a dialogue of this ChatSEED in this pool, finished or not. The (pool, seed, target)
    triples of each dialogue_turns file are kept per file version (Warehouse.distinct), so only the first page
    of a pool after a write reads its files (at 100 targets: 160 ms; then ~5 ms)."""
    found = wh.distinct("dialogue.dialogue_turns", ("pool", "seed_id", "target"), {"pool": pool})
    return sorted({str(t) for p, s, t in found if p == pool and s == seed_id})
