"""Model cards: one row per model id over both benchmarks (see docs/reports.md).

A card joins what the two benchmarks already computed for the same target id (the id is the partition key in
both, eyt_dagster/slate.py): EYT-Bench per pool straight from `dialogue.leaderboard` and
`dialogue.leaderboard_intervals`, EYT-Bench pooled over the pools with the leaderboard's own aggregation
(`leaderboard.aggregate`, `metrics.macro_f1`) and interval function (`analysis.leaderboard_intervals`), and
SpeechEQ from the headline (default persona) row of `speech.seq_leaderboard`. A benchmark the model did not run
leaves its columns missing (NULL), never zero. Pure pandas: the asset does the reading.

Layout: wide, one row per model. Column `eyt_<scope>_<metric>` with `<scope>` a pool or `pooled`, plus
`_ci_low` / `_ci_high`; `speech_<metric>` likewise; `voice_<metric>` (the spoken EYT-Bench, over its pools) with
`_delta` (voice minus text), its `_ci_low` / `_ci_high` and `_preserve_ratio`.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from eyt_dagster.core.provider_profiles import changes_condition, join_notes, split_notes
from eyt_dagster.eyt_bench import analysis, metrics
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.leaderboard import aggregate
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS, POOLS
from eyt_dagster.eyt_voice.gap import voice_gap
from eyt_dagster.slate import Slate, TargetRef
from eyt_dagster.speech_eq.conditions import DEFAULT_CONDITION
from eyt_dagster.speech_eq.seq_tables import CHANCE_TARGET

POOLED = "pooled"
SCOPES: tuple[str, ...] = (*POOLS, POOLED)
# The EYT-Bench headline metrics of a card, in the leaderboard's order.
EYT_METRICS: tuple[str, ...] = (
    "explicit_acc",
    "latent_acc",
    "emotion_acc",
    "emotion_macro_f1",
    "drift",
    "ficr",
    "satisfaction",
    "empathy",
    "persona",
    "anthropomorphic",
)
SPEECH_METRICS: tuple[str, ...] = ("acc1", "acc2", "acc_traj")
VOICE_PARTS: tuple[str, ...] = ("", "_delta", "_ci_low", "_ci_high", "_preserve_ratio")
SPEECH_CONDITION = DEFAULT_CONDITION  # the paper's headline table is the no-persona condition


def _eyt_columns() -> dict[str, str]:
    cols: dict[str, str] = {}
    for scope in SCOPES:
        cols[f"eyt_{scope}_n_dialogues"] = "Int64"
        for metric in EYT_METRICS:
            for suffix in ("", "_ci_low", "_ci_high"):
                cols[f"eyt_{scope}_{metric}{suffix}"] = "float64"
        if scope in POOLS:  # the language a pool was played in, and the share of replies in it
            cols[f"eyt_{scope}_language"] = "string"
            cols[f"eyt_{scope}_reply_language_share"] = "float64"
    return cols


# The table contract of reports.model_cards (pandas dtypes; eyt_dagster/core/storage_types.py maps them).
MODEL_CARD_COLUMNS: dict[str, str] = {
    "target": "string",
    "is_baseline": "bool",
    "in_slate": "bool",
    "family": "string",
    "provider": "string",
    "model": "string",
    "endpoint": "string",
    "answer_settings": "string",
    "model_fingerprint": "string",
    "benchmarks": "string",
    "has_eyt_bench": "bool",
    "has_speech_eq": "bool",
    "has_eyt_voice": "bool",
    **_eyt_columns(),
    "eyt_judges": "string",
    "eyt_cost_usd": "float64",
    "eyt_eval_cost_usd": "float64",
    "eyt_tokens": "Int64",
    "eyt_mean_latency_s": "float64",
    "eyt_cut_replies": "Int64",  # the target's text replies cut at max_tokens, every pool
    "eyt_prompt_hashes": "string",
    "speech_condition": "string",
    "speech_input": "string",
    "speech_headline_inference": "string",
    "speech_n_items": "Int64",
    **{f"speech_{m}{s}": "float64" for m in SPEECH_METRICS for s in ("", "_ci_low", "_ci_high")},
    "speech_seq": "float64",
    "speech_seq_cohort": "string",
    "speech_seq_cohort_kind": "string",
    "speech_in_seq_cohort": "boolean",
    "speech_cost_usd": "float64",
    "speech_cost_per_100_queries": "float64",
    "speech_mean_latency_s": "float64",
    "speech_queries": "Int64",
    "speech_prompt_hashes": "string",
    # what the target's provider profile or refusals changed in its requests, both benchmarks (each note once), and
    # whether one of them sent a sampling setting with another value than the slate's
    "adaptations": "string",
    "sampling_adapted": "bool",
    "voice_n_paired": "Int64",
    **{f"voice_{m}{part}": "float64" for m in PAIRED_METRICS for part in VOICE_PARTS},
    "slate": "string",
    "slate_seed": "Int64",
    "created_at": "datetime64[ns]",
}


def _joined(values: pd.Series) -> str | None:
    found = sorted({str(v) for v in values.dropna()})
    return ", ".join(found) if found else None


def _fingerprint(ref: TargetRef | None) -> dict[str, object]:
    """Model name, endpoint and answer-changing settings (never a key: the slate holds only its variable name)."""
    if ref is None:
        return {"in_slate": False}
    return {
        "in_slate": True,
        "family": ref.family,
        "provider": ref.provider,
        "model": ref.model,
        "endpoint": ref.base_url or ("embedded" if ref.is_baseline else None),
        "answer_settings": json.dumps(ref.answer_settings(), sort_keys=True, default=str),
        "model_fingerprint": ref.fingerprint(),
        "benchmarks": ", ".join(ref.benchmarks),
        "is_baseline": bool(ref.is_baseline),
    }


def pooled_eyt(scores: pd.DataFrame, turns: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """Per target, the headline metrics over all its pools' dialogues together, with 95% intervals: values from
    `leaderboard.aggregate` and `metrics.macro_f1`, bounds from `analysis.leaderboard_intervals` (dialogues of
    every pool resampled as one set)."""
    if scores.empty:
        return pd.DataFrame(columns=["target"])
    answered = answered_turns(turns)
    intervals = analysis.leaderboard_intervals(
        scores.assign(pool=POOLED), turns.assign(pool=POOLED), resamples=resamples, seed=seed
    )
    bounds = intervals.set_index(["target", "metric"])
    rows = []
    for target, cell in scores.groupby("target"):
        values = aggregate(cell)
        own = answered[answered["target"] == target]
        values["emotion_macro_f1"] = metrics.macro_f1(own["gold_emotion"], own["pred_emotion"])
        row = {"target": target, f"eyt_{POOLED}_n_dialogues": len(cell)}
        for metric in EYT_METRICS:
            row[f"eyt_{POOLED}_{metric}"] = values[metric]
            low, high = (
                bounds.loc[(target, metric), ["ci_low", "ci_high"]]
                if (target, metric) in bounds.index
                else (np.nan, np.nan)
            )
            row[f"eyt_{POOLED}_{metric}_ci_low"], row[f"eyt_{POOLED}_{metric}_ci_high"] = low, high
        rows.append(row)
    return pd.DataFrame(rows)


def per_pool_eyt(leaderboard: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """Per target, each pool's leaderboard values and leaderboard_intervals bounds as card columns."""
    if leaderboard.empty:
        return pd.DataFrame(columns=["target"])
    bounds = intervals.set_index(["target", "pool", "metric"]) if len(intervals) else None
    rows: dict[str, dict[str, object]] = {}
    for rec in leaderboard.to_dict("records"):
        if rec["pool"] not in POOLS:
            continue
        row = rows.setdefault(rec["target"], {"target": rec["target"]})
        scope = rec["pool"]
        row[f"eyt_{scope}_n_dialogues"] = rec["n_dialogues"]
        row[f"eyt_{scope}_language"] = rec.get("language")
        row[f"eyt_{scope}_reply_language_share"] = rec.get("reply_language_share", np.nan)
        for metric in EYT_METRICS:
            row[f"eyt_{scope}_{metric}"] = rec[metric]
            key = (rec["target"], scope, metric)
            found = bounds is not None and key in bounds.index
            row[f"eyt_{scope}_{metric}_ci_low"] = bounds.loc[key, "ci_low"] if bounds is not None and found else np.nan
            row[f"eyt_{scope}_{metric}_ci_high"] = (
                bounds.loc[key, "ci_high"] if bounds is not None and found else np.nan
            )
    return pd.DataFrame(list(rows.values()))


