"""Table contracts of the `speech` schema (docs/sql.md): every table's columns in order with their dtypes
(eyt_dagster/core/storage_types.py maps them to DuckDB and Arrow types), and the dagster-pandas type Dagster
checks every speech.slm_choices output against."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
from dagster_pandas import PandasColumn, create_dagster_pandas_dataframe_type
from dagster_pandas.constraints import CategoricalColumnConstraint, NonNullableColumnConstraint

from eyt_dagster.core.column_constraints import InSetColumnConstraint
from eyt_dagster.speech_eq.conditions import CONDITIONS
from eyt_dagster.speech_eq.contrast import FEATURES
from eyt_dagster.speech_eq.protocol import OPTIONS, REPLY_FORMATS
from eyt_dagster.speech_eq.rank_correlation import CORRELATION_COLUMNS
from eyt_dagster.speech_eq.release_format import COLUMN
from eyt_dagster.speech_eq.seq_tables import BREAKDOWN_COLUMNS, LEADERBOARD_COLUMNS
from eyt_dagster.speech_eq.vocabulary import TURN_SPEAKER

# column -> pandas dtype ("Int64" and "boolean" are nullable: no verdict on a failed call)
SLM_CHOICE_COLUMNS: dict[str, str] = {
    "target": "string",
    "item_id": "string",
    "subscale": "string",
    "composite": "string",
    "valence": "string",
    "condition": "string",
    "inference": "string",
    "order": "string",
    "round": "int64",
    "option1": "string",
    "option2": "string",
    "history_turn4": "string",
    "selected_option": "Int64",
    "correct_option": "int64",
    "correct": "boolean",
    "parse_failed": "bool",
    "shared_call": "bool",
    "reply_format": "string",
    "acoustic_profile_1": "string",
    "acoustic_profile_2": "string",
    "situational_demand": "string",
    "reasoning": "string",
    "error": "string",
    "calls": "int64",
    "cache_hits": "int64",
    "latency_s": "float64",
    "tokens_in": "int64",
    "tokens_out": "int64",
    "tokens": "int64",
    "cost_usd": "float64",
    "reasoning_tokens": "Int64",  # a thinking model's reasoning tokens, part of tokens_out
    "adaptations": "string",  # what the provider's profile or refusals changed in the request (eyt_dagster/core/provider_profiles.py)
    "is_baseline": "bool",
    "speech_input": "string",
    "cue_source": "string",
    "model": "string",
    "model_fingerprint": "string",
    "prompt_hash": "string",
    "seed": "int64",
    "created_at": "datetime64[ns]",
}


def _typed(names: Iterable[str], **dtypes: str) -> dict[str, str]:
    """`names` as text columns unless `dtypes` says otherwise, then created_at."""
    return {**{name: dtypes.get(name, "string") for name in names}, "created_at": "datetime64[ns]"}


def _all(dtype: str, names: Iterable[str]) -> dict[str, str]:
    return dict.fromkeys(names, dtype)


# The build stages (assets/speech_eq/text_stages.py, audio_stages.py), partitioned by subscale. `prompt_hash` is
# NULL for the embedded template generator; voice, strength and duration_s are NULL for imported clips.
SCENARIOS_COLUMNS = _typed(
    ["scenario_id", "subscale", "valence", "scenario_type", "title", "scenario_json", "generator", "prompt_hash"]
)
DIALOGUES_COLUMNS = _typed(
    [
        "scenario_id",
        "subscale",
        "turn",
        "speaker",
        "text",
        "generator",
        "attempt",
        "accepted",
        "plausible_both_tones",
        "validator_note",
        "validator",
        "prompt_hash",
    ],
    turn="int64",
    speaker="int64",
    attempt="Int64",
    accepted="boolean",
    plausible_both_tones="boolean",
)
TONE_INSTRUCTIONS_COLUMNS = _typed(
    [
        "scenario_id",
        "subscale",
        "turn",
        "option_index",
        "persona_kind",
        "attempt",
        "instruction",
        "accepted",
        "rejection_reason",
        "generator",
        "prompt_hash",
    ],
    turn="int64",
    option_index="Int64",
    attempt="Int64",
    accepted="boolean",
)
TONE_SELECTION_COLUMNS = _typed(
    [
        "scenario_id",
        "subscale",
        "turn",
        "resonant_instruction",
        "dissonant_instruction",
        "dissonant_persona",
        "reasoning",
        "judge",
        "resonant_kind",
        "dissonant_kind",
        "options",
        "generator",
        "prompt_hash",
    ],
    turn="int64",
    options="Int64",
)
TTS_CLIPS_COLUMNS = _typed(
    [
        "scenario_id",
        "turn",
        "role",
        "attempt",
        "speaker",
        "voice",
        "text",
        "instruction",
        "strength",
        "engine",
        "duration_s",
        "path",
        "subscale",
    ],
    turn="int64",
    attempt="Int64",
    speaker="Int64",
    strength="float64",
    duration_s="float64",
)
CONTRAST_SCORES_COLUMNS = _typed(
    [
        "scenario_id",
        "turn",
        "attempt",
        "strength",
        "total",
        "passed",
        *(f"points_{f}" for f in FEATURES),
        *(f"gap_{f}" for f in FEATURES),
        "subscale",
    ],
    turn="int64",
    attempt="Int64",
    strength="float64",
    total="Int64",
    passed="boolean",
    **_all("Int64", (f"points_{f}" for f in FEATURES)),
    **_all("float64", (f"gap_{f}" for f in FEATURES)),
)
# eq_items: the item's text, per clip (file-number order) its path and tone, the turn texts, and how each test
# pair scored; eyt_dagster/speech_eq/release_format.py `item_rows` writes it.
EQ_ITEMS_COLUMNS = _typed(
    [
        "dataset_id",
        "subscale",
        "composite",
        "valence",
        "scenario_type",
        "scenario_title",
        "scenario_json",
        "conversation_json",
        *(f"{COLUMN[n]}_{part}" for n in sorted(COLUMN) for part in ("path", "tone")),
        *(f"turn{t}_text" for t in sorted(TURN_SPEAKER)),
        "source",
        "generation_metadata_json",
        "turn4_contrast",
        "turn6_contrast",
    ],
    turn4_contrast="Int64",
    turn6_contrast="Int64",
)
SPEECH_BUILD_REPORT_COLUMNS = _typed(
    [
        "subscale",
        "source",
        "scenarios",
        "items",
        "tones_rejected_bland",
        "pairs_regenerated",
        "pairs_discarded",
        "pairs_below_threshold",
        "skipped_folders",
        "mean_total_passed",
        *(f"mean_gap_{f}" for f in FEATURES),
        "discarded",
    ],
    **_all(
        "Int64",
        (
            "scenarios",
            "items",
            "tones_rejected_bland",
            "pairs_regenerated",
            "pairs_discarded",
            "pairs_below_threshold",
            "skipped_folders",
            "discarded",
        ),
    ),
    **_all("float64", ("mean_total_passed", *(f"mean_gap_{f}" for f in FEATURES))),
)
# The SEQ reports (eyt_dagster/speech_eq/seq_tables.py and rank_correlation.py name their columns): numbers are shares, intervals and
# rates unless listed.
_SEQ_TEXT = {
    "target",
    "condition",
    "speech_input",
    "model",
    "reply_format",
    "headline_inference",
    "seq_cohort",
    "seq_cohort_kind",
    "level",
    "name",
    "display_name",
    "composite",
    "composite_name",
}
_SEQ_TYPES = {
    "is_baseline": "bool",
    "in_seq_cohort": "bool",
    "n_items": "int64",
    "n_error_items": "int64",
    "queries": "int64",
    "n_items_direct": "int64",
}


def _seq(names: Sequence[str]) -> dict[str, str]:
    return _typed(names, **{n: _SEQ_TYPES.get(n, "string" if n in _SEQ_TEXT else "float64") for n in names})


SEQ_LEADERBOARD_COLUMNS = _seq(LEADERBOARD_COLUMNS)
SEQ_BREAKDOWN_COLUMNS = _seq(BREAKDOWN_COLUMNS)
SEQ_HUMAN_ALIGNMENT_COLUMNS = _typed(
    CORRELATION_COLUMNS, n_targets="Int64", rho="float64", p_value="float64", n_scope_items="Int64"
)

# The item folders an import of released items skipped, with why (one row each; none for a generated build).
IMPORT_SKIPS_COLUMNS = _typed(["subscale", "folder", "reason"])

# Every table of the `speech` schema: the warehouse IO manager types these from here.
SPEECH_TABLES: dict[str, dict[str, str]] = {
    "speech.scenarios": SCENARIOS_COLUMNS,
    "speech.dialogues": DIALOGUES_COLUMNS,
    "speech.tone_instructions": TONE_INSTRUCTIONS_COLUMNS,
    "speech.tone_selection": TONE_SELECTION_COLUMNS,
    "speech.tts_clips": TTS_CLIPS_COLUMNS,
    "speech.contrast_scores": CONTRAST_SCORES_COLUMNS,
    "speech.eq_items": EQ_ITEMS_COLUMNS,
    "speech.import_skips": IMPORT_SKIPS_COLUMNS,
    "speech.slm_choices": SLM_CHOICE_COLUMNS,
    "speech.seq_leaderboard": SEQ_LEADERBOARD_COLUMNS,
    "speech.seq_breakdown": SEQ_BREAKDOWN_COLUMNS,
    "speech.seq_human_alignment": SEQ_HUMAN_ALIGNMENT_COLUMNS,
    "speech.speech_build_report": SPEECH_BUILD_REPORT_COLUMNS,
}


def coerce_slm_choices(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with exactly the contract's columns, in order and with their dtypes."""
    out = df.reindex(columns=list(SLM_CHOICE_COLUMNS))
    for column, dtype in SLM_CHOICE_COLUMNS.items():
        out[column] = out[column].astype(dtype)  # "string", not object: an all-missing column stays VARCHAR
    return out


