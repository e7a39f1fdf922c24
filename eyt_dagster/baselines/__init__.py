"""Embedded baselines: rule-based roles that need no key and no network.

They are real, deterministic baselines (an agenda-based user simulator, a reflective and a terse target,
a rubric-heuristic judge), named as baselines in every report; they are not language models and their
scores are never model evaluations. A slate selects one with `provider: embedded` and `model: <name>`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, overload

from eyt_dagster.baselines.judge import RubricJudge
from eyt_dagster.baselines.simulator import AgendaSimulator
from eyt_dagster.baselines.targets import ReflectiveTarget, TerseTarget
from eyt_dagster.config import ModelRef
from eyt_dagster.roles import Judge, Simulator, Target

# role -> embedded model name -> constructor(model_id, seed, scale)
EMBEDDED: dict[str, dict[str, Callable[[str, int, tuple[float, ...]], Simulator | Target | Judge]]] = {
    "simulator": {"agenda-simulator": lambda mid, seed, scale: AgendaSimulator(mid, seed)},
    "target": {"reflective": lambda mid, seed, scale: ReflectiveTarget(mid),
               "terse": lambda mid, seed, scale: TerseTarget(mid)},
    "judge": {"rubric-heuristic": lambda mid, seed, scale: RubricJudge(mid, scale)},
}


@overload
def make_embedded(role: Literal["simulator"], ref: ModelRef, *, seed: int, scale: tuple[float, ...]) -> Simulator: ...
@overload
def make_embedded(role: Literal["target"], ref: ModelRef, *, seed: int, scale: tuple[float, ...]) -> Target: ...
@overload
def make_embedded(role: Literal["judge"], ref: ModelRef, *, seed: int, scale: tuple[float, ...]) -> Judge: ...
@overload
def make_embedded(role: str, ref: ModelRef, *, seed: int, scale: tuple[float, ...]) -> Simulator | Target | Judge: ...


def make_embedded(role: str, ref: ModelRef, *, seed: int, scale: tuple[float, ...]) -> Simulator | Target | Judge:
    """Build the embedded baseline `ref.model` for `role`; its model_id is `ref.id`."""
    if role not in EMBEDDED:
        raise ValueError(f"unknown role '{role}' for model '{ref.id}'; roles are {sorted(EMBEDDED)}")
    models = EMBEDDED[role]
    if ref.model not in models:
        available = ", ".join(f"{r}: {sorted(m)}" for r, m in EMBEDDED.items())
        raise ValueError(
            f"model '{ref.id}' asks for embedded {role} '{ref.model}', which does not exist; "
            f"available embedded models are {available} (or use provider: openai for a real model)"
        )
    return models[ref.model](ref.id, seed, scale)


__all__ = ["EMBEDDED", "AgendaSimulator", "ReflectiveTarget", "RubricJudge", "TerseTarget", "make_embedded"]
