"""SpeechEQ text stages (paper §2.2-2.3, App. B): scenarios, six-turn dialogues, tone instructions, tone selection.
Each is partitioned by subscale. The generator is the slate's `speech.generator` (`SpeechRoles.speech_generator`): the
embedded template generator, a baseline named as such in every row, or a chat model (same client, cache and
ledger as EYT-Bench). Each asset's code_version carries a hash of the speech prompts it uses.

Tables (every row names its generator; `prompt_hash` is the hash of the stage's prompts for model rows, NULL
for template rows):
* scenarios: one row per scenario that was generated (a scenario whose model call failed has no row; the
  failures are in the materialisation's `errors` metadata).
* dialogues: six rows per dialogue version. `attempt` numbers the versions of a scenario; the validator's
  verdict (`plausible_both_tones`, `validator_note`, `validator`) is repeated on all six rows of its version.
  A version the validator rejects is kept with `accepted = false` and the dialogue is regenerated, up to two
  more times; the last version is the one used (`accepted = true`), even if the validator still said no, in
  which case its rows keep `plausible_both_tones = false` (metadata `implausible_kept`).
* tone_instructions: one row per attempt per slot (`option_index` within the turn, `persona_kind`), with
  `accepted` and `rejection_reason`; a rejected slot is asked again, with its earlier rejections, up to
  `speech.max_tone_attempts` attempts (the deterministic template generator is asked once).
* tone_selection: one row per scenario and test turn: the judge's resonant and most dissonant choice among
  the accepted options, with its reasoning.
"""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._asset_args import AssetArgs
from assets._output import now_utc, table_output
from assets.speech_eq.partitions import subscale_partitions
from eyt_dagster.speech_eq.generators import speech_prompt_hash
from eyt_dagster.speech_eq.text_tables import (
    StageTable,
    dialogue_table,
    scenario_table,
    tone_instruction_table,
    tone_selection_table,
)
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.speech_roles import SpeechRoles

LOGIC_VERSION = "2"
PROMPTS = {
    "scenarios": ("speech_scenario",),
    "dialogues": ("speech_dialogue", "speech_dialogue_check"),
    "tone_instructions": ("speech_tone",),
    "tone_selection": ("speech_tone_selection",),
}
PROMPT_HASH = {name: speech_prompt_hash(*keys) for name, keys in PROMPTS.items()}
MAX_ERRORS_SHOWN = 10


def _speech(name: str) -> AssetArgs:
    return AssetArgs(
        key_prefix=["speech"],
        group_name="speech",
        partitions_def=subscale_partitions,
        metadata={"partition_expr": "subscale"},
        code_version=f"{LOGIC_VERSION}-{PROMPT_HASH[name]}",
    )


def _ins(*names: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=["speech", name]) for name in names}


def _output(context: AssetExecutionContext, stage: StageTable) -> Output[pd.DataFrame]:
    """The stage's table stamped with created_at; its note and errors logged, the errors also in metadata."""
    df = stage.frame.assign(created_at=now_utc())
    if stage.note:
        context.log.info(stage.note)
    for error in stage.errors:
        context.log.warning(error)
    shown = {"error_messages": "\n".join(stage.errors[:MAX_ERRORS_SHOWN])} if stage.errors else {}
    return table_output(df, **stage.metadata, errors=len(stage.errors), **shown)


@asset(**_speech("scenarios"))
def scenarios(context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess) -> Output[pd.DataFrame]:
    """Scenarios for one subscale: `items_per_valence` per valence, with two dissonant personas each."""
    settings = slate.slate.speech
    stage = scenario_table(
        SpeechRoles(slate.slate, models).speech_generator(context.run_id),
        context.partition_key,
        valences=settings.valences,
        per_valence=settings.items_per_valence,
        released=settings.source == "released",  # items come from the released layout (speech_audio imports them)
        prompt_hash=PROMPT_HASH["scenarios"],
    )
    return _output(context, stage)


@asset(**_speech("dialogues"), ins=_ins("scenarios"))
def dialogues(
    context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess, scenarios: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Six turns per scenario; the test subject's turns 4 and 6 must read plausibly in either tone. A validator
    checks that; a version it rejects is kept (accepted = false) and the dialogue regenerated, at most twice."""
    generator = SpeechRoles(slate.slate, models).speech_generator(context.run_id)
    return _output(context, dialogue_table(generator, scenarios, prompt_hash=PROMPT_HASH["dialogues"]))


@asset(**_speech("tone_instructions"), ins=_ins("scenarios", "dialogues"))
def tone_instructions(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """One vocal instruction per context turn and three for turns 4 and 6; every attempt is a row, and an
    attempt using a bland word (or outside 8-15 words) is rejected with its reason and asked again."""
    settings = slate.slate.speech
    stage = tone_instruction_table(
        SpeechRoles(slate.slate, models).speech_generator(context.run_id),
        scenarios,
        dialogues,
        bland_words=settings.bland_words,
        max_attempts=settings.max_tone_attempts,
        prompt_hash=PROMPT_HASH["tone_instructions"],
    )
    return _output(context, stage)


@asset(**_speech("tone_selection"), ins=_ins("scenarios", "dialogues", "tone_instructions"))
def tone_selection(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    tone_instructions: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """For turns 4 and 6, the resonant option and the most dissonant one (an actively wrong emotion is
    preferred over a flat delivery), with the judge's reasoning."""
    generator = SpeechRoles(slate.slate, models).speech_generator(context.run_id)
    stage = tone_selection_table(
        generator, scenarios, dialogues, tone_instructions, prompt_hash=PROMPT_HASH["tone_selection"]
    )
    return _output(context, stage)


__all__ = ["dialogues", "scenarios", "tone_instructions", "tone_selection"]
