"""Table contracts of the `dialogue` schema, declared once as dagster-pandas DataFrame types.

Dagster checks every asset output against its contract before the IO manager stores it, and the UI shows
each table's columns. Labels must come from the taxonomies; sub-scores from the judge scales.
"""

from __future__ import annotations

from dagster_pandas import PandasColumn, create_dagster_pandas_dataframe_type
from dagster_pandas.constraints import ColumnConstraint, ColumnConstraintViolationException

from eyt_dagster.taxonomy import (
    EMOTIONS,
    EXPLICIT_INTENTS,
    JUDGE_SCALES,
    LATENT_INTENTS,
    POOLS,
    PROGRESS_LABELS,
    SUBSCORE_COLUMNS,
)

ALLOWED_SUBSCORES = sorted({v for scale in JUDGE_SCALES.values() for v in scale})


class InSetColumnConstraint(ColumnConstraint):
    """Every non-missing value is one of `allowed` (for numeric sets, which categorical columns can't do)."""

    def __init__(self, allowed: list[float]) -> None:
        self.allowed = allowed
        super().__init__(
            markdown_description=f"values in {allowed}", error_description=f"values must be one of {allowed}"
        )

    def validate(self, dataframe, column_name):  # noqa: ANN001 - dagster-pandas signature
        column = dataframe[column_name]
        bad = dataframe[column.notna() & ~column.isin(self.allowed)]
        if not bad.empty:
            raise ColumnConstraintViolationException(
                constraint_name=self.name,
                constraint_description=self.error_description,
                column_name=column_name,
                offending_rows=bad,
            )


def _label(name: str, labels: tuple[str, ...]) -> PandasColumn:
    return PandasColumn.categorical_column(name, categories=set(labels), ignore_missing_vals=True)


def _keys(*partition_columns: str) -> list[PandasColumn]:
    columns = []
    for name in partition_columns:
        if name == "pool":
            columns.append(PandasColumn.categorical_column("pool", categories=set(POOLS), non_nullable=True))
        else:
            columns.append(PandasColumn.string_column(name, non_nullable=True))
    return columns


PersonaPoolFrame = create_dagster_pandas_dataframe_type(
    name="PersonaPoolFrame",
    description="dialogue.persona_pool: one row per sampled persona (SPEC §3.1).",
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
    description="dialogue.dialogue_turns: one row per answered turn (Algorithm 1); turn 0 rows are errors.",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("turn", min_value=0, non_nullable=True),
        *(_label(f"{side}_explicit_intent", EXPLICIT_INTENTS) for side in ("gold", "pred")),
        *(_label(f"{side}_latent_intent", LATENT_INTENTS) for side in ("gold", "pred")),
        *(_label(f"{side}_emotion", EMOTIONS) for side in ("gold", "pred")),
        _label("progress", PROGRESS_LABELS),
        PandasColumn.string_column("error"),
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

IntentSimilarityFrame = create_dagster_pandas_dataframe_type(
    name="IntentSimilarityFrame",
    description="dialogue.intent_similarity: per turn, cosine of the intent descriptions (Eq. 1 inputs).",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.string_column("seed_id", non_nullable=True),
        PandasColumn.integer_column("turn", min_value=1, non_nullable=True),
        PandasColumn.numeric_column("cos_gold_pred", min_value=-1.0001, max_value=1.0001, non_nullable=True),
        PandasColumn.numeric_column("cos_pred_final", min_value=-1.0001, max_value=1.0001, non_nullable=True),
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
        PandasColumn.numeric_column("drift", min_value=0.0, max_value=2.0, ignore_missing_vals=True),
        PandasColumn.numeric_column("directional_alignment", min_value=-1.0, max_value=1.0, ignore_missing_vals=True),
        *(PandasColumn.numeric_column(c, **_score) for c in ("satisfaction", "empathy", "persona", "anthropomorphic")),
    ],
)
LeaderboardFrame = create_dagster_pandas_dataframe_type(
    name="LeaderboardFrame",
    description="dialogue.leaderboard: one row per target x pool with the headline metrics (SPEC §3.6).",
    columns=[
        *_keys("target", "pool"),
        PandasColumn.boolean_column("is_baseline", non_nullable=True),
        PandasColumn.integer_column("n_dialogues", min_value=0, non_nullable=True),
        *(PandasColumn.numeric_column(c, **_share) for c in
          ("explicit_acc", "latent_acc", "emotion_acc", "emotion_macro_f1", "ficr")),
        *(PandasColumn.numeric_column(c, **_score) for c in (
            "satisfaction", "empathy", "persona", "anthropomorphic",
            "empathy_unweighted", "persona_unweighted", "anthropomorphic_unweighted")),
        PandasColumn.numeric_column("drift", min_value=0.0, max_value=2.0, ignore_missing_vals=True),
        PandasColumn.numeric_column("mean_turns", min_value=0.0, ignore_missing_vals=True),
    ],
)
