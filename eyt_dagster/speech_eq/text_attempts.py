"""The SpeechEQ text stages' retry loops (paper §2.2-2.3): a dialogue regenerated while the validator rejects
it, and a tone instruction asked again while it breaks the tone rules. Every attempt is kept, so the tables
record what was rejected and why; a failed call ends that item's loop and is reported, never raised."""

from __future__ import annotations

from typing import Any

from eyt_dagster.core.errors import PER_ITEM_ERRORS
from eyt_dagster.speech_eq.generators import MAX_DIALOGUE_ATTEMPTS, SpeechGenerator, tone_slots
from eyt_dagster.speech_eq.item_types import Line, Scenario
from eyt_dagster.speech_eq.tones import rejection_reason

DialogueVersion = tuple[list[Line], bool, str]  # (lines, plausible in both tones, the validator's note)


def dialogue_versions(
    generator: SpeechGenerator, sid: str, scenario: Scenario
) -> tuple[list[DialogueVersion], list[str]]:
    """The versions of one scenario's dialogue, the last one used, and the errors met on the way."""
    versions: list[DialogueVersion] = []
    rejected: list[tuple[list[Line], str]] = []
    errors: list[str] = []
    for attempt in range(1, MAX_DIALOGUE_ATTEMPTS + 1):
        try:
            lines = generator.dialogue(scenario, rejected)
        except PER_ITEM_ERRORS as exc:
            errors.append(f"{sid}: dialogue attempt {attempt} not generated: {exc}")
            break
        try:
            plausible, note = generator.validate_dialogue(scenario, lines)
        except PER_ITEM_ERRORS as exc:  # unchecked: keep this version, flagged, and stop
            versions.append((lines, False, f"validator call failed: {exc}"))
            errors.append(f"{sid}: dialogue check of attempt {attempt} failed: {exc}")
            break
        versions.append((lines, plausible, note))
        if plausible:
            break
        rejected.append((lines, note))
    return versions, errors


# One tone slot: (scenario id, scenario, its accepted lines, turn, option index, persona kind).
ToneSlot = tuple[str, Scenario, list[Line], int, int, str]


def tone_slots_of(scenarios: dict[str, Scenario], lines_of: dict[str, list[Line]]) -> list[ToneSlot | str]:
    """Every tone slot of the scenarios in scenario, turn, option order; a scenario without accepted lines gives
    its error message instead. Slots are independent (only one slot's attempts follow each other), so they,
    not scenarios, are the unit that runs side by side."""
    slots: list[ToneSlot | str] = []
    for sid, scenario in scenarios.items():
        lines = lines_of.get(sid)
        if not lines:
            slots.append(f"{sid}: no accepted dialogue, so no tone instructions")
            continue
        slots += [
            (sid, scenario, lines, turn, index, kind)
            for turn, kinds in tone_slots(scenario).items()
            for index, kind in enumerate(kinds)
        ]
    return slots


def tone_slot_attempts(
    generator: SpeechGenerator, slot: ToneSlot | str, *, bland: tuple[str, ...], attempts: int, prompt_hash: str | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """One tone_instructions row per attempt of one slot (up to `attempts`, each asked after the last was
    rejected), and the errors; a slot given as a message is that error alone."""
    if isinstance(slot, str):
        return [], [slot]
    sid, scenario, lines, turn, index, kind = slot
    rows, errors = [], []
    rejected: list[tuple[str, str]] = []
    for attempt in range(1, attempts + 1):
        try:
            instruction = generator.tone_instruction(scenario, lines, turn, kind, attempt, list(rejected))
            reason = rejection_reason(instruction, bland, language=generator.language)
        except PER_ITEM_ERRORS as exc:
            instruction, reason = "", f"call failed: {exc}"
            errors.append(f"{sid}: turn {turn} {kind} attempt {attempt}: {exc}")
        rows.append(
            {
                "scenario_id": sid,
                "subscale": scenario.subscale,
                "turn": turn,
                "option_index": index,
                "persona_kind": kind,
                "attempt": attempt,
                "instruction": instruction,
                "accepted": reason is None,
                "rejection_reason": reason,
                "generator": generator.name,
                "prompt_hash": prompt_hash,
            }
        )
        if reason is None or reason.startswith("call failed"):
            break
        rejected.append((instruction, reason))
    return rows, errors
