"""Per-dialogue scores: every EYT-Bench metric broken down to one row per dialogue.

The leaderboard and the analysis tables aggregate these rows, and the bootstrap resamples them, so each
number has one definition (docs/eyt-metrics.md). Pure logic over the warehouse tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from eyt_dagster.core.bounds import clipped
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.encoder_calibration import EncoderCalibration
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, DIMENSION_TO_100

KEYS = ["target", "pool", "seed_id"]
DIMENSIONS = tuple(DIMENSION_NAMES.values())
LABELS = {"explicit": "explicit_intent", "latent": "latent_intent", "emotion": "emotion"}
EARLY_TURNS = 2  # warm-up: turns 1-2 are early, 3+ late (paper §3.5.3, Table 8)
PER_DIALOGUE = [
    *DIMENSIONS,
    *(f"{d}_{part}" for d in DIMENSIONS for part in ("sum", "early", "late")),
    "n_judged_turns",
]


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows without an error (error rows are reported, never scored)."""
    return df[df["error"].isna()] if "error" in df.columns else df


def answered_turns(turns: pd.DataFrame) -> pd.DataFrame:
    """The answered turns of finished dialogues: the rows metrics and judges read. A dialogue whose call
    failed keeps its answered turns with complete = False: they are left out until a rerun finishes it.
    (A missing `complete` comes from a partition written before the column existed, when a failed dialogue
    kept no turns, so it counts as complete.)"""
    ok = ok_rows(turns)
    ok = ok[ok["turn"] > 0]
    if "complete" in ok.columns:
        ok = ok[ok["complete"].astype("boolean").fillna(True).astype(bool)]
    return ok


def incomplete_dialogues(turns: pd.DataFrame) -> pd.DataFrame:
    """One row per dialogue that did not finish (its error row), with the error."""
    failed = turns[turns["error"].notna()] if len(turns) else turns
    return failed[[*KEYS, "error"]].drop_duplicates(KEYS) if len(failed) else pd.DataFrame(columns=[*KEYS, "error"])


def dialogue_lengths(turns: pd.DataFrame) -> pd.Series:
    """T of each finished dialogue: its number of answered turns, indexed by KEYS."""
    answered = answered_turns(turns)
    if answered.empty:
        return pd.Series(dtype="int64", index=pd.MultiIndex.from_tuples([], names=KEYS), name="n_turns")
    return answered.groupby(KEYS)["turn"].max().astype("int64").rename("n_turns")


def directional_alignment(turn_index: pd.Series, cos_to_final: pd.Series) -> float:
    """Spearman correlation between turn index and cos(predicted intent, final intent) in one dialogue;
    undefined (NaN) for fewer than three turns or a constant similarity."""
    from scipy.stats import spearmanr  # imported here: loading the code location stays light

    if len(turn_index) < 3 or cos_to_final.nunique() < 2:
        return float("nan")
    return clipped(float(spearmanr(turn_index, cos_to_final).statistic), -1.0, 1.0)


def turn_dimension_scores(verdicts: pd.DataFrame, combine: str = "mean") -> pd.DataFrame:
    """Per judged turn, each dimension 0-5: each sub-indicator combined over the judges (mean or median),
    then summed per dimension."""
    ok = ok_rows(verdicts)
    if ok.empty:
        return pd.DataFrame(columns=[*KEYS, "turn", *DIMENSIONS])
    return metrics.dimension_sums(metrics.combine_judges(ok, combine))


