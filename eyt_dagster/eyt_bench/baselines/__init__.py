"""Embedded baselines: rule-based roles that need no key and no network.

They are real, deterministic baselines (an agenda-based user simulator, a reflective and a terse target,
a rubric-heuristic judge), named as baselines in every report; they are not language models and their
scores are never model evaluations. A slate selects one with `provider: embedded` and `model: <name>`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, overload

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.eyt_bench.baselines.judge import RubricJudge
from eyt_dagster.eyt_bench.baselines.simulator import AgendaSimulator
from eyt_dagster.eyt_bench.baselines.targets import ReflectiveTarget, TerseTarget
from eyt_dagster.eyt_bench.role_protocols import Judge, Simulator, Target

# role -> embedded model name -> constructor(ref, seed, scale, language)
Maker = Callable[[ModelRef, int, tuple[float, ...], str], Simulator | Target | Judge]
EMBEDDED: dict[str, dict[str, Maker]] = {
    "simulator": {"agenda-simulator": lambda ref, seed, scale, lang: AgendaSimulator(ref.id, seed, lang)},
    "target": {
        "reflective": lambda ref, seed, scale, lang: ReflectiveTarget(ref.id, deliberate=ref.thinking, language=lang),
        "terse": lambda ref, seed, scale, lang: TerseTarget(ref.id, lang),
    },
    "judge": {
        "rubric-heuristic": lambda ref, seed, scale, lang: RubricJudge(ref.id, scale, language=lang),
        "rubric-heuristic-strict": lambda ref, seed, scale, lang: RubricJudge(ref.id, scale, "strict", lang),
        "rubric-heuristic-lenient": lambda ref, seed, scale, lang: RubricJudge(ref.id, scale, "lenient", lang),
    },
}


@overload
def make_embedded(
    role: Literal["simulator"], ref: ModelRef, *, seed: int, scale: tuple[float, ...], language: str = ...
) -> Simulator: ...
@overload
def make_embedded(
    role: Literal["target"], ref: ModelRef, *, seed: int, scale: tuple[float, ...], language: str = ...
) -> Target: ...
@overload
def make_embedded(
    role: Literal["judge"], ref: ModelRef, *, seed: int, scale: tuple[float, ...], language: str = ...
) -> Judge: ...
@overload
def make_embedded(
    role: str, ref: ModelRef, *, seed: int, scale: tuple[float, ...], language: str = ...
) -> Simulator | Target | Judge: ...


def make_embedded(
    role: str, ref: ModelRef, *, seed: int, scale: tuple[float, ...], language: str = "en"
) -> Simulator | Target | Judge:
    """Build the embedded baseline `ref.model` for `role`, speaking `language`; its model_id is `ref.id`."""
    if role not in EMBEDDED:
        raise ValueError(f"unknown role '{role}' for model '{ref.id}'; roles are {sorted(EMBEDDED)}")
    models = EMBEDDED[role]
    if ref.model not in models:
        available = ", ".join(f"{r}: {sorted(m)}" for r, m in EMBEDDED.items())
        raise ValueError(
            f"model '{ref.id}' asks for embedded {role} '{ref.model}', which does not exist; "
            f"available embedded models are {available} (or use provider: openai for a real model)"
        )
    return models[ref.model](ref, seed, scale, language)


__all__ = ["EMBEDDED", "AgendaSimulator", "ReflectiveTarget", "RubricJudge", "TerseTarget", "make_embedded"]
