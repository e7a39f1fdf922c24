"""The EYT-Bench leaderboard: one row per target x pool with the headline metrics of SPEC §3.6.

Pure logic over the warehouse tables; sql/leaderboard.sql computes the same numbers in SQL.
"""

from __future__ import annotations

import pandas as pd

from eyt_dagster import metrics
from eyt_dagster.config import Slate

CELL = ["target", "pool"]
ROLE_COST_COLUMNS = [f"{role}_{what}" for role in ("simulator", "target", "judge") for what in ("tokens", "cost_usd")]
BASELINE_NOTE = "embedded baseline (rule-based, not a language model)"


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["error"].isna()] if "error" in df.columns else df


def _role_costs(turns: pd.DataFrame, verdicts: pd.DataFrame, finals: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame()
    for role, frames in (("simulator", [turns]), ("target", [turns]), ("judge", [verdicts, finals])):
        parts = []
        for frame in frames:
            part = frame[CELL].copy()
            part["tokens"] = frame[f"{role}_tokens_in"] + frame[f"{role}_tokens_out"]
            part["cost_usd"] = frame[f"{role}_cost_usd"]
            parts.append(part)
        summed = pd.concat(parts).groupby(CELL).sum().add_prefix(f"{role}_")
        out = summed if out.empty else out.join(summed, how="outer")
    return out


def cell_metrics(turns: pd.DataFrame, sims: pd.DataFrame, sums: pd.DataFrame, finals: pd.DataFrame, alpha: float) -> dict:
    """The headline metrics of one target x pool cell from its answered turns and (combined) verdicts."""
    row: dict[str, float] = {"n_dialogues": int(turns["seed_id"].nunique())}
    for name, col in (("explicit_acc", "explicit_intent"), ("latent_acc", "latent_intent"), ("emotion_acc", "emotion")):
        row[name] = metrics.accuracy(turns[f"gold_{col}"], turns[f"pred_{col}"])
    row["emotion_macro_f1"] = metrics.macro_f1(turns["gold_emotion"], turns["pred_emotion"])
    row["drift"] = float(sims.groupby("seed_id")["cos_gold_pred"].apply(metrics.intent_drift).mean()) if len(sims) else float("nan")
    row["ficr"] = float(finals["completed"].astype(float).mean()) if len(finals) else float("nan")
    row["satisfaction"] = float(metrics.satisfaction_to_100(finals["satisfaction"]).mean()) if len(finals) else float("nan")
    if len(sums):
        row.update(metrics.subjective_scores(sums, alpha))
    row["mean_turns"] = float(turns.groupby("seed_id")["turn"].max().mean()) if len(turns) else float("nan")
    return row


def build_leaderboard(
    slate: Slate,
    turns: pd.DataFrame,
    verdicts: pd.DataFrame,
    finals: pd.DataFrame,
    similarity: pd.DataFrame,
    combine: str = "mean",
) -> pd.DataFrame:
    """All cells present in `turns`; judges are combined first (mean/median scores, majority completion)."""
    answered = _ok(turns)
    answered = answered[answered["turn"] > 0]
    sums = metrics.dimension_sums(metrics.combine_judges(_ok(verdicts), combine)) if len(_ok(verdicts)) else None
    combined_finals = metrics.combine_final_verdicts(_ok(finals), combine) if len(_ok(finals)) else None
    targets = {t.id: t for t in slate.targets}
    rows = []
    for (target, pool), cell_turns in answered.groupby(CELL):
        def pick(df: pd.DataFrame | None) -> pd.DataFrame:
            if df is None or df.empty:
                return pd.DataFrame(columns=[] if df is None else df.columns)
            return df[(df["target"] == target) & (df["pool"] == pool)]

        row = {"target": target, "pool": pool}
        ref = targets.get(target)
        row["is_baseline"] = bool(ref.is_baseline) if ref else False
        row["target_kind"] = BASELINE_NOTE if row["is_baseline"] else "model"
        row["in_slate"] = ref is not None
        row["self_preference_risk"] = bool(ref and slate.self_preference_risk(target))
        row["judges"] = ", ".join(j.id for j in slate.judges)
        row["n_errors"] = int(turns[(turns["target"] == target) & (turns["pool"] == pool)]["error"].notna().sum())
        row.update(cell_metrics(cell_turns, pick(similarity), pick(sums), pick(combined_finals), slate.alpha))
        rows.append(row)
    board = pd.DataFrame(rows)
    if board.empty:
        return board
    costs = _role_costs(turns.fillna({c: 0 for c in turns.columns if c.endswith(("_tokens_in", "_tokens_out", "_cost_usd"))}),
                        verdicts, finals).reset_index()
    board = board.merge(costs, on=CELL, how="left")
    board["alpha"] = slate.alpha
    board["slate"] = slate.name
    return board.sort_values(["pool", "target"]).reset_index(drop=True)