def eyt_costs(leaderboard: pd.DataFrame, turns: pd.DataFrame, verdict_hashes: pd.DataFrame) -> pd.DataFrame:
    """Per target: the target's own cost and tokens (summed from the leaderboard's per-role sums), what the
    simulator and judges cost for its dialogues, its mean latency per answered turn, the judges, and the prompt
    hashes its dialogue and verdict rows were produced with."""
    if leaderboard.empty:
        return pd.DataFrame(columns=["target"])
    sums = leaderboard.groupby("target").agg(
        eyt_cost_usd=("target_cost_usd", "sum"),
        eyt_tokens=("target_tokens", "sum"),
        eyt_cut_replies=("cut_replies", "sum"),
        simulator=("simulator_cost_usd", "sum"),
        judge=("judge_cost_usd", "sum"),
        eyt_judges=("judges", _joined),
    )
    sums["eyt_eval_cost_usd"] = sums.pop("simulator") + sums.pop("judge")
    answered = turns[(turns["turn"] > 0) & turns["error"].isna()] if len(turns) else turns
    latency = (
        answered.groupby("target")["target_latency_s"].mean().rename("eyt_mean_latency_s")
        if len(answered)
        else pd.Series(dtype=float, name="eyt_mean_latency_s")
    )
    hashes = pd.concat(
        [
            turns[["target", "prompt_hash"]] if len(turns) else None,
            verdict_hashes[["target", "prompt_hash"]] if len(verdict_hashes) else None,
        ]
    )
    prompt = (
        hashes.groupby("target")["prompt_hash"].agg(_joined).rename("eyt_prompt_hashes")
        if len(hashes)
        else pd.Series(dtype=object, name="eyt_prompt_hashes")
    )
    return sums.join(latency, how="left").join(prompt, how="left").reset_index()


