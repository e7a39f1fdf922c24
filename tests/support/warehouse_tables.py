"""Dialogue tables of a synthetic warehouse made less regular (bench/explorer_pages.py's generator), for the
tests that check the report computations and the reports' result cache on many targets."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.dialogue_scoring import score_dialogues


def explorer_bench():
    spec = importlib.util.spec_from_file_location(
        "explorer_pages", Path(__file__).resolve().parents[2] / "bench" / "explorer_pages.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warehouse_tables(seed: int = 11):
    """The dialogue tables of 4 targets x 2 pools (bench/explorer_pages.py's generator) made less regular: mixed
    emotion labels (one outside the label set), dialogues cut short, an unfinished dialogue's error row (turn 0), a
    cell whose only dialogue failed, and per-dialogue scores from the real scoring."""
    b = explorer_bench()
    rng = np.random.default_rng(seed)
    pools = ("nemotron_usa", "personamem_v2")
    targets = [b.target_name(k) for k in range(4)]
    turns, similarity, verdicts, finals, _ = b.dialogue_frames(targets, pools, 9, 5, ("judge-a", "judge-b"), rng)
    turns["gold_emotion"] = rng.choice(["anxiety", "joy", "sadness"], len(turns))
    turns["pred_emotion"] = rng.choice(["anxiety", "joy", "sadness", "not-an-emotion"], len(turns))
    for role, frame in (("target", turns), ("simulator", turns), ("judge", verdicts), ("judge", finals)):
        frame[f"{role}_tokens_in"] = rng.integers(10, 99, len(frame))
        frame[f"{role}_tokens_out"] = rng.integers(1, 9, len(frame))
        frame[f"{role}_cost_usd"] = rng.random(len(frame))
    short = (turns["seed_id"].str.endswith(("1", "4"))) & (turns["turn"] > 2)
    turns, similarity = turns[~short], similarity[~short.to_numpy()]
    verdicts = verdicts.merge(turns[["target", "pool", "seed_id", "turn"]], on=["target", "pool", "seed_id", "turn"])
    unfinished = turns["seed_id"].str.endswith("7") & (turns["target"] == targets[2])
    turns.loc[unfinished, "complete"] = False
    error = turns.iloc[[0]].assign(turn=0, error="TimeoutError: no reply", complete=False, target=targets[3])
    turns = pd.concat([turns, error], ignore_index=True)
    scores = score_dialogues(turns, verdicts, finals, similarity, alpha=0.1)
    scores = scores.assign(alpha=0.1, judge_combine="mean")
    scores.loc[scores.index[:3], "drift"] = np.nan  # a metric with missing values in one cell
    return scores, turns, verdicts, finals
