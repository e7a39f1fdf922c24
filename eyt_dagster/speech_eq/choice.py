"""One forced-choice request of SpeechEQ (paper §2.4, App. D): what a target is shown in a round, and the
chat messages that carry it. Pure logic; how a clip is rendered (audio part, transcript with cues, transcript
with tone instruction) is passed in by the target kind.

Round 1 shows turns 1-3 and the two turn-4 candidates. Round 2 continues the same conversation: round 1's
message, the target's round-1 answer, then the turn-4 clip now in the history (the one it chose under
sequential inference, the resonant one under direct inference), turn 5 and the two turn-6 candidates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.core.prompts import render
from eyt_dagster.speech_eq.item_types import EqItem
from eyt_dagster.speech_eq.prompts import speech_eval_prompts_path as eval_prompts_path
from eyt_dagster.speech_eq.protocol import (
    DEFAULT_REPLY_FORMAT,
    REPLY_FORMATS,
    ROUND_TURNS,
    correct_option,
    make_reply,
    option_order,
)
from eyt_dagster.speech_eq.release_format import ROLE

Inference = Literal["sequential", "direct"]
Order = Literal["seeded", "flipped"]
ContentPart = dict[str, Any]
EQ_LEVEL = {role: level for level, role in ROLE.items()}  # context / resonant / dissonant -> a clip's eq_level
RenderClip = Callable[["Utterance"], list[ContentPart]]


@dataclass(frozen=True)
class Utterance:
    """One clip as a target meets it: who speaks, the words, the file, and the tone it was spoken in."""

    turn: int
    speaker: int
    text: str
    path: str
    tone: str
    role: Literal["context", "resonant", "dissonant"]
    gender: Literal["female", "male"]


@dataclass(frozen=True)
class ChoiceRound:
    """What one round shows: the clips before the choice, and the two options in their asked order."""

    round: int
    shown: tuple[Utterance, ...]
    options: tuple[Utterance, Utterance]

    @property
    def order(self) -> tuple[str, str]:
        return (self.options[0].role, self.options[1].role)

    @property
    def correct_option(self) -> int:
        return correct_option(self.order)


@dataclass(frozen=True)
class ChoiceRequest:
    """Everything a target needs to answer one round: the item, the persona condition's system prompt, the
    rounds so far, (in round 2) its own round-1 answer as it stands in the conversation, and the reply
    format asked for (eyt_dagster/speech_eq/protocol.py)."""

    item: EqItem
    condition: str
    system_prompt: str
    round1: ChoiceRound
    round2: ChoiceRound | None = None
    round1_answer: str | None = None
    reply_format: str = DEFAULT_REPLY_FORMAT

    def __post_init__(self) -> None:
        if self.reply_format not in REPLY_FORMATS:
            raise ValueError(f"reply format '{self.reply_format}' is unknown; use one of {list(REPLY_FORMATS)}")

    @property
    def current(self) -> ChoiceRound:
        return self.round2 if self.round2 is not None else self.round1


def utterance(item: EqItem, turn: int, role: Literal["context", "resonant", "dissonant"] = "context") -> Utterance:
    level = EQ_LEVEL[role]
    clip = item.clip(turn, level)
    speaker = item.scenario.speaker1 if clip.speaker == 1 else item.scenario.speaker2
    return Utterance(
        turn=turn,
        speaker=clip.speaker,
        text=clip.text,
        path=clip.path,
        tone=clip.tone_description,
        role=role,
        gender=speaker.gender,
    )


def choice_round(
    item: EqItem, round_: int, seed: int, order: Order, turn4_in_history: Literal["resonant", "dissonant"] | None = None
) -> ChoiceRound:
    """Round 1 or 2 of an item, options in the seeded order (or its flip). Round 2 needs the turn-4 clip that
    stands in the history."""
    roles = option_order(item.dataset_id, round_, seed, flipped=order == "flipped")
    turn = ROUND_TURNS[round_]
    options = (utterance(item, turn, roles[0]), utterance(item, turn, roles[1]))
    if round_ == 1:
        shown = tuple(utterance(item, t) for t in (1, 2, 3))
    else:
        if turn4_in_history is None:
            raise ValueError(f"item {item.dataset_id}: round 2 needs the turn-4 clip in the history")
        shown = (utterance(item, 4, turn4_in_history), utterance(item, 5))
    return ChoiceRound(round=round_, shown=shown, options=options)


def direct_answer(round1: ChoiceRound, reply_format: str = DEFAULT_REPLY_FORMAT) -> str:
    """The round-1 answer placed in the history under direct inference: the correct choice, in the reply
    format asked for, its texts saying that it was given rather than heard."""
    given = "(the correct answer, given as history)"
    reply = make_reply(
        reply_format,
        selected_option=round1.correct_option,
        reasoning=given,
        acoustic_profile_1=given,
        acoustic_profile_2=given,
        situational_demand=given,
    )
    return json.dumps(reply.model_dump())


def system_prompt(condition: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The persona condition's system prompt followed by the task's standing instruction, in `language`."""
    persona = render("conditions", condition, path=eval_prompts_path(language)).strip()
    task = render("choice_round1", "system", path=eval_prompts_path(language)).strip()
    return f"{persona}\n\n{task}"


