"""Prompt templates: loaded from one YAML per language, rendered with named placeholders, hashed.

The hash of the templates an asset uses is part of that asset's `code_version`, so editing a prompt makes
exactly the partitions that depend on it stale (docs/operations.md#code-versions).

Three prompt files: EYT-Bench's (`prompts_path()`, keys PROMPT_KEYS) and SpeechEQ's text generator's
(`speech_prompts_path()`, keys SPEECH_PROMPT_KEYS) and SpeechEQ's evaluation
(`speech_eval_prompts_path()`, keys SPEECH_EVAL_PROMPT_KEYS). `load_prompts`, `render` and `prompt_hash` serve all three:
pass `path=speech_prompts_path()` for the speech file.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

import yaml

from eyt_dagster.eyt_bench.taxonomy import EMOTIONS, EXPLICIT_INTENTS, LATENT_INTENTS

PROMPT_KEYS = ("seed_generation", "simulator", "perception", "target", "judge_turn", "judge_final")
SPEECH_PROMPT_KEYS = (
    "speech_scenario",
    "speech_dialogue",
    "speech_dialogue_check",
    "speech_tone",
    "speech_tone_selection",
)
SPEECH_EVAL_PROMPT_KEYS = ("choice_round1", "choice_round2", "conditions")
TAXONOMY_FIELDS = {
    "emotions": ", ".join(EMOTIONS),
    "explicit_intents": ", ".join(EXPLICIT_INTENTS),
    "latent_intents": ", ".join(LATENT_INTENTS),
}


def _prompt_file(env_var: str, packaged: str) -> Path:
    """The prompt file named by the environment variable `env_var`, else the packaged file `packaged`."""
    override = os.environ.get(env_var)
    if override:
        return Path(override)
    return Path(str(importlib_resources.files("eyt_dagster") / "prompts" / packaged))


def prompts_path() -> Path:
    """`EYT_PROMPTS` names a prompt file; the default is the packaged English one."""
    return _prompt_file("EYT_PROMPTS", "default_en.yaml")


def speech_prompts_path() -> Path:
    """`EYT_SPEECH_PROMPTS` names the SpeechEQ generator's prompt file; the default is the packaged English one."""
    return _prompt_file("EYT_SPEECH_PROMPTS", "speech_en.yaml")


def speech_eval_prompts_path() -> Path:
    """`EYT_SPEECH_EVAL_PROMPTS` names the SpeechEQ evaluation prompt file (forced-choice rounds and persona
    conditions); the default is the packaged English one."""
    return _prompt_file("EYT_SPEECH_EVAL_PROMPTS", "speech_eval_en.yaml")


@lru_cache(maxsize=16)
def _load(path: str, mtime: float, keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"prompt file {path}: expected a mapping of prompt names, got {type(data).__name__}")
    missing = [key for key in keys if not isinstance(data.get(key), dict) or "system" not in data[key]]
    if missing:
        raise ValueError(f"prompt file {path}: missing prompt(s) {missing}, each with at least a 'system' text")
    return {key: data[key] for key in keys}


def load_prompts(path: Path | None = None, keys: tuple[str, ...] = PROMPT_KEYS) -> dict[str, dict[str, Any]]:
    """The named prompts of a prompt file (default: EYT-Bench's file and keys); each must have a 'system' text."""
    path = path or prompts_path()
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise FileNotFoundError(f"prompt file {path} does not exist (check EYT_PROMPTS / EYT_SPEECH_PROMPTS)") from None
    return _load(str(path), mtime, tuple(keys))


def prompt_hash(*keys: str, path: Path | None = None) -> str:
    """A short hash of the named prompt templates (their exact text) in the file at `path` (default EYT's)."""
    prompts = load_prompts(path, keys)
    payload = json.dumps({key: prompts[key] for key in keys}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def render(key: str, part: str, path: Path | None = None, **fields: Any) -> str:
    """Fill a template's placeholders; the taxonomy lists are always available."""
    template = load_prompts(path, (key,))[key].get(part, "")
    return template.format(**TAXONOMY_FIELDS, **fields)
