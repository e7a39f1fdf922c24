"""speech.slm_choices: one SpeechEQ target's forced choices on every item (paper §2.4; docs/speecheq-evaluation.md)."""

from functools import lru_cache

import pandas as pd
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, MetadataValue, Output, asset

from assets._output import now_utc, progress_logger, table_output
from assets.speech_eq.partitions import speech_target_partitions
from eyt_dagster.core.prompts import prompt_hash
from eyt_dagster.slate import TargetRef
from eyt_dagster.speech_eq.choice import system_prompt
from eyt_dagster.speech_eq.evaluation import evaluate_items
from eyt_dagster.speech_eq.prompts import SPEECH_EVAL_PROMPT_KEYS, speech_eval_prompts_path
from eyt_dagster.speech_eq.release_format import item_from_rows
from eyt_dagster.speech_eq.table_contracts import SLM_CHOICE_COLUMNS, SlmChoicesFrame, coerce_slm_choices
from resources.data_paths import resolve_path_columns
from resources.model_access import ModelAccess
from resources.speech_roles import SpeechRoles

LOGIC_VERSION = "3"  # 2: the cue_source column; 3: reply formats (paper / short), reply_format and profile columns


def target_kind(ref: TargetRef) -> str:
    """What the target is, for the table: embedded, audio, cascaded-emo_num / cascaded-emo_des, oracle_text."""
    if ref.is_baseline:
        return "embedded"
    return f"cascaded-{ref.cascade.cues}" if ref.speech_input == "cascaded" else ref.speech_input


@lru_cache(maxsize=1)
def eval_prompt_hash() -> str:
    return prompt_hash(*SPEECH_EVAL_PROMPT_KEYS, path=speech_eval_prompts_path())


@asset(
    key_prefix=["speech"],
    group_name="speech",
    partitions_def=speech_target_partitions,
    ins={"eq_items": AssetIn(key=["speech", "eq_items"], partition_mapping=AllPartitionMapping())},
    dagster_type=SlmChoicesFrame,
    metadata={"partition_expr": "target"},
    code_version=f"{LOGIC_VERSION}-{eval_prompt_hash()}",
)
def slm_choices(context: AssetExecutionContext, eyt: ModelAccess, eq_items: pd.DataFrame) -> Output[pd.DataFrame]:
    """One row per item x round x condition x option order x inference mode: the option the target chose,
    the correct one, whether the reply parsed, and what the call cost."""
    target_id, slate = context.partition_key, eyt.slate
    ref, settings = slate.target(target_id), slate.speech.evaluation
    chooser = SpeechRoles(eyt).speech_target(target_id, context.run_id)
    clips = resolve_path_columns(eq_items, eyt.data_dir)  # stored relative to the data directory
    items = [item_from_rows(row) for row in clips.sort_values("dataset_id").to_dict("records")]
    conditions = {name: system_prompt(name) for name in settings.conditions}

    report = progress_logger(
        context, lambda done, total: f"{target_id}: {done} of {total} item x condition trajectories answered"
    )

    rows = evaluate_items(
        items,
        chooser,
        conditions=conditions,
        seed=slate.seed,
        both_orders=settings.both_orders,
        inference=settings.inference,
        max_workers=1 if ref.is_baseline else ref.max_concurrency,
        on_done=report,
        reply_format=settings.reply_format,
    )
    df = pd.DataFrame(rows, columns=list(SLM_CHOICE_COLUMNS))
    kind = target_kind(ref)
    # what fed a cascade's emotion cues ('regression:<model>', 'classifier:<model>', 'acoustic'); None otherwise
    cue_source = getattr(chooser, "cue_source", None)
    df = df.assign(
        target=target_id,
        is_baseline=ref.is_baseline,
        speech_input=kind,
        cue_source=cue_source,
        model=ref.model,
        model_fingerprint=ref.fingerprint(),
        prompt_hash=eval_prompt_hash(),
        seed=slate.seed,
        created_at=now_utc(),
    )
    df = coerce_slm_choices(df)
    asked = df[~df["shared_call"]]
    errors = int(df["error"].notna().sum())
    if errors:
        context.log.warning(f"{target_id}: {errors} call(s) failed; rerun to retry them (finished calls are cached)")
    return table_output(
        df,
        items=len(items),
        conditions=", ".join(settings.conditions),
        kind=kind,
        cue_source=cue_source or "none",
        baseline=ref.is_baseline,
        reply_format=settings.reply_format,
        model=ref.model,
        queries=len(asked),
        parse_failures=int(asked["parse_failed"].sum()),
        calls=int(asked["calls"].sum()),
        cache_hits=int(asked["cache_hits"].sum()),
        tokens=int(asked["tokens"].sum()),
        cost_usd=round(float(asked["cost_usd"].sum()), 6),
        prompt_hash=eval_prompt_hash(),
        **clip_analysis_metadata(chooser),
    )


def clip_analysis_metadata(chooser: object) -> dict:
    """A cascade's per-clip analyses (transcripts, voice measures, emotion outputs; resources/clip_analysis.py):
    how many clips this step computed and how many it reused from the store, in all and per analysis."""
    counts = getattr(chooser, "clip_analyses", None)
    if counts is None:
        return {}
    per_analysis = {name: dict(entry) for name, entry in counts().items()}
    return {
        "clip_analyses_computed": sum(e["computed"] for e in per_analysis.values()),
        "clip_analyses_reused": sum(e["reused"] for e in per_analysis.values()),
        "clip_analyses": MetadataValue.json(per_analysis),
    }
