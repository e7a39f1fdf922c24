"""SpeechEQ records: a scenario, its six-turn dialogue, and an evaluation item with its eight clips.

An item is what the released data holds in one `<subscale_slug>/<dataset_id>/` folder (docs/method.md); the
project's generator produces the same records, so generated and published datasets are interchangeable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.speech_eq.vocabulary import AUDIO_FILES, SUBSCALES, TURN_SPEAKER, Valence


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Speaker(_Record):
    name: str
    role: str
    gender: Literal["female", "male"]
    persona: str = ""


class Scenario(_Record):
    """One situation that tests one EQ-i subscale (paper §2.2, App. B)."""

    subscale: str
    valence: Valence
    scenario_type: str
    title: str
    context: str
    description: str
    speaker1: Speaker = Field(description="The catalyst.")
    speaker2: Speaker = Field(description="The test subject, whose turns 4 and 6 are evaluated.")
    resonant_persona: str
    dissonant_personas: list[str] = Field(min_length=2, max_length=2)
    skill_tested: str
    target_social_intent: str

    @field_validator("subscale")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in SUBSCALES:
            raise ValueError(f"subscale '{value}' is not an EQ-i 2.0 subscale slug, e.g. 'interpersonal_empathy'")
        return value


class Line(_Record):
    turn: int = Field(ge=1, le=6)
    speaker: Literal[1, 2]
    text: str = Field(min_length=1)

    @model_validator(mode="after")
    def _speaker_of_turn(self) -> Line:
        if TURN_SPEAKER[self.turn] != self.speaker:
            raise ValueError(f"turn {self.turn} is spoken by speaker {TURN_SPEAKER[self.turn]}, not {self.speaker}")
        return self


class Clip(_Record):
    """One audio file: a context turn, or the resonant ('high') or dissonant ('low') candidate of a test turn."""

    file_number: str
    turn: int = Field(ge=1, le=6)
    speaker: Literal[1, 2]
    text: str
    eq_level: Literal["high", "low"] | None
    path: str
    tone_description: str = ""

    @model_validator(mode="after")
    def _slot(self) -> Clip:
        if AUDIO_FILES.get(self.file_number) != (self.turn, self.eq_level):
            expected = AUDIO_FILES.get(self.file_number)
            raise ValueError(
                f"audio file {self.file_number} holds (turn, eq_level) {expected}, not ({self.turn}, {self.eq_level})"
            )
        return self


class EqItem(_Record):
    """One evaluation item: scenario, six lines and eight clips (01-03, 04/05 = turn 4 high/low, 06, 07/08)."""

    dataset_id: str
    scenario: Scenario
    conversation: list[Line] = Field(min_length=6, max_length=6)
    clips: list[Clip] = Field(min_length=8, max_length=8)
    source: str = Field(default="generated", description="'generated' or the imported folder.")
    generation_metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def language(self) -> str:
        """The language its text and clips are in: generation_metadata's `language`, set by a non-English build."""
        return str(self.generation_metadata.get("language", DEFAULT_LANGUAGE))

    @model_validator(mode="after")
    def _complete(self) -> EqItem:
        if sorted(line.turn for line in self.conversation) != [1, 2, 3, 4, 5, 6]:
            raise ValueError(f"item {self.dataset_id}: the conversation needs turns 1-6 once each")
        if sorted(c.file_number for c in self.clips) != sorted(AUDIO_FILES):
            raise ValueError(f"item {self.dataset_id}: needs audio files {sorted(AUDIO_FILES)} once each")
        return self

    def clip(self, turn: int, eq_level: str | None = None) -> Clip:
        return next(c for c in self.clips if c.turn == turn and c.eq_level == eq_level)

    @property
    def subscale(self) -> str:
        return self.scenario.subscale


def item_id(subscale: str, valence: str, index: int) -> str:
    """The id of a subscale's index-th scenario of a valence, e.g. 'interpersonal_empathy-positive-000': its
    scenario_id in the text stages and the dataset_id of the item built from it."""
    return f"{subscale}-{valence.lower()}-{index:03d}"