def target_adaptations(leaderboard: pd.DataFrame, choices: pd.DataFrame) -> pd.DataFrame:
    """Per target, every note of what its provider's profile or refusals changed in its requests, in both benchmarks
    (the leaderboard's per-cell notes and the SpeechEQ choices' own), sorted, each once; and whether one of them sent
    a sampling setting with another value than the slate's."""
    noted = [
        frame[["target", "adaptations"]]
        for frame in (leaderboard, choices)
        if len(frame) and {"target", "adaptations"} <= set(frame.columns)
    ]
    rows = []
    if noted:
        both = pd.concat(noted).dropna(subset=["adaptations"])
        for target, texts in both.groupby("target")["adaptations"]:
            notes = sorted({note for text in texts for note in split_notes(str(text))})
            rows.append(
                {
                    "target": target,
                    "adaptations": join_notes(notes),
                    "sampling_adapted": any(changes_condition(n) for n in notes),
                }
            )
    return pd.DataFrame(rows, columns=["target", "adaptations", "sampling_adapted"])


def speech_half(seq_board: pd.DataFrame, choices: pd.DataFrame) -> pd.DataFrame:
    """Per speech target: the default-condition row of the SEQ leaderboard (accuracies with their intervals,
    SEQ and its cohort, efficiency), the total cost of its calls and its prompt hashes."""
    if seq_board.empty:
        return pd.DataFrame(columns=["target"])
    rows = seq_board[(seq_board["condition"] == SPEECH_CONDITION) & (seq_board["target"] != CHANCE_TARGET)]
    out = pd.DataFrame(
        {
            "target": rows["target"],
            "speech_condition": rows["condition"],
            "speech_input": rows["speech_input"],
            "speech_headline_inference": rows["headline_inference"],
            "speech_n_items": rows["n_items"],
            "speech_seq": rows["seq"],
            "speech_seq_cohort": rows["seq_cohort"],
            "speech_seq_cohort_kind": rows["seq_cohort_kind"],
            "speech_in_seq_cohort": rows["in_seq_cohort"],
            "speech_cost_per_100_queries": rows["cost_per_100_queries"],
            "speech_mean_latency_s": rows["mean_latency_s"],
            "speech_queries": rows["queries"],
            "_speech_is_baseline": rows["is_baseline"],
        }
    )
    for metric in SPEECH_METRICS:
        out[f"speech_{metric}"] = rows[metric]
        out[f"speech_{metric}_ci_low"] = rows[f"{metric}_low"]
        out[f"speech_{metric}_ci_high"] = rows[f"{metric}_high"]
    if len(choices):
        made = choices[~choices["shared_call"].astype(bool)]
        cost = made.groupby("target")["cost_usd"].sum().rename("speech_cost_usd")
        hashes = choices.groupby("target")["prompt_hash"].agg(_joined).rename("speech_prompt_hashes")
        out = out.merge(cost, left_on="target", right_index=True, how="left")
        out = out.merge(hashes, left_on="target", right_index=True, how="left")
    return out


