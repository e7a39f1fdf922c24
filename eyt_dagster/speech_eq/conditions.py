"""Persona conditions of the SpeechEQ forced-choice test (paper §4 'safety trap', App. E; docs/method.md): the
system prompt a target evaluates under. The names are fixed here; the prompt texts live in the evaluation
prompt file (prompts/speech_eval_en.yaml, key `conditions`), written in the project's own words."""

from __future__ import annotations

from eyt_dagster.speech_eq.vocabulary import COMPOSITES

DEFAULT_CONDITION = "default"
# default: a plain assistant; adaptive: an emotionally adaptive listener; global_deficit: a listener who
# rewards hostile, loud delivery everywhere; deficit_<composite>: a listener lacking one EQ-i composite.
CONDITIONS: tuple[str, ...] = (
    DEFAULT_CONDITION,
    "adaptive",
    "global_deficit",
    *(f"deficit_{composite}" for composite in COMPOSITES),
)
