"""EYT-Bench's prompt file: its keys, where it is, and rendering with the taxonomy lists always at hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eyt_dagster.core import prompts
from eyt_dagster.eyt_bench.taxonomy import EMOTIONS, EXPLICIT_INTENTS, LATENT_INTENTS

PROMPT_KEYS = ("seed_generation", "simulator", "perception", "target", "judge_turn", "judge_final")
# The simulator audit's model check: read only when the slate names a simulator_audit_model, so a prompt file
# without this section serves every other role.
AUDIT_PROMPT_KEY = "simulator_audit"
TAXONOMY_FIELDS = {
    "emotions": ", ".join(EMOTIONS),
    "explicit_intents": ", ".join(EXPLICIT_INTENTS),
    "latent_intents": ", ".join(LATENT_INTENTS),
}


def prompts_path() -> Path:
    """`EYT_PROMPTS` names a prompt file; the default is the packaged English one."""
    return prompts.prompt_file("EYT_PROMPTS", "default_en.yaml")


def load_prompts() -> dict[str, dict[str, Any]]:
    return prompts.load_prompts(prompts_path(), PROMPT_KEYS)


def prompt_hash(*keys: str) -> str:
    """A short hash of the named EYT-Bench templates (part of the code version of the assets using them)."""
    return prompts.prompt_hash(*keys, path=prompts_path())


def render(key: str, part: str, **fields: Any) -> str:
    """Fill a template's placeholders; the taxonomy lists are always available."""
    return prompts.render(key, part, path=prompts_path(), **TAXONOMY_FIELDS, **fields)
