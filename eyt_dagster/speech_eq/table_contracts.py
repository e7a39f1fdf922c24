"""Table contracts of the SpeechEQ evaluation (docs/sql.md): the columns of speech.slm_choices in order, their
dtypes, and the dagster-pandas type Dagster checks every output against."""

from __future__ import annotations

import pandas as pd
from dagster_pandas import PandasColumn, create_dagster_pandas_dataframe_type
from dagster_pandas.constraints import CategoricalColumnConstraint, NonNullableColumnConstraint

from eyt_dagster.speech_eq.conditions import CONDITIONS
from eyt_dagster.speech_eq.protocol import OPTIONS, REPLY_FORMATS
from eyt_dagster.eyt_bench.table_contracts import InSetColumnConstraint

# column -> pandas dtype ("Int64" and "boolean" are nullable: no verdict on a failed call)
SLM_CHOICE_COLUMNS: dict[str, str] = {
    "target": "string", "item_id": "string", "subscale": "string", "composite": "string", "valence": "string",
    "condition": "string", "inference": "string", "order": "string", "round": "int64",
    "option1": "string", "option2": "string", "history_turn4": "string",
    "selected_option": "Int64", "correct_option": "int64", "correct": "boolean", "parse_failed": "bool",
    "shared_call": "bool", "reply_format": "string", "acoustic_profile_1": "string", "acoustic_profile_2": "string",
    "situational_demand": "string", "reasoning": "string", "error": "string",
    "calls": "int64", "cache_hits": "int64", "latency_s": "float64", "tokens_in": "int64", "tokens_out": "int64",
    "tokens": "int64", "cost_usd": "float64",
    "is_baseline": "bool", "speech_input": "string", "cue_source": "string", "model": "string",
    "model_fingerprint": "string",
    "prompt_hash": "string", "seed": "int64", "created_at": "datetime64[ns]",
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
