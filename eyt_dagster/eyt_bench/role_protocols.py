"""The three roles of EYT-Bench, and the simulator audit's optional model check.

Both the embedded baselines (eyt_dagster.eyt_bench.baselines) and the LLM-backed roles (eyt_dagster.eyt_bench.chat_roles)
implement these protocols, so the dialogue loop and the assets never know which one they drive.
"""

from __future__ import annotations

from typing import Protocol

from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.types import (
    AuditedTurn,
    AuditVerdict,
    ChatSeed,
    ChatSeedContent,
    Exchange,
    FinalVerdict,
    PersonaRecord,
    SimulatorTurn,
    TurnScores,
    UserLabels,
)


class Simulator(Protocol):
    """The user simulator M_u: writes ChatSEEDs and, per turn, the next user message (Alg. 1, line 7)."""

    model_id: str

    def generate_seed(self, persona: PersonaRecord, *, seed_id: str) -> Reply[ChatSeedContent]: ...

    def next_turn(self, seed: ChatSeed, history: list[Exchange]) -> Reply[SimulatorTurn]: ...


class Target(Protocol):
    """The model under test M_t. Perception and generation are separate calls (Alg. 1, lines 4-5)."""

    model_id: str

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]: ...

    def respond(self, history: list[Exchange], query: str) -> Reply[str]: ...


class Judge(Protocol):
    """The third-party judge: 15 sub-indicators per turn and a final-intent verdict per dialogue."""

    model_id: str

    def score_turn(self, seed: ChatSeed, history: list[Exchange], turn: int) -> Reply[TurnScores]: ...

    def judge_final(self, seed: ChatSeed, history: list[Exchange]) -> Reply[FinalVerdict]: ...


class SimulatorAuditor(Protocol):
    """The simulator audit's model check: one call per simulator turn (eyt_bench/simulator_audit.py)."""

    model_id: str

    def check_turn(self, turn: AuditedTurn) -> Reply[AuditVerdict]: ...
