"""The tables of the SpeechEQ text stages (paper §2.2-2.3, App. B), one subscale at a time: scenarios, six-turn
dialogues, tone instructions and tone selection. Each stage reads the tables of the stages before it, asks the
generator for every item, side by side up to the generator's max_concurrency (model calls are I/O), and gives
its rows in item order with the per-item errors met. A failed call never stops a stage: it is an error message
(and, where the table keeps attempts, a row). The retry loops themselves are in text_attempts.py.

Every row names its generator; `prompt_hash` is the hash of the stage's prompts for model rows and NULL for
the template baseline's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from eyt_dagster.core.errors import PER_ITEM_ERRORS
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.speech_eq.generators import SpeechGenerator
from eyt_dagster.speech_eq.item_types import Line, Scenario, item_id
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
from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS_BY_LANGUAGE, TEST_TURNS

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class StageTable:
    """One text stage's table without its created_at column, the per-item errors met, the stage's own
    figures for the materialisation, and a note on why it made nothing (if it did so on purpose)."""

    frame: pd.DataFrame
    errors: list[str] = field(default_factory=list)
    metadata: dict[str, object] = field(default_factory=dict)
    note: str | None = None


def describe_generator(generator: SpeechGenerator) -> str:
    """The generator as the materialisation names it: the template generator is a baseline, not a model."""
    if generator.is_baseline:
        return f"{generator.name} (embedded baseline, not a language model)"
    return f"{generator.name} (chat model)"


def _map(generator: SpeechGenerator, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """fn over items, results in item order; up to the generator's max_concurrency at once."""
    return ordered_map(fn, items, max(1, generator.max_concurrency))


def _row_hash(generator: SpeechGenerator, prompt_hash: str) -> str | None:
    return None if generator.is_baseline else prompt_hash


def _columns(contract: dict[str, str]) -> list[str]:
    """A stage's row columns: its table contract's (table_contracts.py) but created_at."""
    return [c for c in contract if c != "created_at"]