def voice_half(voice_scores: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """Per voice target, over its pools together: each paired metric's voice mean, voice minus text with its 95%
    paired interval, and voice / text (eyt_voice/gap.py on the ChatSEEDs of every pool)."""
    if voice_scores.empty:
        return pd.DataFrame(columns=["target"])
    gap = voice_gap(voice_scores.assign(pool=POOLED), resamples=resamples, seed=seed)
    wide = gap.pivot(index="target", columns="metric")
    out = pd.DataFrame(index=wide.index)
    out["voice_n_paired"] = wide["n_paired"].max(axis=1)
    for m in PAIRED_METRICS:
        for part, column in zip(VOICE_PARTS, ("voice", "delta", "ci_low", "ci_high", "preserve_ratio")):
            out[f"voice_{m}{part}"] = wide[(column, m)] if (column, m) in wide.columns else np.nan
    return out.reset_index()


def build_model_cards(
    slate: Slate,
    *,
    leaderboard: pd.DataFrame,
    intervals: pd.DataFrame,
    scores: pd.DataFrame,
    turns: pd.DataFrame,
    verdict_hashes: pd.DataFrame,
    seq_board: pd.DataFrame,
    choices: pd.DataFrame,
    voice_scores: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per model id that has results in any benchmark, sorted by id, with the contract's columns."""
    eyt = per_pool_eyt(leaderboard, intervals)
    if len(scores):
        eyt = eyt.merge(
            pooled_eyt(scores, turns, resamples=slate.bootstrap_resamples, seed=slate.seed), on="target", how="outer"
        )
        eyt = eyt.merge(eyt_costs(leaderboard, turns, verdict_hashes), on="target", how="left")
    speech = speech_half(seq_board, choices)
    voice = voice_half(
        voice_scores if voice_scores is not None else pd.DataFrame(),
        resamples=slate.bootstrap_resamples,
        seed=slate.seed,
    )
    for half in (eyt, speech, voice):  # an empty half's ids would be float64 (or none), which merge with no text
        half["target"] = half["target"].astype(object) if "target" in half else pd.Series(dtype=object)
    ids = sorted(set(eyt["target"]) | set(speech["target"]) | set(voice["target"]))
    if not ids:  # no model has results yet (every cell failed): the contract's columns, no row
        return pd.DataFrame(columns=[c for c in MODEL_CARD_COLUMNS if c != "created_at"])
    cards = pd.DataFrame({"target": pd.Series(ids, dtype=object)})
    cards = cards.merge(eyt, on="target", how="left").merge(speech, on="target", how="left")
    cards = cards.merge(voice, on="target", how="left")
    cards["has_eyt_bench"] = cards["target"].isin(set(eyt["target"]))
    cards["has_speech_eq"] = cards["target"].isin(set(speech["target"]))
    cards["has_eyt_voice"] = cards["target"].isin(set(voice["target"]))
    refs = {t.id: t for t in slate.targets}
    identity = pd.DataFrame([{"target": t, **_fingerprint(refs.get(t))} for t in ids])
    cards = cards.merge(identity, on="target", how="left", suffixes=("", "_slate"))
    # a target no longer in the slate: baseline as its rows recorded it
    recorded = set(leaderboard.loc[leaderboard["is_baseline"].astype(bool), "target"]) if len(leaderboard) else set()
    if "_speech_is_baseline" in cards:
        recorded |= {t for t, b in zip(cards["target"], cards["_speech_is_baseline"]) if not pd.isna(b) and bool(b)}
    if "is_baseline" not in cards:
        cards["is_baseline"] = np.nan
    cards["is_baseline"] = [
        bool(b) if not pd.isna(b) else t in recorded for t, b in zip(cards["target"], cards["is_baseline"])
    ]
    cards = cards.merge(target_adaptations(leaderboard, choices), on="target", how="left")
    cards["sampling_adapted"] = cards["sampling_adapted"].astype("boolean").fillna(False).astype(bool)
    cards["slate"] = slate.name
    cards["slate_seed"] = slate.seed
    return cards.reindex(columns=[c for c in MODEL_CARD_COLUMNS if c != "created_at"])
