"""The EYT-Bench roles a slate names, built: an embedded baseline, or a chat model through a ChatClient.


make a chat client; which class plays which role is decided here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.eyt_bench.baselines import make_embedded
from eyt_dagster.eyt_bench.chat_roles import LLMAuditor, LLMJudge, LLMSimulator, LLMTarget
from eyt_dagster.eyt_bench.role_protocols import Judge, Simulator, SimulatorAuditor, Target
from resources.models.chat_client import OpenAIChatClient
from resources.models.model_access import ModelAccess

if TYPE_CHECKING:
    from eyt_dagster.slate import Slate


class EytRoles:
    """The simulator, targets and judges of one slate."""

    def __init__(self, slate: Slate, models: ModelAccess) -> None:
        self.slate = slate
        self._models = models

    def _client(self, ref: ModelRef, role: str, run_id: str | None, repeat: int = 0) -> OpenAIChatClient:
        return self._models.client(ref, role, run_id, self.slate.seed, repeat, budget=self.slate.spend_budget())

    def _language(self, pool: str | None) -> str:
        return self.slate.pool_language(pool) if pool is not None else DEFAULT_LANGUAGE

    def simulator(self, run_id: str | None = None, pool: str | None = None) -> Simulator:
        """The user simulator, speaking the language of `pool` (English when no pool is named)."""
        ref = self.slate.simulator
        if ref.is_baseline:
            return make_embedded(
                "simulator", ref, seed=self.slate.seed, scale=self.slate.scale, language=self._language(pool)
            )
        return LLMSimulator(self._client(ref, "simulator", run_id), self._language(pool))

    def target(self, target_id: str, run_id: str | None = None, repeat: int = 0, pool: str | None = None) -> Target:
        """The target; for `repeat` r > 0 its r-th sample (another seed and cache keys; an embedded baseline does
        not sample, so each of its repeats answers alike). Its prompts are in the language of `pool`."""
        return self.target_for(self.slate.target_of("eyt_bench", target_id), run_id, repeat, pool)

    def target_for(self, ref: ModelRef, run_id: str | None = None, repeat: int = 0, pool: str | None = None) -> Target:
        """A model as EYT-Bench's text target (the spoken EYT-Bench's text control and cascades read through it)."""
        if ref.is_baseline:
            return make_embedded(
                "target", ref, seed=self.slate.seed, scale=self.slate.scale, language=self._language(pool)
            )
        return LLMTarget(self._client(ref, "target", run_id, repeat), self._language(pool))

    def judge_language(self, pool: str | None) -> str:
        """The language of the judges' prompts for `pool`: English for an English pool; for a pool played in Chinese,
        the slate's `judge_prompt_language` (docs/languages.md#the-judges-prompt-language)."""
        return self.slate.judge_language(pool) if pool is not None else DEFAULT_LANGUAGE

    def _judge(self, ref: ModelRef, run_id: str | None, repeat: int = 0, pool: str | None = None) -> Judge:
        if ref.is_baseline:
            # a rule judge reads the conversation's own words: the pool's language, whatever the prompts' setting
            return make_embedded(
                "judge", ref, seed=self.slate.seed, scale=self.slate.scale, language=self._language(pool)
            )
        return LLMJudge(self._client(ref, "judge", run_id, repeat), self.slate.scale, self.judge_language(pool))

    def judges(self, run_id: str | None = None, repeat: int = 0, pool: str | None = None) -> list[Judge]:
        """The slate's judges; for `repeat` q > 0 their q-th sample of every verdict."""
        return [self._judge(ref, run_id, repeat, pool) for ref in self.slate.judges]

    def replacement_judge(self, run_id: str | None = None, pool: str | None = None) -> Judge | None:
        """The cross-judge ablation's judge of a third family, when the slate names one."""
        ref = self.slate.replacement_judge
        return self._judge(ref, run_id, pool=pool) if ref else None

    def simulator_auditor(self, run_id: str | None = None, pool: str | None = None) -> SimulatorAuditor | None:
        """The simulator audit's model check, when the slate names a model for it (always a chat model)."""
        ref = self.slate.simulator_audit_model
        return LLMAuditor(self._client(ref, "simulator_audit", run_id), self._language(pool)) if ref else None