def _frame(rows: list[dict[str, Any]], contract: dict[str, str], text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Rows as a frame with the contract's columns (also when empty); the optional text columns typed as
    strings, so a partition where they are all NULL still creates a VARCHAR column in DuckDB."""
    df = pd.DataFrame(rows, columns=_columns(contract))
    for column in text_columns:
        df[column] = df[column].astype("string")
    return df


def scenarios_of(frame: pd.DataFrame) -> dict[str, Scenario]:
    """The scenarios of a speech.scenarios table, by scenario id."""
    return {row.scenario_id: Scenario.model_validate_json(row.scenario_json) for row in frame.itertuples()}


def accepted_lines(frame: pd.DataFrame) -> dict[str, list[Line]]:
    """The dialogue each scenario uses: its accepted version (every row, for a table written before versions)."""
    if "accepted" in frame.columns:
        frame = frame[frame["accepted"].fillna(True).astype(bool)]
    return {
        sid: [
            Line(turn=int(r.turn), speaker=int(r.speaker), text=r.text) for r in group.sort_values("turn").itertuples()
        ]
        for sid, group in frame.groupby("scenario_id")
    }


# ------------------------------------------------------------------------------------------------- scenarios


def scenario_table(
    generator: SpeechGenerator,
    subscale: str,
    *,
    valences: Sequence[str],
    per_valence: int,
    released: bool,
    prompt_hash: str,
) -> StageTable:
    """`per_valence` scenarios per valence for one subscale, with two dissonant personas each; none when the
    items come from the released layout (the audio stage imports them). A scenario whose call failed has
    no row, only an error."""
    jobs = [(valence, index) for valence in valences for index in range(per_valence)]
    note = None
    if released:
        note, jobs = f"speech.source is 'released': no scenarios are generated for {subscale}", []

    def make(job: tuple[str, int]) -> Scenario | Exception:
        try:
            return generator.scenario(subscale, *job)
        except PER_ITEM_ERRORS as exc:
            return exc

    rows, errors = [], []
    for (valence, index), result in zip(jobs, _map(generator, make, jobs)):
        sid = item_id(subscale, valence, index)
        if isinstance(result, Exception):
            errors.append(f"{sid}: scenario not generated: {result}")
            continue
        rows.append(
            {
                "scenario_id": sid,
                "subscale": subscale,
                "valence": valence,
                "scenario_type": result.scenario_type,
                "title": result.title,
                "scenario_json": result.model_dump_json(),
                "generator": generator.name,
                "prompt_hash": _row_hash(generator, prompt_hash),
            }
        )
    frame = _frame(rows, SCENARIOS_COLUMNS, text_columns=("prompt_hash",))
    return StageTable(frame, errors, {"generator": describe_generator(generator)}, note)


# ------------------------------------------------------------------------------------------------- dialogues


def dialogue_table(generator: SpeechGenerator, scenarios: pd.DataFrame, *, prompt_hash: str) -> StageTable:
    """Six rows per dialogue version. `attempt` numbers the versions of a scenario; the validator's verdict is
    repeated on all six rows of its version. A rejected version is kept (accepted = false) and the dialogue
    regenerated, at most twice; the last version is used even if the validator still said no
    (`implausible_kept` counts those)."""

    def make(item: tuple[str, Scenario]) -> tuple[list[DialogueVersion], list[str]]:
        return dialogue_versions(generator, *item)

    items = list(scenarios_of(scenarios).items())
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
                    "prompt_hash": _row_hash(generator, prompt_hash),
                }
                for line in lines
            ]
    frame = _frame(rows, DIALOGUES_COLUMNS, text_columns=("prompt_hash",))
    metadata = {
        "generator": describe_generator(generator),
        "validator": generator.validator_name,
        "regenerated_dialogues": regenerated,
        "implausible_kept": implausible,
    }
    return StageTable(frame, errors, metadata)


# ----------------------------------------------------------------------------------------- tone instructions


def tone_instruction_table(
    generator: SpeechGenerator,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    *,
    bland_words: Sequence[str] | None,
    max_attempts: int,
    prompt_hash: str,
) -> StageTable:
    """One vocal instruction per context turn and three for turns 4 and 6, for each scenario's accepted
    dialogue. Every attempt is a row; an attempt using a bland word (`bland_words`, else the packaged list)
    or outside 8-15 words is rejected with its reason and the slot asked again, with its earlier rejections,
    up to `max_attempts` attempts; the deterministic template generator is asked once."""
    bland = tuple(bland_words or BLAND_WORDS_BY_LANGUAGE[generator.language])
    lines_of = accepted_lines(dialogues)
    ask_again = 1 if generator.is_baseline else max_attempts  # the template answers the same

    def make(slot: ToneSlot | str) -> tuple[list[dict[str, Any]], list[str]]:
        return tone_slot_attempts(
            generator, slot, bland=bland, attempts=ask_again, prompt_hash=_row_hash(generator, prompt_hash)
        )

    slots = tone_slots_of(scenarios_of(scenarios), lines_of)
    rows, errors = [], []
    for slot_rows, slot_errors in _map(generator, make, slots):
        rows += slot_rows
        errors += slot_errors
    frame = _frame(rows, TONE_INSTRUCTIONS_COLUMNS, text_columns=("rejection_reason", "prompt_hash"))
    accepted = frame.drop_duplicates(["scenario_id", "turn", "option_index"], keep="last")["accepted"]
    metadata = {
        "rejected": int((~frame["accepted"]).sum()),
        "slots_without_instruction": int((~accepted).sum()),
        "generator": describe_generator(generator),
    }
    return StageTable(frame, errors, metadata)


# -------------------------------------------------------------------------------------------- tone selection

# One test turn to select tones for: (scenario id, scenario, turn, [(persona kind, instruction)] by option).
SelectionJob = tuple[str, Scenario, int, list[tuple[str, str]]]


def _selection_jobs(
    scenarios: dict[str, Scenario], lines_of: dict[str, list[Line]], tone_instructions: pd.DataFrame
) -> tuple[list[SelectionJob], list[str]]:
    """The test turns that have a resonant and a dissonant accepted option and a dialogue; the others as errors."""
    accepted = tone_instructions[
        tone_instructions["accepted"].astype(bool) & tone_instructions["turn"].isin(list(TEST_TURNS))
    ]
    jobs: list[SelectionJob] = []
    errors: list[str] = []
    for sid, scenario in scenarios.items():
        for turn in TEST_TURNS:
            group = accepted[(accepted["scenario_id"] == sid) & (accepted["turn"] == turn)].sort_values("option_index")
            options = list(zip(group["persona_kind"], group["instruction"]))
            kinds = [kind for kind, _ in options]
            if "resonant" not in kinds or not any(k.startswith("dissonant") for k in kinds) or sid not in lines_of:
                errors.append(f"{sid}: turn {turn} has no selection: accepted options {kinds}")
                continue
            jobs.append((sid, scenario, turn, options))
    return jobs, errors


def tone_selection_table(
    generator: SpeechGenerator,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    tone_instructions: pd.DataFrame,
    *,
    prompt_hash: str,
) -> StageTable:
    """For turns 4 and 6 of each scenario, the judge's resonant option and most dissonant one among the
    accepted options (an actively wrong emotion is preferred over a flat delivery), with its reasoning."""
    lines_of = accepted_lines(dialogues)
    jobs, errors = _selection_jobs(scenarios_of(scenarios), lines_of, tone_instructions)

    def make(job: SelectionJob) -> tuple[int, int, str] | Exception:
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
                "prompt_hash": _row_hash(generator, prompt_hash),
            }
        )
    frame = _frame(rows, TONE_SELECTION_COLUMNS, text_columns=("prompt_hash",))
    return StageTable(frame, errors, {"judge": generator.judge_name})
