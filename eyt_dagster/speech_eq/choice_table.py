"""One SpeechEQ target's speech.slm_choices table (paper §2.4; docs/speecheq-evaluation.md): every item through
the forced-choice loop (evaluation.py) under each persona condition, every row stamped with what the target
is, and the figures of the calls made for the materialisation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.speech_eq.choice import system_prompt
from eyt_dagster.speech_eq.evaluation import SpeechChooser, evaluate_items
from eyt_dagster.speech_eq.release_format import item_from_rows
from eyt_dagster.speech_eq.settings import SpeechEvaluation, SpeechTarget
from eyt_dagster.speech_eq.table_contracts import SLM_CHOICE_COLUMNS, coerce_slm_choices


@dataclass
class ChoiceTable:
    """A target's slm_choices rows (the table contract's columns and dtypes) and their figures."""

    frame: pd.DataFrame
    metadata: dict[str, object]

    @property
    def failed_calls(self) -> int:
        """Rows whose call never reached the model; a rerun repeats only these (finished calls are cached)."""
        return int(self.frame["error"].notna().sum())


def target_kind(ref: SpeechTarget) -> str:
    """What the target is, for the table: embedded, audio, cascaded-emo_num / cascaded-emo_des, oracle_text."""
    if ref.is_baseline:
        return "embedded"
    return f"cascaded-{ref.cascade.cues}" if ref.speech_input == "cascaded" else ref.speech_input


def clip_analysis_counts(chooser: object) -> dict[str, object]:
    """A cascade's per-clip analyses (transcripts, voice measures, emotion outputs; resources/audio/clip_analysis.py):
    how many clips this step computed and how many it reused from the store, in all and per analysis."""
    counts = getattr(chooser, "clip_analyses", None)
    if counts is None:
        return {}
    per_analysis = {name: dict(entry) for name, entry in counts().items()}
    return {
        "clip_analyses_computed": sum(e["computed"] for e in per_analysis.values()),
        "clip_analyses_reused": sum(e["reused"] for e in per_analysis.values()),
        "clip_analyses": per_analysis,
    }


def choice_table(
    eq_items: pd.DataFrame,
    chooser: SpeechChooser,
    *,
    target: str,
    ref: SpeechTarget,
    evaluation: SpeechEvaluation,
    seed: int,
    prompt_hash: str,
    now: Callable[[], pd.Timestamp],
    on_done: Callable[[int, int], None] | None = None,
) -> ChoiceTable:
    """One row per item x round x condition x option order x inference mode: the option the target chose,
    the correct one, whether the reply parsed, and what the call cost. `eq_items` holds clip paths that can
    be opened; items are asked in dataset_id order, one at a time for an embedded baseline, else up to the
    target's max_concurrency calls at once. `now()` stamps created_at once the choices are in."""
    items = [item_from_rows(row) for row in eq_items.sort_values("dataset_id").to_dict("records")]
    languages = sorted({item.language for item in items}) or [DEFAULT_LANGUAGE]
    if len(languages) > 1:
        raise ValueError(
            f"speech.eq_items holds items in {languages}: one evaluation asks in one language; rebuild the items "
            "with one speech.language"
        )
    rows = evaluate_items(
        items,
        chooser,
        conditions={name: system_prompt(name, languages[0]) for name in evaluation.conditions},
        seed=seed,
        both_orders=evaluation.both_orders,
        inference=evaluation.inference,
        max_workers=1 if ref.is_baseline else ref.max_concurrency,
        on_done=on_done,
        reply_format=evaluation.reply_format,
    )
    df = pd.DataFrame(rows, columns=list(SLM_CHOICE_COLUMNS))
    kind = target_kind(ref)
    # what fed a cascade's emotion cues ('regression:<model>', 'classifier:<model>', 'acoustic'); None otherwise
    cue_source = getattr(chooser, "cue_source", None)
    df = df.assign(
        target=target,
        is_baseline=ref.is_baseline,
        speech_input=kind,
        cue_source=cue_source,
        model=ref.model,
        model_fingerprint=ref.fingerprint(),
        prompt_hash=prompt_hash,
        seed=seed,
        created_at=now(),
    )
    df = coerce_slm_choices(df)
    asked = df[~df["shared_call"]]  # the calls made: a shared round 1 is stored twice but asked once
    metadata = {
        "items": len(items),
        "conditions": ", ".join(evaluation.conditions),
        "kind": kind,
        "cue_source": cue_source or "none",
        "baseline": ref.is_baseline,
        "reply_format": evaluation.reply_format,
        "model": ref.model,
        "queries": len(asked),
        "parse_failures": int(asked["parse_failed"].sum()),
        "calls": int(asked["calls"].sum()),
        "cache_hits": int(asked["cache_hits"].sum()),
        "tokens": int(asked["tokens"].sum()),
        "cost_usd": round(float(asked["cost_usd"].sum()), 6),
        "prompt_hash": prompt_hash,
        **clip_analysis_counts(chooser),
    }
    return ChoiceTable(df, metadata)
