"""SpeechEQ text stages (paper §2.2-2.3, App. B): scenarios, six-turn dialogues, tone instructions, tone selection.
Each is partitioned by subscale. The generator is the slate's `speech.generator` (eyt.speech_generator): the
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

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_output
from assets.speech_eq.partitions import subscale_partitions
from eyt_dagster.core.errors import PER_ITEM_ERRORS
from eyt_dagster.speech_eq.generators import SpeechGenerator, speech_prompt_hash
from eyt_dagster.speech_eq.item_types import Line, Scenario
from eyt_dagster.speech_eq.table_contracts import (
    DIALOGUES_COLUMNS,
    SCENARIOS_COLUMNS,
    TONE_INSTRUCTIONS_COLUMNS,
    TONE_SELECTION_COLUMNS,
)
from eyt_dagster.speech_eq.text_attempts import (
    DialogueVersion,
    ToneSlot,
    dialogue_versions,
    tone_slot_attempts,
    tone_slots_of,
)
from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS, TEST_TURNS
from resources.model_access import ModelAccess
from resources.speech_roles import SpeechRoles

LOGIC_VERSION = "2"
PROMPTS = {
    "scenarios": ("speech_scenario",),
    "dialogues": ("speech_dialogue", "speech_dialogue_check"),
    "tone_instructions": ("speech_tone",),
    "tone_selection": ("speech_tone_selection",),
}
PROMPT_HASH = {name: speech_prompt_hash(*keys) for name, keys in PROMPTS.items()}
MAX_ERRORS_SHOWN = 10

T = TypeVar("T")
R = TypeVar("R")


def _speech(name: str) -> dict[str, Any]:
    return dict(
        key_prefix=["speech"],
        group_name="speech",
        partitions_def=subscale_partitions,
        metadata={"partition_expr": "subscale"},
        code_version=f"{LOGIC_VERSION}-{PROMPT_HASH[name]}",
    )


def _ins(*names: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=["speech", name]) for name in names}


def _scenarios(frame: pd.DataFrame) -> dict[str, Scenario]:
    return {row.scenario_id: Scenario.model_validate_json(row.scenario_json) for row in frame.itertuples()}


def _accepted_lines(frame: pd.DataFrame) -> dict[str, list[Line]]:
    """The dialogue each scenario uses: its accepted version (every row, for a table written before versions)."""
    if "accepted" in frame.columns:
        frame = frame[frame["accepted"].fillna(True).astype(bool)]
    return {
        sid: [
            Line(turn=int(r.turn), speaker=int(r.speaker), text=r.text) for r in group.sort_values("turn").itertuples()
        ]
        for sid, group in frame.groupby("scenario_id")
    }


def _map(generator: SpeechGenerator, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """fn over items, in order; in parallel up to the generator's max_concurrency (model calls are I/O)."""
    workers = min(max(1, generator.max_concurrency), len(items))
    if workers <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def _frame(rows: list[dict], columns: list[str], text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Rows as a frame with fixed columns (also when empty); optional text columns typed as strings, so a
    partition where they are all NULL still creates a VARCHAR column in DuckDB."""
    df = pd.DataFrame(rows, columns=columns)
    for column in text_columns:
        df[column] = df[column].astype("string")
    df["created_at"] = now_utc()
    return df


def _columns(contract: dict[str, str]) -> list[str]:
    """A stage's row columns: its table contract's (eyt_dagster/speech_eq/table_contracts.py) but created_at."""
    return [c for c in contract if c != "created_at"]


def _prompt_hash(generator: SpeechGenerator, name: str) -> str | None:
    return None if generator.is_baseline else PROMPT_HASH[name]


def _describe(generator: SpeechGenerator) -> str:
    if generator.is_baseline:
        return f"{generator.name} (embedded baseline, not a language model)"
    return f"{generator.name} (chat model)"


def _error_metadata(context: AssetExecutionContext, errors: list[str]) -> dict[str, object]:
    for error in errors:
        context.log.warning(error)
    return {"errors": len(errors), **({"error_messages": "\n".join(errors[:MAX_ERRORS_SHOWN])} if errors else {})}


SCENARIO_COLUMNS = _columns(SCENARIOS_COLUMNS)


@asset(**_speech("scenarios"))
def scenarios(context: AssetExecutionContext, eyt: ModelAccess) -> Output[pd.DataFrame]:
    """Scenarios for one subscale: `items_per_valence` per valence, with two dissonant personas each."""
    settings, slug = eyt.slate.speech, context.partition_key
    generator = SpeechRoles(eyt).speech_generator(context.run_id)
    jobs = [(valence, index) for valence in settings.valences for index in range(settings.items_per_valence)]
    if settings.source == "released":  # items come from the released layout (speech_audio imports them)
        context.log.info(f"speech.source is 'released': no scenarios are generated for {slug}")
        jobs = []

    def make(job: tuple[str, int]) -> Scenario | Exception:
        try:
            return generator.scenario(slug, *job)
        except PER_ITEM_ERRORS as exc:
            return exc

    rows, errors = [], []
    for (valence, index), result in zip(jobs, _map(generator, make, jobs)):
        sid = f"{slug}-{valence.lower()}-{index:03d}"
        if isinstance(result, Exception):
            errors.append(f"{sid}: scenario not generated: {result}")
            continue
        rows.append(
            {
                "scenario_id": sid,
                "subscale": slug,
                "valence": valence,
                "scenario_type": result.scenario_type,
                "title": result.title,
                "scenario_json": result.model_dump_json(),
                "generator": generator.name,
                "prompt_hash": _prompt_hash(generator, "scenarios"),
            }
        )
    df = _frame(rows, SCENARIO_COLUMNS, text_columns=("prompt_hash",))
    return table_output(df, generator=_describe(generator), **_error_metadata(context, errors))


DIALOGUE_COLUMNS = _columns(DIALOGUES_COLUMNS)


@asset(**_speech("dialogues"), ins=_ins("scenarios"))
def dialogues(context: AssetExecutionContext, eyt: ModelAccess, scenarios: pd.DataFrame) -> Output[pd.DataFrame]:
    """Six turns per scenario; the test subject's turns 4 and 6 must read plausibly in either tone. A validator
    checks that; a version it rejects is kept (accepted = false) and the dialogue regenerated, at most twice."""
    generator = SpeechRoles(eyt).speech_generator(context.run_id)

    def make(item: tuple[str, Scenario]) -> tuple[list[DialogueVersion], list[str]]:
        return dialogue_versions(generator, *item)

    items = list(_scenarios(scenarios).items())
    rows, errors, regenerated, implausible = [], [], 0, 0
    for (sid, scenario), (versions, failures) in zip(items, _map(generator, make, items)):
        errors += failures
        regenerated += len(versions) > 1
        implausible += bool(versions) and not versions[-1][1]
        for attempt, (lines, plausible, note) in enumerate(versions, start=1):
            rows += [
                {
                    "scenario_id": sid,
                    "subscale": scenario.subscale,
                    "turn": line.turn,
                    "speaker": line.speaker,
                    "text": line.text,
                    "generator": generator.name,
                    "attempt": attempt,
                    "accepted": attempt == len(versions),
                    "plausible_both_tones": bool(plausible),
                    "validator_note": note,
                    "validator": generator.validator_name,
                    "prompt_hash": _prompt_hash(generator, "dialogues"),
                }
                for line in lines
            ]
    df = _frame(rows, DIALOGUE_COLUMNS, text_columns=("prompt_hash",))
    return table_output(
        df,
        generator=_describe(generator),
        validator=generator.validator_name,
        regenerated_dialogues=regenerated,
        implausible_kept=implausible,
        **_error_metadata(context, errors),
    )


TONE_COLUMNS = _columns(TONE_INSTRUCTIONS_COLUMNS)


@asset(**_speech("tone_instructions"), ins=_ins("scenarios", "dialogues"))
def tone_instructions(
    context: AssetExecutionContext, eyt: ModelAccess, scenarios: pd.DataFrame, dialogues: pd.DataFrame
) -> Output[pd.DataFrame]:
    """One vocal instruction per context turn and three for turns 4 and 6; every attempt is a row, and an
    attempt using a bland word (or outside 8-15 words) is rejected with its reason and asked again."""
    settings = eyt.slate.speech
    bland = tuple(settings.bland_words or BLAND_WORDS)
    generator = SpeechRoles(eyt).speech_generator(context.run_id)
    lines_of = _accepted_lines(dialogues)
    ask_again = 1 if generator.is_baseline else settings.max_tone_attempts  # the template answers the same

    def make(slot: ToneSlot | str) -> tuple[list[dict], list[str]]:
        return tone_slot_attempts(
            generator, slot, bland=bland, attempts=ask_again, prompt_hash=_prompt_hash(generator, "tone_instructions")
        )

    slots = tone_slots_of(_scenarios(scenarios), lines_of)
    rows, errors = [], []
    for slot_rows, slot_errors in _map(generator, make, slots):
        rows += slot_rows
        errors += slot_errors
    df = _frame(rows, TONE_COLUMNS, text_columns=("rejection_reason", "prompt_hash"))
    accepted = df.drop_duplicates(["scenario_id", "turn", "option_index"], keep="last")["accepted"]
    return table_output(
        df,
        rejected=int((~df["accepted"]).sum()),
        slots_without_instruction=int((~accepted).sum()),
        generator=_describe(generator),
        **_error_metadata(context, errors),
    )


SELECTION_COLUMNS = _columns(TONE_SELECTION_COLUMNS)


@asset(**_speech("tone_selection"), ins=_ins("scenarios", "dialogues", "tone_instructions"))
def tone_selection(
    context: AssetExecutionContext,
    eyt: ModelAccess,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    tone_instructions: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """For turns 4 and 6, the resonant option and the most dissonant one (an actively wrong emotion is
    preferred over a flat delivery), with the judge's reasoning."""
    generator = SpeechRoles(eyt).speech_generator(context.run_id)
    lines_of = _accepted_lines(dialogues)
    accepted = tone_instructions[
        tone_instructions["accepted"].astype(bool) & tone_instructions["turn"].isin(list(TEST_TURNS))
    ]
    jobs = []
    errors: list[str] = []
    for sid, scenario in _scenarios(scenarios).items():
        for turn in TEST_TURNS:
            group = accepted[(accepted["scenario_id"] == sid) & (accepted["turn"] == turn)].sort_values("option_index")
            options = list(zip(group["persona_kind"], group["instruction"]))
            kinds = [kind for kind, _ in options]
            if "resonant" not in kinds or not any(k.startswith("dissonant") for k in kinds) or sid not in lines_of:
                errors.append(f"{sid}: turn {turn} has no selection: accepted options {kinds}")
                continue
            jobs.append((sid, scenario, turn, options))

    def make(job: tuple[str, Scenario, int, list[tuple[str, str]]]) -> tuple[int, int, str] | Exception:
        sid, scenario, turn, options = job
        try:
            return generator.select_tones(scenario, lines_of[sid], turn, options)
        except PER_ITEM_ERRORS as exc:
            return exc

    rows = []
    for (sid, scenario, turn, options), result in zip(jobs, _map(generator, make, jobs)):
        if isinstance(result, Exception):
            errors.append(f"{sid}: turn {turn} tone selection failed: {result}")
            continue
        resonant, dissonant, why = result
        dissonant_kind = options[dissonant][0]
        rows.append(
            {
                "scenario_id": sid,
                "subscale": scenario.subscale,
                "turn": turn,
                "resonant_instruction": options[resonant][1],
                "dissonant_instruction": options[dissonant][1],
                "dissonant_persona": dissonant_kind.split(":", 1)[-1],
                "reasoning": why,
                "judge": generator.judge_name,
                "resonant_kind": options[resonant][0],
                "dissonant_kind": dissonant_kind,
                "options": len(options),
                "generator": generator.name,
                "prompt_hash": _prompt_hash(generator, "tone_selection"),
            }
        )
    df = _frame(rows, SELECTION_COLUMNS, text_columns=("prompt_hash",))
    return table_output(df, judge=generator.judge_name, **_error_metadata(context, errors))


__all__ = ["dialogues", "scenarios", "tone_instructions", "tone_selection"]
