"""Hand-made rows of dialogue.judge_corrected, corrected_rank_intervals and corrected_pairwise (their contract:
docs/eyt-metrics.md), for the tests of the pages that show them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from eyt_dagster.eyt_bench.shown_figures import JUDGE_MADE

# (target, pool, metric) -> (corrected mean, low, high, n_labelled)
Corrected = Mapping[tuple[str, str, str], tuple[float, float, float, int]]


def judge_corrected(
    board: Iterable[Mapping[str, Any]], corrected: Corrected, judge_half_width: float = 2.0
) -> pd.DataFrame:
    """One row per leaderboard row x judge-made metric: the cells of `corrected` show their corrected figure,
    every other one its judge figure (the leaderboard's value +- `judge_half_width` for a 0-100 score, a tenth of
    it for a share) with why, as the contract says."""
    rows = []
    for cell in board:
        for metric in JUDGE_MADE:
            key = (str(cell["target"]), str(cell["pool"]), metric)
            judge = float(cell[metric])
            width = judge_half_width if metric != "ficr" else judge_half_width / 100
            found = corrected.get(key)
            mean, low, high, n = found if found else (math.nan, math.nan, math.nan, 0)
            shown = "corrected" if found else "judge only"
            rows.append(
                {
                    "target": key[0],
                    "pool": key[1],
                    "metric": metric,
                    "n_dialogues": int(cell.get("n_dialogues", 20)),
                    "n_labelled": n,
                    "n_annotators": 2 if n else 0,
                    "annotator_alpha": 0.7 if n else math.nan,
                    "judge_mean": judge,
                    "judge_low": judge - width,
                    "judge_high": judge + width,
                    "people_mean": mean,
                    "people_low": low,
                    "people_high": high,
                    "ppi_lambda": 0.5 if found else math.nan,
                    "corrected_mean": mean,
                    "corrected_se": (high - low) / 3.92 if found else math.nan,
                    "corrected_low": low,
                    "corrected_high": high,
                    "effective_n": 30.0 if found else math.nan,
                    "shown": shown,
                    "shown_mean": mean if found else judge,
                    "shown_low": low if found else judge - width,
                    "shown_high": high if found else judge + width,
                    "why": "" if found else "no human labels",
                    "is_baseline": bool(cell.get("is_baseline", False)),
                    "self_preference_risk": False,
                }
            )
    return pd.DataFrame(rows)


def rank_row(pool: str, metric: str, target: str, judge: int, corrected: int) -> dict[str, Any]:
    return {
        "pool": pool,
        "metric": metric,
        "target": target,
        "judge_rank": judge,
        "judge_rank_low": 1,
        "judge_rank_high": 2,
        "corrected_rank": corrected,
        "corrected_rank_low": 1,
        "corrected_rank_high": 2,
        "rank_changed": judge != corrected,
        "n_labelled": 12,
        "is_baseline": False,
        "self_preference_risk": False,
    }


def pair_row(
    pool: str, metric: str, a: str, b: str, judge: tuple[float, float, float], corrected: tuple[float, float, float]
) -> dict[str, Any]:
    """A pair's judge and corrected differences (diff, low, high); significant when the interval excludes 0."""

    def significant(d: tuple[float, float, float]) -> bool:
        return d[1] > 0 or d[2] < 0

    def verdict(d: tuple[float, float, float]) -> str:
        return "no_clear_difference" if not significant(d) else ("a_better" if d[0] > 0 else "b_better")

    return {
        "pool": pool,
        "metric": metric,
        "target_a": a,
        "target_b": b,
        "judge_diff": judge[0],
        "judge_low": judge[1],
        "judge_high": judge[2],
        "judge_significant": significant(judge),
        "judge_verdict": verdict(judge),
        "corrected_diff": corrected[0],
        "corrected_se": (corrected[2] - corrected[1]) / 3.92,
        "corrected_low": corrected[1],
        "corrected_high": corrected[2],
        "corrected_p": 0.5,
        "corrected_significant": significant(corrected),
        "corrected_verdict": verdict(corrected),
        "changed": verdict(judge) != verdict(corrected),
        "is_baseline_pair": False,
        "self_preference_risk": False,
    }
