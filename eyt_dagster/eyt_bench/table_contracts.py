"""Table contracts of the `dialogue` schema, declared once: each table's columns with their dtypes (the
warehouse creates and casts the table from these; eyt_dagster/core/storage_types.py maps them to DuckDB and Arrow
types), and a dagster-pandas DataFrame type with the value constraints.

Dagster checks every asset output against its contract before the IO manager stores it, and the UI shows
each table's columns. Labels must come from the taxonomies; sub-scores from the judge scales.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
from dagster_pandas import PandasColumn, create_dagster_pandas_dataframe_type

from eyt_dagster.core.column_constraints import InSetColumnConstraint
from eyt_dagster.core.errors import FAILURE_KINDS
from eyt_dagster.core.storage_types import Columns, conform
from eyt_dagster.eyt_bench.calibration import ABLATION_COLUMNS
from eyt_dagster.eyt_bench.dialogue_loop import DIALOGUE_ROLES
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS
from eyt_dagster.eyt_bench.encoder_calibration import DRIFT_MAX
from eyt_dagster.eyt_bench.table_rows import (
    FINAL_COLUMNS,
    PERSONA_COLUMNS,
    SEED_COLUMNS,
    STAT_FIELDS,
    TURN_COLUMNS,
    VERDICT_COLUMNS,
)
from eyt_dagster.eyt_bench.taxonomy import (
    EMOTIONS,
    EXPLICIT_INTENTS,
    JUDGE_SCALES,
    LATENT_INTENTS,
    POOLS,
    PROGRESS_LABELS,
    SUBSCORE_COLUMNS,
)

ALLOWED_SUBSCORES = sorted({v for scale in JUDGE_SCALES.values() for v in scale})


TEXT_DTYPES = frozenset({"object", "string", "category"})  # conformed frames hold text as pandas "string"


def _label(name: str, labels: tuple[str, ...]) -> PandasColumn:
    return PandasColumn.categorical_column(name, categories=set(labels), of_types=TEXT_DTYPES, ignore_missing_vals=True)


def _keys(*partition_columns: str) -> list[PandasColumn]:
    columns = []
    for name in partition_columns:
        if name == "pool":
            columns.append(
                PandasColumn.categorical_column("pool", categories=set(POOLS), of_types=TEXT_DTYPES, non_nullable=True)
            )
        else:
            columns.append(PandasColumn.string_column(name, non_nullable=True))
    return columns


# Column dtypes of every dialogue table, in table order (pandas dtypes; see eyt_dagster/core/storage_types.py).
def _text(names: Iterable[str], **dtypes: str) -> dict[str, str]:
    """`names` as text columns unless `dtypes` says otherwise."""
    return {name: dtypes.get(name, "string") for name in names}


STAT_DTYPES = {"cost_usd": "float64", "latency_s": "float64", "adaptations": "string"}  # the others count: Int64


def _stats(prefix: str) -> dict[str, str]:
    return {f"{prefix}{field}": STAT_DTYPES.get(field, "Int64") for field in STAT_FIELDS}


_CREATED = {"created_at": "datetime64[ns]"}
_PROVENANCE = {"prompt_hash": "string", "slate_seed": "Int64", **_CREATED}
_SUBSCORES = {c: "float64" for c in SUBSCORE_COLUMNS}

PERSONA_POOL_COLUMNS: Columns = {**_text(PERSONA_COLUMNS), "sample_rank": "Int64", **_CREATED}
CHAT_SEEDS_COLUMNS: Columns = {
    **_text(SEED_COLUMNS),
    "error": "string",
    "raw_reply": "string",
    **_stats("simulator_"),
    "simulator": "string",
    **_PROVENANCE,
}
DIALOGUE_TURNS_COLUMNS: Columns = {
    **_text(TURN_COLUMNS, turn="int64", complete="boolean"),
    **_stats("target_"),
    **_stats("simulator_"),
    "simulator": "string",
    "target_model": "string",
    **_PROVENANCE,
}
JUDGE_VERDICTS_COLUMNS: Columns = {
    **_text(VERDICT_COLUMNS, turn="int64", **_SUBSCORES),
    **_stats("judge_"),
    "judge_model": "string",
    **_PROVENANCE,
}
FINAL_VERDICTS_COLUMNS: Columns = {
    **_text(FINAL_COLUMNS, completed="boolean", satisfaction="Int64"),
    **_stats("judge_"),
    "judge_model": "string",
    **_PROVENANCE,
}
INTENT_SIMILARITY_COLUMNS: Columns = {
    **_text(["target", "pool", "seed_id"]),
    "turn": "int64",
    "cos_gold_pred": "float64",
    "cos_pred_final": "float64",
    "embedding_model": "string",
    **_CREATED,
}
SIMULATOR_AUDIT_COLUMNS: Columns = {
    **_text(["target", "pool", "seed_id"]),
    "turn": "int64",
    "simulator": "string",
    "language": "string",  # the pool's: which statements the utterances were compared with
    "leak_cosine": "float64",
    "leak_overlap": "float64",
    **{flag: "bool" for flag in ("latent_leak", "role_flip", "repetition", "empty_turn", "early_end")},
    # the optional model check: null when the slate names no simulator audit model, or its call failed
    "model_leak": "boolean",
    "model_role_flip": "boolean",
    "model_reason": "string",
    "model_error": "string",
    "audit_model": "string",
    "audit_prompt_hash": "string",
    **_stats("audit_"),
    "simulator_flags": "string",
    "flagged": "bool",
    "embedding_model": "string",
    **_CREATED,
}
DIALOGUE_SCORES_COLUMNS: Columns = {
    **_text(["target", "pool", "seed_id"]),
    "n_turns": "int64",
    **{f"{short}_correct": "Int64" for short in ("explicit", "latent", "emotion")},
    "drift": "float64",
    "directional_alignment": "float64",
    "completed": "boolean",
    "satisfaction": "float64",
    **{d: "float64" for d in DIMENSIONS},
    **{f"{d}_{part}": "float64" for d in DIMENSIONS for part in ("sum", "early", "late")},
    "n_judged_turns": "int64",
    "n_failed_verdicts": "int64",
    "n_failed_final_verdicts": "int64",
    "alpha": "float64",
    "judge_combine": "string",
    **_CREATED,
}
# The noise floor (eyt_bench/repeats.py, noise_floor.py): repeated plays and verdicts of a cell, and what they show.
REPEAT_DIALOGUES_COLUMNS: Columns = {**DIALOGUE_TURNS_COLUMNS, "repeat": "Int64", "sample_seed": "Int64"}
REPEAT_SCORES_COLUMNS: Columns = {
    **DIALOGUE_SCORES_COLUMNS,
    **{name: "Int64" for name in ("repeat", "judge_repeat", "sample_seed", "judge_sample_seed")},
}
NOISE_FLOOR_COLUMNS: Columns = {
    **_text(["target", "pool", "metric"]),
    **{name: "Int64" for name in ("repeats", "judge_repeats", "n_seeds")},
    **{
        name: "float64"
        for name in (
            "mean",
            "sd_between",
            "sd_within",
            "sd_judge",
            "share_between",
            "share_within",
            "share_judge",
            "spread",
            "rerun_sd",
        )
    },
    "is_baseline": "bool",
    "self_preference_risk": "bool",
    **_CREATED,
}
PASS_K_COLUMNS: Columns = {
    **_text(["target", "pool"]),
    **{name: "Int64" for name in ("k", "repeats", "n_seeds")},
    "pass_k": "float64",
    "is_baseline": "bool",
    "self_preference_risk": "bool",
    **_CREATED,
}
_HEADLINE_FLOATS = (
    "explicit_acc",
    "latent_acc",
    "emotion_acc",
    "emotion_macro_f1",
    "drift",
    "ficr",
    "satisfaction",
    *DIMENSIONS,
    *(f"{d}_unweighted" for d in DIMENSIONS),
    "mean_turns",
)
LEADERBOARD_COLUMNS: Columns = {
    **_text(["target", "pool", "language", "family"]),
    "thinking": "boolean",
    "is_baseline": "bool",
    "target_kind": "string",
    "in_slate": "bool",
    "self_preference_risk": "bool",
    "judges": "string",
    "judge_combine": "string",
    "n_dialogues": "int64",
    "n_errors": "int64",
    "failures": "string",
    **{c: "float64" for c in _HEADLINE_FLOATS},
    **{
        f"{role}_{what}": "Int64" if what == "tokens" else "float64"
        for role in ("simulator", "target", "judge")
        for what in ("tokens", "cost_usd")
    },
    # how the target's replies came to be: text replies cut at max_tokens, and what its provider's profile or refusals
    # changed in its requests (sampling_adapted: a sampling setting sent with another value than the slate's)
    "cut_replies": "Int64",
    "adaptations": "string",
    "sampling_adapted": "boolean",
    "simulator_flag_rate": "float64",  # share of the cell's audited dialogues the simulator audit flagged
    # language consistency: mean share of the cell's replies / simulator turns in the pool's language
    "reply_language_share": "float64",
    "user_language_share": "float64",
    "alpha": "float64",
    "slate": "string",
    **_CREATED,
}
# The report tables (assets/eyt_bench/eyt_analysis.py, judge_calibration.py). A target-level report ends with the
# baseline flags (eyt_dagster/core/baseline_flags.py) and created_at; an empty report has the same columns.
_FLAGS = {"is_baseline": "bool", "self_preference_risk": "bool"}


def _floats(*names: str) -> dict[str, str]:
    return {name: "float64" for name in names}


LEADERBOARD_INTERVALS_COLUMNS: Columns = {
    **_text(["target", "pool", "metric"]),
    **_floats("value", "ci_low", "ci_high"),
    "n_dialogues": "Int64",
    "resamples": "Int64",
    "seed": "Int64",  # the bootstrap's seed (the slate's), so an interval can be drawn again
    **_FLAGS,
    **_CREATED,
}
PAIRWISE_COMPARISONS_COLUMNS: Columns = {
    **_text(["pool", "metric", "target_a", "target_b"]),
    "n_paired": "Int64",
    **_floats("mean_a", "mean_b", "diff", "ci_low", "ci_high"),
    "excludes_zero": "boolean",
    **_floats("se", "p_value", "p_adjusted"),
    "significant_adjusted": "boolean",
    "mde_80": "float64",
    "is_baseline_pair": "bool",
    "self_preference_risk": "bool",
    **_CREATED,
}
RANK_INTERVALS_COLUMNS: Columns = {
    **_text(["pool", "metric", "target"]),
    "n_dialogues": "Int64",
    "n_targets": "Int64",
    "value": "float64",
    "rank": "Int64",
    **_floats("rank_low", "rank_high"),
    "resamples": "Int64",
    **_FLAGS,
    **_CREATED,
}
# Rankings under correction (eyt_bench/corrected_rankings.py): the judge-only ranks and pairs beside the ones the
# prediction-powered estimates of dialogue.judge_corrected give, for every pool and metric all of whose targets
# show a corrected figure.
CORRECTED_RANK_INTERVALS_COLUMNS: Columns = {
    **_text(["pool", "metric", "target"]),
    "n_labelled": "Int64",
    "judge_rank": "Int64",
    **_floats("judge_rank_low", "judge_rank_high", "corrected_mean", "corrected_se"),
    "corrected_rank": "Int64",
    **_floats("corrected_rank_low", "corrected_rank_high"),
    "rank_changed": "bool",
    "resamples": "Int64",
    **_FLAGS,
    **_CREATED,
}
CORRECTED_PAIRWISE_COLUMNS: Columns = {
    **_text(["pool", "metric", "target_a", "target_b"]),
    **_floats("judge_diff", "judge_low", "judge_high"),
    "judge_significant": "bool",
    "judge_verdict": "string",
    **_floats("corrected_diff", "corrected_se", "corrected_low", "corrected_high", "corrected_p"),
    "corrected_p_adjusted": "float64",
    "corrected_significant": "bool",
    "corrected_verdict": "string",
    "changed": "bool",
    "is_baseline_pair": "bool",
    "self_preference_risk": "bool",
    **_CREATED,
}
SEQUENTIAL_DECISIONS_COLUMNS: Columns = {
    **_text(["pool", "metric", "target_a", "target_b", "verdict"]),
    "decided_items": "Int64",
    "decided_early": "bool",
    "undecided_at_n": "bool",
    "n_paired": "Int64",
    **_floats("diff", "ci_low", "ci_high", "margin"),
    **{c: "Int64" for c in ("played_a", "played_b", "n_total")},
    "is_baseline_pair": "bool",
    **_CREATED,
}
SEQUENTIAL_SAVINGS_COLUMNS: Columns = {
    **_text(["target", "pool"]),
    **{c: "Int64" for c in ("played", "n_total", "not_played")},
    **_floats("spent_usd", "saved_usd_estimate", "saved_calls_estimate"),
    **_FLAGS,
    **_CREATED,
}
SIMULATOR_AUDIT_EFFECT_COLUMNS: Columns = {
    **_text(["pool", "metric", "target"]),
    "n_dialogues": "Int64",
    "n_flagged": "Int64",
    **_floats("flag_rate", "value_all", "value_unflagged"),
    "rank_all": "Int64",
    "rank_unflagged": "Int64",
    "rank_changed": "boolean",
    **_FLAGS,
    **_CREATED,
}
ALPHA_SENSITIVITY_COLUMNS: Columns = {
    **_text(["target", "pool", "dimension"]),
    **_floats("alpha", "weighted", "unweighted", "early", "late", "warmup_delta"),
    "rank_flip": "boolean",
    **_FLAGS,
    **_CREATED,
}
TURN_CURVES_COLUMNS: Columns = {
    **_text(["target", "pool", "dimension"]),
    "turn": "int64",
    "mean_score": "float64",
    "n": "Int64",
    **_FLAGS,
    **_CREATED,
}
TRAJECTORY_COLUMNS: Columns = {
    **_text(["target", "pool"]),
    "n_dialogues": "Int64",
    **_floats("drift", "directional_alignment", "ficr", "satisfaction", "mean_turns"),
    **_FLAGS,
    **_CREATED,
}
PERSONA_SOURCE_COMPARISON_COLUMNS: Columns = {  # one column per pool, named after it
    **_text(["family", "metric"]),
    **_floats(*POOLS, "shift"),
    "n_targets": "Int64",
    "is_baseline_family": "bool",
    **_CREATED,
}
THINKING_ABLATION_COLUMNS: Columns = {  # the flags are those of think_target
    **_text(["pair", "think_target", "non_think_target", "pool", "metric"]),
    **_floats("think", "non_think", "delta"),
    "highlighted": "boolean",
    **_FLAGS,
    **_CREATED,
}
JUDGE_AGREEMENT_COLUMNS: Columns = {
    "measure": "string",
    "n_judges": "Int64",
    "n_units": "Int64",
    **_floats("alpha_ordinal", "alpha_interval", "unanimous_share", "alpha_nominal"),
    "judges": "string",
    **_CREATED,
}
CROSS_JUDGE_ABLATION_COLUMNS: Columns = {
    **_text(
        ABLATION_COLUMNS,
        n_dialogues="Int64",
        n_targets="Int64",
        **_floats("primary", "replacement", "delta", "mean_abs_delta", "kendall_tau", "spearman_rho"),
    ),
    "primary_judges": "string",
    "replacement_judge": "string",
    **_CREATED,
}
HUMAN_ANNOTATIONS_COLUMNS: Columns = {
    # the annotation CSV's columns (format: eyt_bench/human_alignment.py), then the sheet an imported label came
    # from (eyt_bench/annotation_import.py; null for the CSV's rows) and the file each row came from
    **_text(["annotator", "target", "pool", "seed_id", "turn", "dimension", "score"], turn="int64", score="float64"),
    "sheet": "string",
    "source_file": "string",
    **_CREATED,
}
HUMAN_ALIGNMENT_COLUMNS: Columns = {
    "dimension": "string",
    "n_cells": "Int64",
    "n_annotations": "Int64",
    "n_missing": "Int64",
    **_floats(
        "pearson_r",
        "spearman_rho",
        "bias_0_100",
        "qwk_judge_human",
        "qwk_human_human",
        "krippendorff_alpha_ordinal",
        "within_1",
        "same_bucket",
        "lenience_early",
        "lenience_late",
        "lenience_late_minus_early",
    ),
    "judges": "string",
    **_CREATED,
}
# judge-made headline numbers corrected by human labels (eyt_bench/judge_correction.py): per cell x metric
JUDGE_CORRECTED_COLUMNS: Columns = {
    **_text(["target", "pool", "metric"]),
    **{name: "Int64" for name in ("n_dialogues", "n_labelled", "n_annotators")},
    **_floats(
        "annotator_alpha",
        "judge_mean",
        "judge_low",
        "judge_high",
        "people_mean",
        "people_low",
        "people_high",
        "ppi_lambda",
        "corrected_mean",
        "corrected_se",
        "corrected_low",
        "corrected_high",
        "effective_n",
    ),
    "shown": "string",
    **_floats("shown_mean", "shown_low", "shown_high"),
    "why": "string",
    **_FLAGS,
    **_CREATED,
}
LANGUAGE_CONSISTENCY_COLUMNS: Columns = {
    **_text(["target", "pool", "seed_id", "pool_language"]),
    "turns": "int64",
    **{
        f"{side}_{what}": "int64"
        for side in ("reply", "user")
        for what in ("in_language", "other_language", "undetermined")
    },
    **_floats("reply_language_share", "user_language_share"),
    "first_switch_turn": "Int64",
    **_CREATED,
}
# Every table of the `dialogue` schema with a contract: the warehouse IO manager types these from here.
DIALOGUE_TABLES: dict[str, Columns] = {
    "dialogue.persona_pool": PERSONA_POOL_COLUMNS,
    "dialogue.chat_seeds": CHAT_SEEDS_COLUMNS,
    "dialogue.dialogue_turns": DIALOGUE_TURNS_COLUMNS,
    "dialogue.judge_verdicts": JUDGE_VERDICTS_COLUMNS,
    "dialogue.final_intent_verdicts": FINAL_VERDICTS_COLUMNS,
    "dialogue.intent_similarity": INTENT_SIMILARITY_COLUMNS,
    "dialogue.simulator_audit": SIMULATOR_AUDIT_COLUMNS,
    "dialogue.language_consistency": LANGUAGE_CONSISTENCY_COLUMNS,
    "dialogue.dialogue_scores": DIALOGUE_SCORES_COLUMNS,
    "dialogue.repeat_dialogues": REPEAT_DIALOGUES_COLUMNS,
    "dialogue.repeat_scores": REPEAT_SCORES_COLUMNS,
    "dialogue.noise_floor": NOISE_FLOOR_COLUMNS,
    "dialogue.pass_k": PASS_K_COLUMNS,
    "dialogue.leaderboard": LEADERBOARD_COLUMNS,
    "dialogue.cross_judge_verdicts": JUDGE_VERDICTS_COLUMNS,
    "dialogue.cross_judge_final_verdicts": FINAL_VERDICTS_COLUMNS,
    "dialogue.leaderboard_intervals": LEADERBOARD_INTERVALS_COLUMNS,
    "dialogue.pairwise_comparisons": PAIRWISE_COMPARISONS_COLUMNS,
    "dialogue.rank_intervals": RANK_INTERVALS_COLUMNS,
    "dialogue.corrected_rank_intervals": CORRECTED_RANK_INTERVALS_COLUMNS,
    "dialogue.corrected_pairwise": CORRECTED_PAIRWISE_COLUMNS,
    "dialogue.sequential_decisions": SEQUENTIAL_DECISIONS_COLUMNS,
    "dialogue.sequential_savings": SEQUENTIAL_SAVINGS_COLUMNS,
    "dialogue.simulator_audit_effect": SIMULATOR_AUDIT_EFFECT_COLUMNS,
    "dialogue.alpha_sensitivity": ALPHA_SENSITIVITY_COLUMNS,
    "dialogue.turn_curves": TURN_CURVES_COLUMNS,
    "dialogue.trajectory": TRAJECTORY_COLUMNS,
    "dialogue.persona_source_comparison": PERSONA_SOURCE_COMPARISON_COLUMNS,
    "dialogue.thinking_ablation": THINKING_ABLATION_COLUMNS,
    "dialogue.judge_agreement": JUDGE_AGREEMENT_COLUMNS,
    "dialogue.cross_judge_ablation": CROSS_JUDGE_ABLATION_COLUMNS,
    "dialogue.human_annotations": HUMAN_ANNOTATIONS_COLUMNS,
    "dialogue.human_alignment": HUMAN_ALIGNMENT_COLUMNS,
    "dialogue.judge_corrected": JUDGE_CORRECTED_COLUMNS,
}


def conform_table(df: pd.DataFrame, table: str) -> pd.DataFrame:
    """`df` cast to the contract of `table` (e.g. "dialogue.dialogue_turns"): its columns, order and dtypes."""
    return conform(df, DIALOGUE_TABLES[table], table)


PersonaPoolFrame = create_dagster_pandas_dataframe_type(
    name="PersonaPoolFrame",
    description="dialogue.persona_pool: one row per sampled persona.",
    columns=[
        *_keys("pool"),
        PandasColumn.string_column("persona_id", non_nullable=True),
        PandasColumn.string_column("persona_text", non_nullable=True),
        PandasColumn.string_column("attributes"),
        PandasColumn.string_column("topic_tags"),
    ],
)

ChatSeedsFrame = create_dagster_pandas_dataframe_type(
    name="ChatSeedsFrame",
    description="dialogue.chat_seeds: one ChatSEED per persona; rows with `error` are retried next run.",
    columns=[
        *_keys("pool"),
        PandasColumn.string_column("seed_id", non_nullable=True, unique=True),
        _label("initial_emotion", EMOTIONS),
        _label("initial_explicit_intent", EXPLICIT_INTENTS),
        _label("initial_latent_intent", LATENT_INTENTS),
        PandasColumn.string_column("final_intent"),
        PandasColumn.string_column("error"),
    ],
)

DialogueTurnsFrame = create_dagster_pandas_dataframe_type(
    name="DialogueTurnsFrame",
    description="dialogue.dialogue_turns: one row per answered turn (Algorithm 1). A dialogue whose call failed "
    "keeps its answered turns with complete = false, plus an error row with turn 0.",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("turn", min_value=0, non_nullable=True),
        *(_label(f"{side}_explicit_intent", EXPLICIT_INTENTS) for side in ("gold", "pred")),
        *(_label(f"{side}_latent_intent", LATENT_INTENTS) for side in ("gold", "pred")),
        *(_label(f"{side}_emotion", EMOTIONS) for side in ("gold", "pred")),
        _label("progress", PROGRESS_LABELS),
        PandasColumn.string_column("error"),
        _label("error_role", DIALOGUE_ROLES),
        _label("error_kind", tuple(FAILURE_KINDS)),
        PandasColumn.boolean_column("complete", non_nullable=True),
    ],
)

JudgeVerdictsFrame = create_dagster_pandas_dataframe_type(
    name="JudgeVerdictsFrame",
    description="dialogue.judge_verdicts: one row per turn per judge, 15 sub-indicators (paper §3.5.3).",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("turn", min_value=1, non_nullable=True),
        PandasColumn.string_column("judge", non_nullable=True),
        *(PandasColumn(c, constraints=[InSetColumnConstraint(ALLOWED_SUBSCORES)]) for c in SUBSCORE_COLUMNS),
        PandasColumn.string_column("error"),
    ],
)

FinalIntentVerdictsFrame = create_dagster_pandas_dataframe_type(
    name="FinalIntentVerdictsFrame",
    description="dialogue.final_intent_verdicts: one row per dialogue per judge (completion, satisfaction 1-5).",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.string_column("judge", non_nullable=True),
        PandasColumn.numeric_column("satisfaction", min_value=1, max_value=5, ignore_missing_vals=True),
        PandasColumn.string_column("error"),
    ],
)

LanguageConsistencyFrame = create_dagster_pandas_dataframe_type(
    name="LanguageConsistencyFrame",
    description="dialogue.language_consistency: per finished dialogue, its replies and turns in the pool's language.",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.numeric_column("reply_language_share", min_value=0.0, max_value=1.0, ignore_missing_vals=True),
        PandasColumn.numeric_column("user_language_share", min_value=0.0, max_value=1.0, ignore_missing_vals=True),
    ],
)

SimulatorAuditFrame = create_dagster_pandas_dataframe_type(
    name="SimulatorAuditFrame",
    description="dialogue.simulator_audit: per simulator turn, the audit's checks; per dialogue its flags.",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("turn", min_value=1, non_nullable=True),
        PandasColumn.boolean_column("flagged", non_nullable=True),
    ],
)
IntentSimilarityFrame = create_dagster_pandas_dataframe_type(
    name="IntentSimilarityFrame",
    description="dialogue.intent_similarity: per turn, cosine of the intent descriptions (Eq. 1 inputs).",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("turn", min_value=1, non_nullable=True),
        PandasColumn.numeric_column("cos_gold_pred", min_value=-1.0, max_value=1.0, non_nullable=True),
        PandasColumn.numeric_column("cos_pred_final", min_value=-1.0, max_value=1.0, non_nullable=True),
    ],
)

_share = dict(min_value=0.0, max_value=1.0, ignore_missing_vals=True)
_score = dict(min_value=0.0, max_value=100.0, ignore_missing_vals=True)

DialogueScoresFrame = create_dagster_pandas_dataframe_type(
    name="DialogueScoresFrame",
    description="dialogue.dialogue_scores: one row per finished dialogue with every per-dialogue metric.",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("n_turns", min_value=1, non_nullable=True),
        *(
            PandasColumn.integer_column(c, min_value=0, non_nullable=True)
            for c in ("n_judged_turns", "n_failed_verdicts", "n_failed_final_verdicts")
        ),
        PandasColumn.numeric_column("drift", min_value=0.0, max_value=DRIFT_MAX, ignore_missing_vals=True),
        PandasColumn.numeric_column("directional_alignment", min_value=-1.0, max_value=1.0, ignore_missing_vals=True),
        *(PandasColumn.numeric_column(c, **_score) for c in ("satisfaction", "empathy", "persona", "anthropomorphic")),
    ],
)
LeaderboardFrame = create_dagster_pandas_dataframe_type(
    name="LeaderboardFrame",
    description="dialogue.leaderboard: one row per target x pool with the headline metrics.",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.boolean_column("is_baseline", non_nullable=True),
        PandasColumn.integer_column("n_dialogues", min_value=0, non_nullable=True),
        *(
            PandasColumn.numeric_column(c, **_share)
            for c in ("explicit_acc", "latent_acc", "emotion_acc", "emotion_macro_f1", "ficr")
        ),
        *(
            PandasColumn.numeric_column(c, **_score)
            for c in (
                "satisfaction",
                "empathy",
                "persona",
                "anthropomorphic",
                "empathy_unweighted",
                "persona_unweighted",
                "anthropomorphic_unweighted",
            )
        ),
        PandasColumn.numeric_column("drift", min_value=0.0, max_value=DRIFT_MAX, ignore_missing_vals=True),
        PandasColumn.numeric_column("mean_turns", min_value=0.0, ignore_missing_vals=True),
    ],
)
