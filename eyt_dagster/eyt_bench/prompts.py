"""EYT-Bench's prompt files: their keys, where they are, and rendering with the taxonomy lists always at hand.

There is one file per language (`default_<language>.yaml`); a pool's language picks the file its prompts come
from (docs/languages.md). `EYT_PROMPTS` replaces the English file, `EYT_PROMPTS_ZH` the Chinese one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eyt_dagster.core import prompts
from eyt_dagster.core.env_settings import PROMPTS
from eyt_dagster.core.languages import DEFAULT_LANGUAGE, LANGUAGES
from eyt_dagster.eyt_bench.label_names import glossed
from eyt_dagster.eyt_bench.taxonomy import EMOTIONS, EXPLICIT_INTENTS, LATENT_INTENTS

PROMPT_KEYS = ("seed_generation", "simulator", "perception", "target", "judge_turn", "judge_final")
# The simulator audit's model check: read only when the slate names a simulator_audit_model, so a prompt file
# without this section serves every other role.
AUDIT_PROMPT_KEY = "simulator_audit"
TRANSCRIPT_KEY = "transcript"


def taxonomy_fields(language: str = DEFAULT_LANGUAGE) -> dict[str, str]:
    """The label lists every template may use, as that language's prompts show them."""
    return {
        "emotions": glossed(EMOTIONS, language),
        "explicit_intents": glossed(EXPLICIT_INTENTS, language),
        "latent_intents": glossed(LATENT_INTENTS, language),
    }


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f"no EYT-Bench prompts for language '{language}'; the languages are {list(LANGUAGES)}")


def prompts_path(language: str = DEFAULT_LANGUAGE) -> Path:
    """The prompt file of `language`: `EYT_PROMPTS` (English) or `EYT_PROMPTS_<LANG>` names one, else the
    packaged `default_<language>.yaml`."""
    _check_language(language)
    return prompts.prompt_file(PROMPTS, language)


def load_prompts(language: str = DEFAULT_LANGUAGE) -> dict[str, dict[str, Any]]:
    return prompts.load_prompts(prompts_path(language), PROMPT_KEYS)


def prompt_hash(*keys: str, language: str = DEFAULT_LANGUAGE) -> str:
    """A short hash of the named EYT-Bench templates of one language (recorded in the rows that used them)."""
    return prompts.prompt_hash(*keys, path=prompts_path(language))


def code_version_hash(*keys: str) -> str:
    """The hash an asset's code version carries: the English templates' hash as it always was, followed by each
    other language's, so editing a prompt in any language marks the assets that use it stale (a code version is
    per asset, not per partition; a partition whose own prompts did not change is then served by the call cache)."""
    hashes = [prompt_hash(*keys, language=language) for language in LANGUAGES]
    return "-".join(hashes)


def render(key: str, part: str, language: str = DEFAULT_LANGUAGE, **fields: Any) -> str:
    """Fill a template's placeholders; the taxonomy lists are always available."""
    return prompts.render(key, part, path=prompts_path(language), **taxonomy_fields(language), **fields)


def transcript_labels(language: str = DEFAULT_LANGUAGE) -> dict[str, str]:
    """How a transcript's lines are labelled in `language` (the prompt file's `transcript` section)."""
    section = prompts.load_prompts(prompts_path(language), (TRANSCRIPT_KEY,))[TRANSCRIPT_KEY]
    return {part: str(section.get(part, "")) for part in ("turn", "user", "assistant", "empty")}