def weighted_by_dialogue(dims: pd.DataFrame, lengths: pd.Series, alpha: float) -> pd.DataFrame:
    """Per dialogue: Eq. 3 weighted scores (0-100), the raw sums over its judged turns (for unweighted pooled
    means), early / late raw means (0-5) and how many turns were judged. The Eq. 4 weights come from each
    turn's number and the dialogue's own T (`lengths`, from dialogue_turns), renormalised over the judged
    turns when a verdict is missing (see metrics.judged_turn_weights). Dialogues without a length (not
    finished) are left out. Computed for all dialogues at once (group sums and means, no Python per dialogue)."""
    if dims.empty or lengths.empty:
        return pd.DataFrame(columns=[*KEYS, *PER_DIALOGUE])
    with_t = dims.merge(lengths.reset_index(), on=KEYS, how="inner")
    beyond = with_t[with_t["turn"] > with_t["n_turns"]]
    if len(beyond):
        first = beyond.iloc[0]
        raise ValueError(
            f"judge verdicts for turn {first['turn']} of {first['target']} / {first['seed_id']}, which has only "
            f"{first['n_turns']} turn(s) in dialogue_turns: the verdicts are older than the dialogues; "
            "rematerialise judge_verdicts for this partition"
        )
    if with_t.empty:
        return pd.DataFrame(columns=[*KEYS, *PER_DIALOGUE])
    rows = with_t.sort_values([*KEYS, "turn"], kind="stable")
    turns, n_turns = rows["turn"].to_numpy(dtype=int), rows["n_turns"].to_numpy(dtype=int)
    raw = metrics.eq4_weights(turns, n_turns, alpha)
    groups = rows[KEYS].copy()
    groups["_w"] = raw
    by = [groups[k] for k in KEYS]
    w = raw / groups.groupby(by, sort=True)["_w"].transform("sum").to_numpy()  # renormalised over judged turns
    early = turns <= EARLY_TURNS
    parts = {}
    for d in DIMENSIONS:
        x = rows[d].to_numpy(dtype=float)
        parts[f"{d}__w"] = w * x
        parts[f"{d}__nan"] = np.isnan(x)
        parts[f"{d}__x"] = x
        parts[f"{d}__early"] = np.where(early, x, np.nan)
        parts[f"{d}__late"] = np.where(early, np.nan, x)
    grouped = pd.DataFrame(parts, index=rows.index).groupby(by, sort=True)
    means = grouped[[f"{d}__{part}" for d in DIMENSIONS for part in ("early", "late")]].mean()
    sums = grouped[[f"{d}__{part}" for d in DIMENSIONS for part in ("w", "nan", "x")]].sum()  # NaN skipped, as before
    out = pd.DataFrame(index=sums.index)
    for d in DIMENSIONS:  # a NaN score leaves the weighted score NaN (np.dot), as it did
        out[d] = np.where(sums[f"{d}__nan"] > 0, np.nan, sums[f"{d}__w"] * DIMENSION_TO_100)
    for d in DIMENSIONS:
        out[f"{d}_sum"] = sums[f"{d}__x"]
        out[f"{d}_early"] = means[f"{d}__early"]
        out[f"{d}_late"] = means[f"{d}__late"]
    out["n_judged_turns"] = grouped.size().astype(float)  # a float, as the per-dialogue Series made it
    return out.reset_index()[[*KEYS, *PER_DIALOGUE]]


def failed_verdicts(verdicts: pd.DataFrame) -> pd.Series:
    """Error rows (failed judge calls) per dialogue, indexed by KEYS."""
    if verdicts.empty or "error" not in verdicts.columns:
        return pd.Series(dtype="int64", index=pd.MultiIndex.from_tuples([], names=KEYS))
    return verdicts["error"].notna().groupby([verdicts[k] for k in KEYS]).sum().astype("int64")


def score_dialogues(
    turns: pd.DataFrame,
    verdicts: pd.DataFrame,
    finals: pd.DataFrame,
    similarity: pd.DataFrame,
    alpha: float,
    combine: str = "mean",
    calibration: EncoderCalibration | None = None,
) -> pd.DataFrame:
    """One row per finished dialogue with its label hits, drift (Eq. 1, on the `calibration`'s drift scale:
    encoder_calibration.py; none, or all-MiniLM-L6-v2's, is Eq. 1 as written), alignment, the judges' verdicts combined by
    `combine` (mean or median; completion is always a majority vote), dimension scores, and how many turns
    were judged and how many judge calls failed. Unjudged values are missing, never a crash."""
    answered = answered_turns(turns)
    out = dialogue_lengths(turns).reset_index()
    for short, col in LABELS.items():
        hits = (answered[f"gold_{col}"] == answered[f"pred_{col}"]).groupby([answered[k] for k in KEYS]).sum()
        out = out.merge(hits.rename(f"{short}_correct").reset_index(), on=KEYS, how="left")
    if len(similarity):
        by_dialogue = similarity.groupby(KEYS)
        per_dialogue = by_dialogue["cos_gold_pred"]
        if calibration is None:
            drift = per_dialogue.apply(metrics.intent_drift).rename("drift")
        else:
            drift = per_dialogue.apply(metrics.calibrated_intent_drift, calibration=calibration).rename("drift")
        align = by_dialogue.apply(
            lambda g: directional_alignment(g["turn"], g["cos_pred_final"]), include_groups=False
        ).rename("directional_alignment")
        out = out.merge(drift.reset_index(), on=KEYS, how="left").merge(align.reset_index(), on=KEYS, how="left")
    else:
        out["drift"], out["directional_alignment"] = np.nan, np.nan
    ok_finals = ok_rows(finals)
    if len(ok_finals):
        combined = metrics.combine_final_verdicts(ok_finals, combine)
        combined["satisfaction"] = metrics.satisfaction_to_100(combined["satisfaction"])
        out = out.merge(combined, on=KEYS, how="left")
    else:
        out["completed"], out["satisfaction"] = None, np.nan
    dims = turn_dimension_scores(verdicts, combine)
    out = out.merge(weighted_by_dialogue(dims, dialogue_lengths(turns), alpha), on=KEYS, how="left")
    out["n_judged_turns"] = pd.to_numeric(out["n_judged_turns"]).fillna(0).astype("int64")
    for column, frame in (("n_failed_verdicts", verdicts), ("n_failed_final_verdicts", finals)):
        counts = failed_verdicts(frame).rename(column).reset_index()
        out = out.merge(counts, on=KEYS, how="left") if len(counts) else out.assign(**{column: 0})
        out[column] = out[column].fillna(0).astype("int64")
    return out
