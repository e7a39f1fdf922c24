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

from eyt_dagster.core.explained import Explained, Step, figure, sum_of
from eyt_dagster.core.explained_means import explained_mean, explained_paired_difference, interval_steps
from eyt_dagster.core.stats import paired_bootstrap_diff
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import RATIO_METRICS, per_dialogue
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS
from eyt_dagster.eyt_voice.table_contracts import ASR_ERRORS_COLUMNS, VOICE_GAP_COLUMNS

# The tables' columns as their contracts (table_contracts.py) order them, without what the asset adds (the baseline
# flags and created_at: assets/eyt_voice/reports.py).
_ADDED = ("is_baseline", "self_preference_risk", "created_at")
COLUMNS = column_names(VOICE_GAP_COLUMNS, without=_ADDED)


def voice_gap(scores: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """One row per target, pool and paired metric of voice.dialogue_scores (both modes). text, voice, delta and
    preserve_ratio are `explained_gap`'s values."""
    rows = []
    for (target, pool), cell in scores.groupby(["target", "pool"], sort=True):
        for metric in PAIRED_METRICS:
            seeds, voice, text = paired_values(cell, metric)
            paired = paired_bootstrap_diff(voice, text, resamples=resamples, seed=seed)
            explained = explained_gap(seeds, voice, text, metric)
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "metric": metric,
                    "n_paired": int(paired["n"]),
                    "text": explained["text"].number(),
                    "voice": explained["voice"].number(),
                    "delta": explained["delta"].number(),
                    "ci_low": paired["low"],
                    "ci_high": paired["high"],
                    "excludes_zero": paired["excludes_zero"],
                    "preserve_ratio": explained["preserve_ratio"].number(),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def paired_values(cell: pd.DataFrame, metric: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """One cell's (target x pool) ChatSEEDs played in both modes, in id order, and each one's per-dialogue value of
    `metric` (analysis.per_dialogue) heard and read: (seed ids, voice values, text values)."""
    by_mode = {mode: cell[cell["mode"] == mode].set_index("seed_id") for mode in ("voice", "text")}
    shared = sorted(set(by_mode["voice"].index) & set(by_mode["text"].index))
    voice = per_dialogue(by_mode["voice"], metric).reindex(shared).to_numpy(dtype=float)
    text = per_dialogue(by_mode["text"], metric).reindex(shared).to_numpy(dtype=float)
    return [str(s) for s in shared], voice, text


GAP_NUMBERS = ("text", "voice", "delta", "preserve_ratio")


def explained_gap(seeds: list[str], voice: np.ndarray, text: np.ndarray, metric: str) -> dict[str, Explained]:
    """text, voice, delta and preserve_ratio of one cell and metric (`paired_values`), each with its arithmetic:
    the means of each mode over the pairs with a value in both, the mean of voice - text over them, and voice / text
    (missing when the text mean is 0 or no pair has both). What `voice_gap` stores."""
    keep = ~(np.isnan(voice) | np.isnan(text))
    kept = [s for s, k in zip(seeds, keep) if k]
    left = len(seeds) - len(kept)
    dropped = (f"{left} ChatSEED(s) left out: no {metric} in one of the modes",) if left else ()
    ratio_of = ": the dialogue's own ratio (analysis.per_dialogue)" if metric in RATIO_METRICS else ""
    per = f"one value per dialogue: its {metric}{ratio_of} (voice.dialogue_scores)"
    out = {
        mode: explained_mean(
            f"{metric}, {mode} (mean over the pairs)", values[keep], f"{metric} {said}", "ChatSEED"
        ).then(notes=(*dropped, per))
        for mode, values, said in (("text", text, "read"), ("voice", voice, "heard"))
    }
    out["delta"] = explained_paired_difference(
        f"{metric}: voice - text (mean over the pairs)", voice, text, seeds, ("voice", "text"), "ChatSEED"
    ).then(notes=(per,) + (("a lower drift is better: a positive delta is a loss",) if metric == "drift" else ()))
    text_mean, voice_mean = out["text"].number(), out["voice"].number()
    ratio = voice_mean / text_mean if text_mean not in (0.0,) and keep.any() else float("nan")
    if not keep.any():
        why = Step("no ChatSEED has a value in both modes: missing")
    elif text_mean == 0.0:
        why = Step("the text mean is 0: missing")
    else:
        why = Step("the voice mean over the text mean", f"{figure(voice_mean)} / {figure(text_mean)}", ratio)
    out["preserve_ratio"] = Explained(f"{metric}: voice / text", ratio, (why,), dropped)
    return out


def gap_interval(n_paired: int, low: float, high: float) -> tuple[Step, ...]:
    """How a voice_gap row's interval of delta was drawn: the pairs resampled with the slate's
    `bootstrap_resamples` and `seed`, which the table does not record (the asset's metadata has the resamples)."""
    return interval_steps(n_paired, "pair", low, high, "the slate's bootstrap_resamples and seed, not kept in the row")


LABELS = ("explicit_intent", "latent_intent", "emotion")
ASR_COLUMNS = column_names(ASR_ERRORS_COLUMNS, without=_ADDED)


def _unit(cell: pd.DataFrame) -> str:
    """The unit a cell's errors are counted in (one per pool; a partition written before units were recorded
    counted words)."""
    units = set(cell["error_unit"].dropna()) if "error_unit" in cell else set()
    if len(units) > 1:
        raise ValueError(f"a cell's recognition errors are counted in more than one unit: {sorted(units)}")
    return units.pop() if units else "word"


def heard_turns(turns: pd.DataFrame) -> pd.DataFrame:
    """The turns a cascade transcribed: answered turns of finished dialogues with an error count (an audio model has
    no transcript, so none of its turns)."""
    heard = answered_turns(turns)
    return heard[heard["word_errors"].notna()].copy()


def explained_error_rate(cell: pd.DataFrame) -> Explained:
    """A cell's recognition error rate from its heard turns (`heard_turns`), with the arithmetic: the errors and the
    reference words (characters in a pool scored in characters) summed over the turns, then divided: the WER (CER)
    `asr_errors` stores. Missing when the turns have no reference word."""
    unit = _unit(cell)
    errors, refs = cell["word_errors"].astype(int), cell["ref_words"].astype(int)
    top, bottom = int(errors.sum()), int(refs.sum())
    rate = top / bottom if bottom else np.nan
    name = "character error rate (CER)" if unit == "character" else "word error rate (WER)"
    steps = (
        Step(
            f"recognition errors (the {unit}-level edit distance of transcript and text), summed over the "
            f"{len(cell)} turn(s)",
            sum_of(errors.tolist(), 12),
            top,
        ),
        Step(f"{unit}s of the synthesised text, summed over the same turns", sum_of(refs.tolist(), 12), bottom),
        Step("errors over reference " + unit + "s", f"{top} / {bottom}", rate, (float(top), float(bottom))),
    )
    notes = (
        "summed before dividing: a long turn weighs more, as a corpus error rate does",
        "the answered turns of finished dialogues only",
    )
    return Explained(name, rate, steps, notes)


def asr_errors(turns: pd.DataFrame) -> pd.DataFrame:
    """Per target and pool, a cascade's recognition error rate on the synthesised user turns (answered turns of
    finished dialogues; an audio model has no transcript and no row): the word error rate `wer`, or for a pool whose
    errors are counted in characters (Chinese: `error_unit`) the character error rate `cer`, the other left empty
    (`explained_error_rate`'s value); and its errors split between the transcription and the model: each label's
    accuracy on the turns it heard without an error (`clean`) and on those with one (`misheard`). A gap between the
    two is what the recognition cost; errors on clean turns are the model's."""
    heard = heard_turns(turns)
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
        rate = explained_error_rate(cell).number()
        row["wer"], row["cer"] = (rate, np.nan) if row["error_unit"] == "word" else (np.nan, rate)
        for label in LABELS:
            for part, mask in (("clean", ~cell["misheard"]), ("misheard", cell["misheard"])):
                values = cell.loc[mask, f"{label}_right"]
                row[f"{label}_acc_{part}"] = float(values.mean()) if len(values) else np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=ASR_COLUMNS)
