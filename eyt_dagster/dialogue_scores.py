"""Per-dialogue scores: every EYT-Bench metric broken down to one row per dialogue.

The leaderboard and the analysis tables aggregate these rows, and the bootstrap resamples them, so each
number has one definition (SPEC §3.6). Pure logic over the warehouse tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from eyt_dagster import metrics
from eyt_dagster.taxonomy import DIMENSION_NAMES, DIMENSION_TO_100

KEYS = ["target", "pool", "seed_id"]
DIMENSIONS = tuple(DIMENSION_NAMES.values())
LABELS = {"explicit": "explicit_intent", "latent": "latent_intent", "emotion": "emotion"}
EARLY_TURNS = 2  # warm-up: turns 1-2 are early, 3+ late (paper §3.5.3, Table 8)


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows without an error (error rows are reported, never scored)."""
    return df[df["error"].isna()] if "error" in df.columns else df


def answered_turns(turns: pd.DataFrame) -> pd.DataFrame:
    ok = ok_rows(turns)
    return ok[ok["turn"] > 0]


def directional_alignment(turn_index: pd.Series, cos_to_final: pd.Series) -> float:
    """Spearman correlation between turn index and cos(predicted intent, final intent) in one dialogue
    (SPEC §3.6); undefined (NaN) for fewer than three turns or a constant similarity."""
    if len(turn_index) < 3 or cos_to_final.nunique() < 2:
        return float("nan")
    return float(spearmanr(turn_index, cos_to_final).statistic)


def turn_dimension_scores(verdicts: pd.DataFrame, combine: str = "mean") -> pd.DataFrame:
    """Per judged turn, each dimension 0-5, the judges combined by mean or median."""
    ok = ok_rows(verdicts)
    if ok.empty:
        return pd.DataFrame(columns=[*KEYS, "turn", *DIMENSIONS])
    return metrics.dimension_sums(metrics.combine_judges(ok, combine))


def _weighted(group: pd.DataFrame, alpha: float) -> pd.Series:
    w = metrics.warmup_weights(len(group), alpha)
    ordered = group.sort_values("turn")
    out = {d: float(np.dot(w, ordered[d].to_numpy())) * DIMENSION_TO_100 for d in DIMENSIONS}
    early, late = ordered[ordered["turn"] <= EARLY_TURNS], ordered[ordered["turn"] > EARLY_TURNS]
    for d in DIMENSIONS:
        out[f"{d}_sum"] = float(ordered[d].sum())
        out[f"{d}_early"] = float(early[d].mean()) if len(early) else np.nan
        out[f"{d}_late"] = float(late[d].mean()) if len(late) else np.nan
    out["n_judged_turns"] = len(ordered)
    return pd.Series(out)


def weighted_by_dialogue(dims: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Per dialogue: Eq. 3 weighted scores (0-100) with weights regenerated at its own length, the raw
    sums over its turns (for unweighted pooled means) and early / late raw means (0-5)."""
    if dims.empty:
        return pd.DataFrame(columns=KEYS)
    return dims.groupby(KEYS).apply(_weighted, alpha=alpha, include_groups=False).reset_index()


def dialogue_scores(
    turns: pd.DataFrame,
    verdicts: pd.DataFrame,
    finals: pd.DataFrame,
    similarity: pd.DataFrame,
    alpha: float,
    combine: str = "mean",
) -> pd.DataFrame:
    """One row per finished dialogue with its label hits, drift, alignment, verdicts and dimension scores."""
    answered = answered_turns(turns)
    grouped = answered.groupby(KEYS)
    out = grouped.agg(n_turns=("turn", "max")).reset_index()
    for short, col in LABELS.items():
        hits = (answered[f"gold_{col}"] == answered[f"pred_{col}"]).groupby([answered[k] for k in KEYS]).sum()
        out = out.merge(hits.rename(f"{short}_correct").reset_index(), on=KEYS, how="left")
    if len(similarity):
        by_dialogue = similarity.groupby(KEYS)
        drift = by_dialogue["cos_gold_pred"].apply(metrics.intent_drift).rename("drift")
        align = by_dialogue.apply(lambda g: directional_alignment(g["turn"], g["cos_pred_final"]),
                                  include_groups=False).rename("directional_alignment")
        out = out.merge(drift.reset_index(), on=KEYS, how="left").merge(align.reset_index(), on=KEYS, how="left")
    else:
        out["drift"], out["directional_alignment"] = np.nan, np.nan
    ok_finals = ok_rows(finals)
    if len(ok_finals):
        combined = metrics.combine_final_verdicts(ok_finals, combine)
        combined["satisfaction"] = metrics.satisfaction_to_100(combined["satisfaction"])
        out = out.merge(combined, on=KEYS, how="left")
    else:
        out["completed"], out["satisfaction"] = np.nan, np.nan
    out = out.merge(weighted_by_dialogue(turn_dimension_scores(verdicts, combine), alpha), on=KEYS, how="left")
    return out
