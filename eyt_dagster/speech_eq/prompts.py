"""SpeechEQ's two prompt files: the text generator's (scenarios, dialogues, tones) and the evaluation's
(forced-choice rounds and persona conditions). Render and hash them with eyt_dagster/core/prompts.py.

There is one file of each per language, `speech_<language>.yaml` and `speech_eval_<language>.yaml`
(docs/languages.md). `EYT_SPEECH_PROMPTS` / `EYT_SPEECH_EVAL_PROMPTS` replace the English files,
`EYT_SPEECH_PROMPTS_ZH` / `EYT_SPEECH_EVAL_PROMPTS_ZH` the Chinese ones."""

from __future__ import annotations

from pathlib import Path

from eyt_dagster.core.env_settings import SPEECH_EVAL_PROMPTS, SPEECH_PROMPTS, FileFamily
from eyt_dagster.core.languages import DEFAULT_LANGUAGE, LANGUAGES
from eyt_dagster.core.prompts import prompt_file, prompt_hash

SPEECH_PROMPT_KEYS = (
    "speech_scenario",
    "speech_dialogue",
    "speech_dialogue_check",
    "speech_tone",
    "speech_tone_selection",
)
SPEECH_EVAL_PROMPT_KEYS = ("choice_round1", "choice_round2", "conditions")


def _language_file(family: FileFamily, language: str) -> Path:
    if language not in LANGUAGES:
        raise ValueError(f"no SpeechEQ prompts for language '{language}'; the languages are {list(LANGUAGES)}")
    return prompt_file(family, language)


def speech_prompts_path(language: str = DEFAULT_LANGUAGE) -> Path:
    """The SpeechEQ generator's prompt file of `language`: `EYT_SPEECH_PROMPTS` (English) or
    `EYT_SPEECH_PROMPTS_<LANG>` names one, else the packaged `speech_<language>.yaml`."""
    return _language_file(SPEECH_PROMPTS, language)


def speech_eval_prompts_path(language: str = DEFAULT_LANGUAGE) -> Path:
    """The SpeechEQ evaluation prompt file of `language` (forced-choice rounds and persona conditions):
    `EYT_SPEECH_EVAL_PROMPTS` (English) or `EYT_SPEECH_EVAL_PROMPTS_<LANG>` names one, else the packaged
    `speech_eval_<language>.yaml`."""
    return _language_file(SPEECH_EVAL_PROMPTS, language)


def language_prompt_hash(language: str) -> str:
    """A short hash of both SpeechEQ prompt files of `language`. The assets' code versions hash the English
    files; a build in another language carries this in its settings (slate_settings.py), so that editing its
    files marks its assets stale while English builds keep their code versions."""
    generator = prompt_hash(*SPEECH_PROMPT_KEYS, path=speech_prompts_path(language))
    evaluation = prompt_hash(*SPEECH_EVAL_PROMPT_KEYS, path=speech_eval_prompts_path(language))
    return f"{generator}-{evaluation}"
