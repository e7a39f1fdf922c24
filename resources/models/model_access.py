"""The model-access resource (key `eyt`): the slate, the call cache and ledger, the embedding cache, and a chat
client for any model the slate names. It knows no benchmark: each benchmark's roles are built from it by
resources/roles/eyt_roles.py and resources/roles/speech_roles.py."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import ConfigurableResource, InitResourceContext

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.result_cache import ResultStore
from eyt_dagster.core.samples import sample_seed
from resources.models.cache_backend import CacheBackend, cache_backend, open_call_cache, open_embedding_cache
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.runs.processes import process_tags
from resources.storage.report_cache import open_report_cache
from resources.storage.warehouse_views import WAREHOUSE_FILE
from resources.text.embedding_cache import EmbeddingCache
from resources.text.embedding_cache import cache_enabled as embedding_cache_enabled
from resources.text.embedding_queue import EarlyEmbeddings

if TYPE_CHECKING:
    from eyt_dagster.slate import Slate


class ModelAccess(ConfigurableResource["ModelAccess"]):
    """Everything a run needs to know about the slate and how to reach its models.

    `slate_path` is read when a run starts, so editing the slate needs no code reload for settings;
    the call cache sits beside the warehouse in `data_dir`, never inside it.
    """

    slate_path: str
    data_dir: str

    @cached_property
    def slate(self) -> Slate:
        # read when first asked (a run's first step), not when the assets are imported: importing a benchmark's
        # assets loads none of the other benchmark's code
        from eyt_dagster.slate import load_slate

        return load_slate(self.slate_path)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """When a run starts: tag the run with this process, for the dead-run check (eyt_dagster/ops/dead_runs.py),
        and open the call cache where the run's instance says. The code location uses a subclass that also records
        the slate's settings (eyt_dagster/settings_sources.py: TrackedModelAccess)."""
        backend = cache_backend(context.instance)
        self.__dict__["cache_backend"] = backend  # the cached_property below, decided by the run's instance
        if backend.kind == "postgres" and context.log is not None:
            context.log.info(f"call cache and ledger: {backend.describe(self.data_dir)}")
        if context.instance is None:
            return
        if context.run_id:
            context.instance.add_run_tags(context.run_id, process_tags())

    @property
    def warehouse(self) -> Path:
        return Path(self.data_dir) / WAREHOUSE_FILE

    @cached_property
    def cache_backend(self) -> CacheBackend:
        """Where the call cache, ledger and embedding cache live: the run's instance decides (setup_for_execution
        sets this when a run starts); outside a run there is no instance (resources/models/cache_backend.py)."""
        return cache_backend(None)

    @cached_property
    def cache(self) -> CallCache:
        return open_call_cache(self.data_dir, self.cache_backend)

    @cached_property
    def embedding_cache(self) -> EmbeddingCache | None:
        """The persistent embedding store beside the call cache, or None unless EYT_EMBEDDING_CACHE=on."""
        return open_embedding_cache(self.data_dir, self.cache_backend) if embedding_cache_enabled() else None

    @cached_property
    def report_cache(self) -> ResultStore:
        """The reports' stored per-cell and per-pair results (resources/storage/report_cache.py), beside the call cache (none
        kept when the call cache is on Postgres: then machines may share the data directory)."""
        return open_report_cache(self.data_dir, shared_by_machines=self.cache_backend.kind == "postgres")

    def early_embeddings(self, model_name: str) -> EarlyEmbeddings:
        """The process's background encoder for `model_name`, with the embedding cache: a step hands texts over
        as they appear and a later step takes their vectors (resources/text/embedding_queue.py)."""
        return EarlyEmbeddings(model_name, self.embedding_cache)

    def client(self, ref: ModelRef, role: str, run_id: str | None, repeat: int = 0) -> OpenAIChatClient:
        """A chat client for one model in one ledger role (simulator, target, judge, speech_target...); for the
        sample `repeat` of a repeated slate it sends the seed `sample_seed(slate seed, repeat)`."""
        seed = sample_seed(self.slate.seed, repeat)
        return OpenAIChatClient(
            ref, role=role, cache=self.cache, seed=seed, run_id=run_id, repeat=repeat, clip_dir=self.data_dir
        )
