"""The rows of the SpeechEQ audio stage (paper §2.3), one subscale at a time: every synthesised clip
(speech.tts_clips), every scored test-turn pair (speech.contrast_scores) and the items that passed
(speech.eq_items). Either built from the text stages' tables (build.py per scenario) or taken from the
released layout, whose test-turn pairs are scored with the same contrast filter: recorded, never used to
drop a published item. Pure logic: the TTS engine, the clip store and the feature extractor are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.speech_eq.build import Synthesize, VoiceFor, build_item, contrast_row
from eyt_dagster.speech_eq.contrast import AcousticFeatures, ContrastThresholds, contrast_score
from eyt_dagster.speech_eq.item_types import EqItem, Line, Scenario
from eyt_dagster.speech_eq.release_format import clip_rows, item_rows
from eyt_dagster.speech_eq.vocabulary import CONTEXT_TURNS, TEST_TURNS


@dataclass
class AudioRows:
    """One subscale's rows of the three tables, and what the stage met on the way."""

    clips: list[dict[str, Any]] = field(default_factory=list)
    contrasts: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    scenarios: int = 0  # scenarios read from the text stages
    incomplete: list[str] = field(default_factory=list)  # scenario ids an earlier stage left without text or tones
    skipped_folders: list[tuple[str, str]] = field(default_factory=list)  # released folders not imported, and why

    @property
    def regenerated_pairs(self) -> int:
        """Pair renderings after the first (attempt > 0)."""
        return sum(1 for row in self.contrasts if row["attempt"] > 0)

    @property
    def discarded(self) -> int:
        """Complete scenarios whose test turns did not both reach the pass score."""
        return self.scenarios - len(self.items) - len(self.incomplete)


def _item_row(item: EqItem, contrast: dict[int, int]) -> dict[str, Any]:
    """A speech.eq_items row: the item and the contrast total each test pair was kept with."""
    return {**item_rows(item), "turn4_contrast": contrast[4], "turn6_contrast": contrast[6]}


def synthesise_subscale(
    rows: AudioRows,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    tone_instructions: pd.DataFrame,
    tone_selection: pd.DataFrame,
    *,
    synthesize: Synthesize,
    voice_for: VoiceFor,
    store: Callable[[bytes], Path],
    features: Callable[[str | Path], AcousticFeatures],
    thresholds: ContrastThresholds,
    on_done: Callable[[int, int], None] | None = None,
    language: str = DEFAULT_LANGUAGE,
) -> AudioRows:
    """Every scenario with an accepted dialogue, four context tones and both tone selections through
    `build_item`, in table order, its rows added to `rows` (so `on_done(done, total)` can watch them grow).
    A scenario an earlier stage left incomplete is skipped; its error is in that stage's metadata."""
    context_tones = tone_instructions[tone_instructions["accepted"] & (tone_instructions["persona_kind"] == "context")]
    if "accepted" in dialogues.columns:  # rejected dialogue versions stay in the table as a record only
        dialogues = dialogues[dialogues["accepted"]]
    rows.scenarios = len(scenarios)
    if on_done is not None and len(scenarios):
        on_done(0, len(scenarios))  # the total, before the first scenario
    for n, row in enumerate(scenarios.itertuples(), start=1):
        sid = row.scenario_id
        scenario = Scenario.model_validate_json(row.scenario_json)
        lines = [
            Line(turn=int(r.turn), speaker=int(r.speaker), text=r.text)
            for r in dialogues[dialogues["scenario_id"] == sid].sort_values("turn").itertuples()
        ]
        ctx = {int(r.turn): r.instruction for r in context_tones[context_tones["scenario_id"] == sid].itertuples()}
        picks = tone_selection[tone_selection["scenario_id"] == sid]
        tests = {int(r.turn): (r.resonant_instruction, r.dissonant_instruction) for r in picks.itertuples()}
        if len(lines) != 6 or set(ctx) != set(CONTEXT_TURNS) or set(tests) != set(TEST_TURNS):
            rows.incomplete.append(sid)
            if on_done is not None:
                on_done(n, len(scenarios))
            continue
        result = build_item(
            sid,
            scenario,
            lines,
            ctx,
            tests,
            synthesize=synthesize,
            voice_for=voice_for,
            store=store,
            features=features,
            thresholds=thresholds,
            language=language,
        )
        rows.clips += result.clips
        rows.contrasts += result.contrasts
        if result.item:
            rows.items.append(_item_row(result.item, result.composite))
        if on_done is not None:
            on_done(n, len(scenarios))
    return rows


def _in_subscale(folder: str, subscale: str) -> bool:
    return f"/{subscale}/" in f"/{folder}/"


def imported_subscale(
    items: Sequence[EqItem],
    skipped: Sequence[tuple[str, str]],
    subscale: str,
    *,
    features: Callable[[str | Path], AcousticFeatures],
    thresholds: ContrastThresholds,
) -> AudioRows:
    """The released items of one subscale (`items` and `skipped` as the layout's import reports them, every
    subscale's) as tts_clips, contrast_scores and eq_items rows; the subscale's skipped folders are kept."""
    rows = AudioRows(skipped_folders=[(folder, why) for folder, why in skipped if _in_subscale(folder, subscale)])
    mine = [item for item in items if item.subscale == subscale]
    for item in mine:
        for clip in clip_rows(item):
            rows.clips.append(
                {
                    "scenario_id": item.dataset_id,
                    "turn": clip["turn"],
                    "role": clip["role"],
                    "attempt": 0,
                    "speaker": clip["speaker"],
                    "voice": None,
                    "text": clip["text"],
                    "instruction": clip["tone_description"],
                    "strength": None,
                    "engine": "imported",
                    "duration_s": None,
                    "path": clip["path"],
                }
            )
        for turn in TEST_TURNS:
            score = contrast_score(
                features(item.clip(turn, "high").path), features(item.clip(turn, "low").path), thresholds
            )
            rows.contrasts.append(contrast_row(item.dataset_id, turn, 0, None, score))
    totals = {(c["scenario_id"], c["turn"]): c["total"] for c in rows.contrasts}
    rows.items = [_item_row(item, {turn: totals[(item.dataset_id, turn)] for turn in TEST_TURNS}) for item in mine]
    rows.scenarios = len(mine)
    return rows
