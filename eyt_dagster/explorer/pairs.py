"""Two targets on the ChatSEEDs both finished in one pool: the paired difference (A - B) of one per-dialogue metric
of dialogue.dialogue_scores, largest absolute difference first, paginated; the mean difference is what
dialogue.pairwise_comparisons resamples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

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
    mean_difference: float | None


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
        total = int(_value(con, f"SELECT count(*) FROM ({base})", params))
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, page), pages)
        rows = con.execute(
            f"{base} ORDER BY abs(difference) DESC NULLS LAST, seed_id "
            f"LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}",
            params,
        ).df()
        mean = _value(con, f"SELECT avg(difference) FROM ({base})", params)
    return PairPage(rows, total, page, pages, None if mean is None or pd.isna(mean) else float(mean))


def seed_targets(wh: Warehouse, pool: str, seed_id: str) -> list[str]:
    """Every target with a dialogue of this ChatSEED in this pool, finished or not. The (pool, seed, target)
    triples of each dialogue_turns file are kept per file version (Warehouse.distinct), so only the first page
    of a pool after a write reads its files (at 100 targets: 160 ms; then ~5 ms)."""
    found = wh.distinct("dialogue.dialogue_turns", ("pool", "seed_id", "target"), {"pool": pool})
    return sorted({str(t) for p, s, t in found if p == pool and s == seed_id})


def _value(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, str]) -> Any:
    row = con.execute(sql, params).fetchone()
    return None if row is None else row[0]
