"""The benchmark resource: the slate, the call cache, and the chat clients the role factories build roles with."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext

from eyt_dagster.core.slate import ModelRef, Slate, load_slate
from eyt_dagster.eyt_bench.role_factory import EytRoles
from eyt_dagster.eyt_bench.role_protocols import Judge, Simulator, Target
from eyt_dagster.speech_eq.evaluation import SpeechChooser
from eyt_dagster.speech_eq.generators import SpeechGenerator
from eyt_dagster.speech_eq.role_factory import SpeechRoles
from resources.cache_backend import CacheBackend, cache_backend, open_call_cache, open_embedding_cache
from resources.call_cache import CallCache
from resources.chat_client import OpenAIChatClient
from resources.clip_analysis import ClipAnalysisStore
from resources.embedding_cache import EmbeddingCache
from resources.embedding_cache import cache_enabled as embedding_cache_enabled
from resources.warehouse import WAREHOUSE_FILE


class BenchmarkResource(ConfigurableResource):
    """Everything a run needs to know about the slate and how to reach its models.

    `slate_path` is read when a run starts, so editing the slate needs no code reload for settings;
    the call cache sits beside the warehouse in `data_dir`, never inside it.
    """

    slate_path: str
    data_dir: str

    @cached_property
    def slate(self) -> Slate:
        return load_slate(self.slate_path)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """When a run starts (before any step reads its inputs' versions): tag the run with this process, for the
        dead-run check, and record the slate's per-target and per-pool settings that changed, so the partitions
        this run writes name the settings they were computed with (docs/operations.md)."""
        from eyt_dagster.ops.dead_runs import process_tags
        from eyt_dagster.settings_sources import record_settings

        backend = cache_backend(context.instance)
        self.__dict__["cache_backend"] = backend  # the cached_property below, decided by the run's instance
        if backend.kind == "postgres" and context.log is not None:
            context.log.info(f"call cache and ledger: {backend.describe(self.data_dir)}")
        if context.instance is None:
            return
        if context.run_id:
            context.instance.add_run_tags(context.run_id, process_tags())
        record_settings(context.instance, self.slate)

    @property
    def warehouse(self) -> Path:
        return Path(self.data_dir) / WAREHOUSE_FILE

    @cached_property
    def cache_backend(self) -> CacheBackend:
        """Where the call cache, ledger and embedding cache live: the run's instance decides (setup_for_execution
        sets this when a run starts); outside a run there is no instance (resources/cache_backend.py)."""
        return cache_backend(None)

    @cached_property
    def cache(self) -> CallCache:
        return open_call_cache(self.data_dir, self.cache_backend)

    @cached_property
    def embedding_cache(self) -> EmbeddingCache | None:
        """The persistent embedding store beside the call cache, or None unless EYT_EMBEDDING_CACHE=on."""
        return open_embedding_cache(self.data_dir, self.cache_backend) if embedding_cache_enabled() else None

    @cached_property
    def clip_analyses(self) -> ClipAnalysisStore:
        """Cascades' per-clip transcripts, voice measures and emotion outputs, under the data dir's cache folder."""
        return ClipAnalysisStore(self.data_dir)

    def _client(self, ref: ModelRef, role: str, run_id: str | None) -> OpenAIChatClient:
        return OpenAIChatClient(ref, role=role, cache=self.cache, seed=self.slate.seed, run_id=run_id)

    def eyt_roles(self) -> EytRoles:
        return EytRoles(self.slate, self._client)

    def speech_roles(self) -> SpeechRoles:
        return SpeechRoles(self.slate, self._client, self.clip_analyses)

    # The roles the assets ask for, built by the benchmarks' role factories (eyt_bench/role_factory.py,
    # speech_eq/role_factory.py).
    def simulator(self, run_id: str | None = None) -> Simulator:
        return self.eyt_roles().simulator(run_id)

    def target(self, target_id: str, run_id: str | None = None) -> Target:
        return self.eyt_roles().target(target_id, run_id)

    def judges(self, run_id: str | None = None) -> list[Judge]:
        return self.eyt_roles().judges(run_id)

    def replacement_judge(self, run_id: str | None = None) -> Judge | None:
        """The cross-judge ablation's judge of a third family, when the slate names one."""
        return self.eyt_roles().replacement_judge(run_id)

    def speech_generator(self, run_id: str | None = None) -> SpeechGenerator:
        return self.speech_roles().speech_generator(run_id)

    def speech_target(self, target_id: str, run_id: str | None = None) -> SpeechChooser:
        return self.speech_roles().speech_target(target_id, run_id)

    def tts(self):
        return self.speech_roles().tts()