# The labels before each clip ("Option 1:", "Speaker 2:"), per language: English's are what they always were.
LABELS: dict[str, dict[str, str]] = {
    "en": {"option": "Option {n}:", "speaker": "Speaker {n}:"},
    "zh": {"option": "选项 {n}：", "speaker": "说话人 {n}："},
}


def _label(kind: str, n: int, language: str) -> str:
    return LABELS[language][kind].format(n=n)


def _speaker_label(item: EqItem, n: int) -> str:
    s = item.scenario.speaker1 if n == 1 else item.scenario.speaker2
    return f"{s.name} ({s.role})"


def _text(value: str) -> ContentPart:
    return {"type": "text", "text": value}


def _clips(label: str, clip: Utterance, render_clip: RenderClip) -> list[ContentPart]:
    return [_text(label), *render_clip(clip)]


def _options_and_answer(
    options: tuple[Utterance, Utterance], render_clip: RenderClip, reply_format: str, language: str
) -> list[ContentPart]:
    """The two candidates, then how to answer (the same in both rounds, in the request's reply format)."""
    parts = [
        part
        for n, clip in enumerate(options, start=1)
        for part in _clips(_label("option", n, language), clip, render_clip)
    ]
    path = eval_prompts_path(language)
    answer = render("choice_round1", f"answer_{reply_format}", path=path).strip()
    if not answer:
        raise ValueError(
            f"prompt file {path}: choice_round1 has no 'answer_{reply_format}' text, which tells a "
            f"target how to answer in the '{reply_format}' reply format; add it"
        )
    return [*parts, _text(answer)]


def round1_content(request: ChoiceRequest, render_clip: RenderClip) -> list[ContentPart]:
    item, r1, language = request.item, request.round1, request.item.language
    path = eval_prompts_path(language)
    parts = [
        _text(
            render(
                "choice_round1",
                "user_intro",
                path=path,
                context=item.scenario.context,
                situation=item.scenario.description,
                speaker1=_speaker_label(item, 1),
                speaker2=_speaker_label(item, 2),
            ).strip()
        )
    ]
    for clip in r1.shown:
        parts += _clips(_label("speaker", clip.speaker, language), clip, render_clip)
    parts.append(_text(render("choice_round1", "task", path=path).strip()))
    return parts + _options_and_answer(r1.options, render_clip, request.reply_format, language)


def round2_content(request: ChoiceRequest, render_clip: RenderClip) -> list[ContentPart]:
    r2 = request.round2
    assert r2 is not None
    language = request.item.language
    path = eval_prompts_path(language)
    chosen, turn5 = r2.shown
    parts = [
        _text(render("choice_round2", "intro", path=path).strip()),
        *render_clip(chosen),
        _text(render("choice_round2", "after", path=path).strip()),
        *_clips(_label("speaker", 1, language), turn5, render_clip),
        _text(render("choice_round2", "task", path=path).strip()),
    ]
    return parts + _options_and_answer(r2.options, render_clip, request.reply_format, language)


def choice_messages(request: ChoiceRequest, render_clip: RenderClip) -> list[dict[str, Any]]:
    """The chat messages of the current round. Consecutive text parts are merged, so a text-only target gets
    plain strings it can read like any chat."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": request.system_prompt},
        {"role": "user", "content": _merge(round1_content(request, render_clip))},
    ]
    if request.round2 is not None:
        messages.append({"role": "assistant", "content": request.round1_answer or ""})
        messages.append({"role": "user", "content": _merge(round2_content(request, render_clip))})
    return messages


def _merge(parts: list[ContentPart]) -> list[ContentPart] | str:
    merged: list[ContentPart] = []
    for part in parts:
        if part["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = _text(f"{merged[-1]['text']}\n{part['text']}")
        else:
            merged.append(part)
    if len(merged) == 1 and merged[0]["type"] == "text":
        return merged[0]["text"]
    return merged
