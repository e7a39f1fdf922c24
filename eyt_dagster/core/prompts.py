"""Prompt templates: loaded from a YAML file of named prompts, rendered with named placeholders, hashed.

The hash of the templates an asset uses is part of that asset's `code_version`, so editing a prompt makes
exactly the partitions that depend on it stale (docs/operations.md#code-versions). Each benchmark names its
own files and keys (eyt_bench/prompts.py, speech_eq/prompts.py); an environment variable may point a file
elsewhere.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

import yaml

from eyt_dagster.core.env_settings import FileFamily


def prompt_file(family: FileFamily, language: str) -> Path:
    """The prompt file of `language` the family's environment variable names (EYT_PROMPTS, EYT_PROMPTS_ZH, ...),
    else the family's packaged file of that language."""
    override = family.get(language)
    if override is not None:
        return override
    packaged = family.packaged.format(language=language)
    return Path(str(importlib_resources.files("eyt_dagster") / "prompts" / packaged))


@lru_cache(maxsize=16)
def _parsed(path: str, mtime: float) -> Any:
    """The file's YAML, parsed once per process and version of the file (a prompt file takes tens of milliseconds
    to parse, and every step asks for its own keys of it)."""
    return yaml.safe_load(Path(path).read_text())


def _load(path: str, mtime: float, keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    data = _parsed(path, mtime)
    if not isinstance(data, dict):
        raise ValueError(f"prompt file {path}: expected a mapping of prompt names, got {type(data).__name__}")
    missing = [key for key in keys if not isinstance(data.get(key), dict) or "system" not in data[key]]
    if missing:
        raise ValueError(f"prompt file {path}: missing prompt(s) {missing}, each with at least a 'system' text")
    return {key: data[key] for key in keys}


def load_prompts(path: Path, keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The named prompts of the prompt file at `path`; each must have a 'system' text."""
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise FileNotFoundError(
            f"prompt file {path} does not exist (check EYT_PROMPTS / EYT_SPEECH_PROMPTS / EYT_SPEECH_EVAL_PROMPTS)"
        ) from None
    return _load(str(path), mtime, tuple(keys))


def prompt_hash(*keys: str, path: Path) -> str:
    """A short hash of the named prompt templates (their exact text) in the file at `path`."""
    prompts = load_prompts(path, keys)
    payload = json.dumps({key: prompts[key] for key in keys}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def render(key: str, part: str, *, path: Path, **fields: Any) -> str:
    """Fill the placeholders of one part of the template `key` in the file at `path`."""
    template = load_prompts(path, (key,))[key].get(part, "")
    return str(template.format(**fields))
