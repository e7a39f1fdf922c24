"""A human ranking of SpeechEQ targets (paper §4.2, Table 4), read from a CSV file the slate names
(speech.evaluation.human_ranking). The rank correlation with the metrics is eyt_dagster/speech_eq/rank_correlation.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

RANKING_COLUMNS = ("target", "rank")


@dataclass(frozen=True)
class HumanRanking:
    """A human ranking of targets: one row per target (target, rank, source), and the items the humans
    rated (None when the file names none: then the metrics are taken over every item)."""

    targets: pd.DataFrame
    items: tuple[str, ...] | None
    path: str = ""


def read_human_ranking(path: Path | str) -> HumanRanking:
    """Read a human ranking of targets (paper §4.2, Table 4) from a CSV with a header, in one of two shapes:

        target,rank,source                    target,item_id,rank
        qwen-omni,1,prolific-2026-05          qwen-omni,emp-001,1
        cascade-emo-des,2,prolific-2026-05    cascade-emo-des,emp-001,2
                                              qwen-omni,stress-004,2
                                              cascade-emo-des,stress-004,1

    - target: a target id as in the leaderboard.
    - rank: a number > 0, 1 = best; tied targets share a rank (e.g. 2,2 or 2.5,2.5).
    - item_id (optional): the item (dataset_id) the rank is for. With it, each row is one target's rank on one
      rated item, every target is ranked on the same items, and a target's rank is its mean rank over them
      (the per-item rankings aggregated); the metrics are then computed over those items only. Without it,
      each target appears once and the metrics cover every item.
    - source: optional free text (who ranked, when); other columns are ignored.

    Errors name the file, the line (the header is line 1) and the field."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in RANKING_COLUMNS if c not in raw.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {', '.join(missing)}; expected a header with "
            f"{','.join(RANKING_COLUMNS)}[,item_id][,source]"
        )
    has_items = "item_id" in raw.columns
    df = pd.DataFrame(
        {
            "target": raw["target"].str.strip(),
            "rank_text": raw["rank"].str.strip(),
            "item_id": raw["item_id"].str.strip() if has_items else "",
            "source": raw["source"].str.strip() if "source" in raw.columns else "",
        }
    )
    df.index = pd.RangeIndex(2, len(df) + 2)  # file line numbers
    for line, row in df.iterrows():
        if row["target"] == "":
            raise ValueError(f"{path}: line {line}: field 'target' is empty")
        if has_items and row["item_id"] == "":
            raise ValueError(
                f"{path}: line {line}: field 'item_id' is empty; with an item_id column every row "
                "names the item its rank is for"
            )
        rank = pd.to_numeric(row["rank_text"], errors="coerce")
        if pd.isna(rank) or not np.isfinite(rank) or rank <= 0:
            raise ValueError(
                f"{path}: line {line}: field 'rank' is {row['rank_text']!r}; expected a number > 0 (1 = best)"
            )
    df = df.assign(rank=pd.to_numeric(df["rank_text"]).astype(float))
    if not has_items:
        dup = df["target"].duplicated(keep=False)
        if dup.any():
            lines = ", ".join(str(n) for n in df.index[dup])
            raise ValueError(
                f"{path}: lines {lines}: field 'target' repeats {sorted(set(df.loc[dup, 'target']))}; "
                "each target is ranked once (or add an item_id column: one rank per rated item)"
            )
        return HumanRanking(df[["target", "rank", "source"]].reset_index(drop=True), None, str(path))
    dup = df.duplicated(["target", "item_id"], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        lines = ", ".join(
            str(n) for n in df.index[dup & (df["target"] == first["target"]) & (df["item_id"] == first["item_id"])]
        )
        raise ValueError(
            f"{path}: lines {lines}: target '{first['target']}' is ranked on item '{first['item_id']}' more than once"
        )
    items = tuple(sorted(set(df["item_id"])))
    for target, rows in df.groupby("target", sort=True):
        lacking = sorted(set(items) - set(rows["item_id"]))
        if lacking:
            raise ValueError(
                f"{path}: target '{target}' has no rank on item(s) {lacking}; every target is ranked "
                "on every rated item"
            )
    per_target = df.groupby("target", sort=False).agg(
        rank=("rank", "mean"), source=("source", lambda v: next((x for x in v if x), ""))
    )
    return HumanRanking(per_target.reset_index()[["target", "rank", "source"]], items, str(path))
