"""language_consistency: per finished dialogue of a cell, the share of the target's replies and of the simulator's
turns written in the pool's language (eyt_dagster/eyt_bench/language_consistency.py; the detector is py3langid,
resources/text/language_id.py). The leaderboard shows each cell's mean beside its other metrics."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_of, table_output
from assets.eyt_bench.partitions import target_pool_partitions
from eyt_dagster.eyt_bench.language_consistency import cell_language_consistency, dialogue_language_consistency
from eyt_dagster.eyt_bench.table_contracts import LanguageConsistencyFrame, conform_table
from resources.models.model_access import SlateAccess
from resources.text.language_id import detect

LOGIC_VERSION = "1"


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={"dialogue_turns": AssetIn(key=["dialogue", "dialogue_turns"])},
    dagster_type=LanguageConsistencyFrame,
    metadata={"partition_expr": {"target": "target", "pool": "pool"}},
    code_version=LOGIC_VERSION,
)
def language_consistency(
    context: AssetExecutionContext, slate: SlateAccess, dialogue_turns: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Per finished dialogue: its replies and simulator turns in the pool's language, in another one and undetermined,
    the two shares, and the first turn the target answered in another language."""
    pool = context.partition_key.keys_by_dimension["pool"]
    language = slate.slate.pool_language(pool)
    df = dialogue_language_consistency(dialogue_turns, language, detect)
    df["created_at"] = now_utc()
    cell = cell_language_consistency(df)
    summary = cell.iloc[0] if len(cell) else None
    return table_output(
        conform_table(df, table_of(context)),
        pool_language=language,
        dialogues=len(df),
        reply_language_share=float(summary["reply_language_share"]) if summary is not None else float("nan"),
        user_language_share=float(summary["user_language_share"]) if summary is not None else float("nan"),
        dialogues_switched=int(summary["dialogues_switched"]) if summary is not None else 0,
    )
