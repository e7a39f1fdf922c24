"""Prompt templates: loaded from one YAML per language, rendered with named placeholders, hashed.

The hash of the templates an asset uses is part of that asset's `code_version`, so editing a prompt makes
exactly the partitions that depend on it stale (DAGSTER_NOTES.md, "Staleness after prompt changes").
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

from eyt_dagster.taxonomy import EMOTIONS, EXPLICIT_INTENTS, LATENT_INTENTS

PROMPT_KEYS = ("seed_generation", "simulator", "perception", "target", "judge_turn", "judge_final")
TAXONOMY_FIELDS = {
    "emotions": ", ".join(EMOTIONS),
    "explicit_intents": ", ".join(EXPLICIT_INTENTS),
    "latent_intents": ", ".join(LATENT_INTENTS),
}


def prompts_path() -> Path:
    """`EYT_PROMPTS` names a prompt file; the default is the packaged English one."""
    override = os.environ.get("EYT_PROMPTS")
    if override:
        return Path(override)
    return Path(str(importlib_resources.files("eyt_dagster") / "prompts" / "default_en.yaml"))


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict[str, dict[str, str]]:
    data = yaml.safe_load(Path(path).read_text())
    missing = [key for key in PROMPT_KEYS if not isinstance(data.get(key), dict) or "system" not in data[key]]
    if missing:
        raise ValueError(f"prompt file {path}: missing prompt(s) {missing}, each with at least a 'system' text")
    return {key: data[key] for key in PROMPT_KEYS}


def load_prompts(path: Path | None = None) -> dict[str, dict[str, str]]:
    path = path or prompts_path()
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise FileNotFoundError(f"prompt file {path} does not exist (check EYT_PROMPTS)") from None
    return _load(str(path), mtime)


def prompt_hash(*keys: str, path: Path | None = None) -> str:
    """A short hash of the named prompt templates (their exact text)."""
    prompts = load_prompts(path)
    payload = json.dumps({key: prompts[key] for key in keys}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def render(key: str, part: str, path: Path | None = None, **fields: Any) -> str:
    """Fill a template's placeholders; the taxonomy lists are always available."""
    template = load_prompts(path)[key].get(part, "")
    return template.format(**TAXONOMY_FIELDS, **fields)