def _in(name: str, values: tuple[str, ...] | list[str], nullable: bool = False) -> PandasColumn:
    """Values from a set, in a pandas "string" column (categorical_column would insist on object dtype)."""
    constraints = [CategoricalColumnConstraint(set(values), ignore_missing_vals=nullable)]
    return PandasColumn(name, constraints=constraints if nullable else [NonNullableColumnConstraint(), *constraints])


SlmChoicesFrame = create_dagster_pandas_dataframe_type(
    name="SlmChoicesFrame",
    description="speech.slm_choices: one row per item x round x target x condition x order x inference.",
    columns=[
        PandasColumn("target", constraints=[NonNullableColumnConstraint()]),
        PandasColumn("item_id", constraints=[NonNullableColumnConstraint()]),
        _in("condition", CONDITIONS),
        _in("inference", ("sequential", "direct")),
        _in("order", ("seeded", "flipped")),
        PandasColumn.integer_column("round", min_value=1, max_value=2, non_nullable=True),
        _in("option1", OPTIONS),
        _in("option2", OPTIONS),
        _in("history_turn4", OPTIONS, nullable=True),
        PandasColumn("selected_option", constraints=[InSetColumnConstraint([1, 2])]),
        PandasColumn("correct_option", constraints=[InSetColumnConstraint([1, 2])]),
        PandasColumn.boolean_column("parse_failed", non_nullable=True),
        PandasColumn.boolean_column("shared_call", non_nullable=True),
        _in("reply_format", REPLY_FORMATS),
        PandasColumn("error"),
    ],
)
