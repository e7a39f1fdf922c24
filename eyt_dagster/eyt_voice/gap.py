"""The text-to-voice gap: per target, pool and metric, what hearing the user costs against reading the same
ChatSEEDs through the same model.

Each ChatSEED a voice target played both ways gives a pair of per-dialogue values (EYT-Bench's per-dialogue
metric values: analysis.per_dialogue). `delta` = mean(voice - text) over the pairs, with a 95% paired bootstrap
interval (the ChatSEEDs resampled, `bootstrap_resamples`, seeded) and `excludes_zero`; `preserve_ratio` =
mean(voice) / mean(text), how much of the text figure survives the voice (missing when the text mean is 0). For
drift a lower value is better, so a positive delta is a loss there. Pure logic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from eyt_dagster.core.stats import paired_bootstrap_diff
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import per_dialogue
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS
from eyt_dagster.eyt_voice.table_contracts import ASR_ERRORS_COLUMNS, VOICE_GAP_COLUMNS

# The tables' columns as their contracts (table_contracts.py) order them, without what the asset adds (the baseline
# flags and created_at: assets/eyt_voice/reports.py).
_ADDED = ("is_baseline", "self_preference_risk", "created_at")
COLUMNS = column_names(VOICE_GAP_COLUMNS, without=_ADDED)


def voice_gap(scores: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """One row per target, pool and paired metric of voice.dialogue_scores (both modes)."""
    rows = []
    for (target, pool), cell in scores.groupby(["target", "pool"], sort=True):
        by_mode = {mode: cell[cell["mode"] == mode].set_index("seed_id") for mode in ("voice", "text")}
        shared = sorted(set(by_mode["voice"].index) & set(by_mode["text"].index))
        for metric in PAIRED_METRICS:
            voice = per_dialogue(by_mode["voice"], metric).reindex(shared).to_numpy(dtype=float)
            text = per_dialogue(by_mode["text"], metric).reindex(shared).to_numpy(dtype=float)
            paired = paired_bootstrap_diff(voice, text, resamples=resamples, seed=seed)
            keep = ~(np.isnan(voice) | np.isnan(text))
            text_mean = float(text[keep].mean()) if keep.any() else float("nan")
            voice_mean = float(voice[keep].mean()) if keep.any() else float("nan")
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "metric": metric,
                    "n_paired": int(paired["n"]),
                    "text": text_mean,
                    "voice": voice_mean,
                    "delta": paired["diff"],
                    "ci_low": paired["low"],
                    "ci_high": paired["high"],
                    "excludes_zero": paired["excludes_zero"],
                    "preserve_ratio": voice_mean / text_mean
                    if text_mean not in (0.0,) and keep.any()
                    else float("nan"),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


LABELS = ("explicit_intent", "latent_intent", "emotion")
ASR_COLUMNS = column_names(ASR_ERRORS_COLUMNS, without=_ADDED)


def _unit(cell: pd.DataFrame) -> str:
    """The unit a cell's errors are counted in (one per pool; a partition written before units were recorded
    counted words)."""
    units = set(cell["error_unit"].dropna()) if "error_unit" in cell else set()
    if len(units) > 1:
        raise ValueError(f"a cell's recognition errors are counted in more than one unit: {sorted(units)}")
    return units.pop() if units else "word"


def asr_errors(turns: pd.DataFrame) -> pd.DataFrame:
    """Per target and pool, a cascade's recognition error rate on the synthesised user turns (answered turns of
    finished dialogues; an audio model has no transcript and no row): the word error rate `wer`, or for a pool whose
    errors are counted in characters (Chinese: `error_unit`) the character error rate `cer`, the other left empty;
    and its errors split between the transcription and the model: each label's accuracy on the turns it heard
    without an error (`clean`) and on those with one (`misheard`). A gap between the two is what the recognition
    cost; errors on clean turns are the model's."""
    heard = answered_turns(turns)
    heard = heard[heard["word_errors"].notna()].copy()
    if not len(heard):
        return pd.DataFrame(columns=ASR_COLUMNS)
    heard["misheard"] = heard["word_errors"].astype(int) > 0
    for label in LABELS:
        heard[f"{label}_right"] = (heard[f"gold_{label}"] == heard[f"pred_{label}"]).astype(float)
    rows = []
    for (target, pool), cell in heard.groupby(["target", "pool"], sort=True):
        row = {
            "target": target,
            "pool": pool,
            "turns": len(cell),
            "ref_words": int(cell["ref_words"].sum()),
            "word_errors": int(cell["word_errors"].sum()),
            "error_unit": _unit(cell),
            "turns_clean": int((~cell["misheard"]).sum()),
            "turns_misheard": int(cell["misheard"].sum()),
        }
        rate = row["word_errors"] / row["ref_words"] if row["ref_words"] else np.nan
        row["wer"], row["cer"] = (rate, np.nan) if row["error_unit"] == "word" else (np.nan, rate)
        for label in LABELS:
            for part, mask in (("clean", ~cell["misheard"]), ("misheard", cell["misheard"])):
                values = cell.loc[mask, f"{label}_right"]
                row[f"{label}_acc_{part}"] = float(values.mean()) if len(values) else np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=ASR_COLUMNS)
