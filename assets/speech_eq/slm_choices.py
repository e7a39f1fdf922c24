"""speech.slm_choices: one SpeechEQ target's forced choices on every item (paper §2.4; docs/speecheq-evaluation.md)."""

from functools import lru_cache

import pandas as pd
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, table_output
from assets._progress import step_progress
from assets.speech_eq.partitions import speech_target_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.core.prompts import prompt_hash
from eyt_dagster.speech_eq.choice_table import choice_table
from eyt_dagster.speech_eq.prompts import SPEECH_EVAL_PROMPT_KEYS, speech_eval_prompts_path
from eyt_dagster.speech_eq.table_contracts import SlmChoicesFrame
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.speech_roles import SpeechRoles
from resources.storage.data_paths import resolve_path_columns

LOGIC_VERSION = "4"  # 2: the cue_source column; 3: reply formats (paper / short), reply_format and profile columns; 4: reasoning_tokens, adaptations


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
def slm_choices(
    context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess, eq_items: pd.DataFrame
) -> Output[pd.DataFrame]:
    """One row per item x round x condition x option order x inference mode: the option the target chose,
    the correct one, whether the reply parsed, and what the call cost."""
    target_id, current = context.partition_key, slate.slate
    ref = current.target(target_id)
    progress = step_progress(
        context,
        models.data_dir,
        "trajectories",
        lambda done, total: f"{target_id}: {done} of {total} item x condition trajectories answered",
        total=len(eq_items) * len(current.speech.evaluation.conditions),  # evaluate_items' item x condition jobs
    )
    with progress as on_done:  # the count is there before the target (a local model, a cascade's) is loaded
        chooser = SpeechRoles(slate.slate, models).speech_target(target_id, context.run_id)
        table = choice_table(
            resolve_path_columns(eq_items, models.data_dir),  # clip paths are stored relative to the data directory
            chooser,
            target=target_id,
            ref=ref,
            evaluation=current.speech.evaluation,
            seed=current.seed,
            prompt_hash=eval_prompt_hash(),
            now=now_utc,
            on_done=on_done,
        )
    if table.failed_calls:
        context.log.warning(
            f"{target_id}: {table.failed_calls} call(s) failed; rerun to retry them (finished calls are cached)"
        )
    return table_output(table.frame, **table.metadata, **explorer_link(explorer_links.speech_path(target=target_id)))
