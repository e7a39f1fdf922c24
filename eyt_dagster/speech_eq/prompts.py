"""SpeechEQ's two prompt files: the text generator's (scenarios, dialogues, tones) and the evaluation's
(forced-choice rounds and persona conditions). Render and hash them with eyt_dagster/core/prompts.py."""

from __future__ import annotations

from pathlib import Path

from eyt_dagster.core.prompts import prompt_file

SPEECH_PROMPT_KEYS = (
    "speech_scenario",
    "speech_dialogue",
    "speech_dialogue_check",
    "speech_tone",
    "speech_tone_selection",
)
SPEECH_EVAL_PROMPT_KEYS = ("choice_round1", "choice_round2", "conditions")


def speech_prompts_path() -> Path:
    """`EYT_SPEECH_PROMPTS` names the SpeechEQ generator's prompt file; the default is the packaged English one."""
    return prompt_file("EYT_SPEECH_PROMPTS", "speech_en.yaml")


def speech_eval_prompts_path() -> Path:
    """`EYT_SPEECH_EVAL_PROMPTS` names the SpeechEQ evaluation prompt file (forced-choice rounds and persona
    conditions); the default is the packaged English one."""
    return prompt_file("EYT_SPEECH_EVAL_PROMPTS", "speech_eval_en.yaml")
