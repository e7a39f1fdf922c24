"""The resources the assets take, each for what an asset touches; none knows a benchmark:

* `slate` (`SlateAccess`): the slate, read from its path when a run first asks for it; it tags every run that
  uses it with the process that executes it (the dead-run check);
* `models` (`ModelAccess`): a chat client for any model, over the call cache and ledger; each benchmark's roles
  are built from the slate and it by resources/roles/ (eyt_roles.py, speech_roles.py, voice_roles.py);
* `embeddings` (`EmbeddingAccess`): the embedding cache and the process's background encoders;
* `reports` (`ReportAccess`): the reports' result cache and the warehouse's files they read whole.

The three that store something open their store where the run's instance says (`cache_backend`, decided when the
run starts). They are flat, not nested: Dagster initialises a fully configured nested resource again inside each
resource holding it (its own setup_for_execution, its own copy), so nesting the slate would tag and record once
per holder, not once per run."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import ConfigurableResource, InitResourceContext

from eyt_dagster.core.budget import Budget
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.result_cache import ResultStore
from eyt_dagster.core.samples import sample_seed
from resources.models.cache_backend import CacheBackend, cache_backend, open_call_cache, open_embedding_cache
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.models.spend_guard import SPEND_LIMIT_TAG, SpendGuard
from resources.runs.processes import process_tags
from resources.storage.report_cache import open_report_cache
from resources.storage.warehouse_views import WAREHOUSE_FILE
from resources.text.embedding_cache import EmbeddingCache
from resources.text.embedding_cache import cache_enabled as embedding_cache_enabled
from resources.text.embedding_queue import EarlyEmbeddings

if TYPE_CHECKING:
    from eyt_dagster.slate import Slate


class SlateAccess(ConfigurableResource["SlateAccess"]):
    """The slate (key `slate`), read from `slate_path` when a run first asks for it, so editing the slate needs no
    code reload for settings. Every asset that reads the slate or asks for a role takes it (all but
    speech/speech_build_report), so its run-start work happens once in every run of them."""

    slate_path: str

    @cached_property
    def slate(self) -> Slate:
        # read when first asked (a run's first step), not when the assets are imported: importing a benchmark's
        # assets loads none of the other benchmark's code
        from eyt_dagster.slate import load_slate

        return load_slate(self.slate_path)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """When a run starts: tag the run with this process, for the dead-run check (eyt_dagster/ops/dead_runs.py).
        The code location uses a subclass that also records the slate's settings (eyt_dagster/settings_sources.py:
        TrackedSlate)."""
        if context.instance is not None and context.run_id:
            context.instance.add_run_tags(context.run_id, process_tags())


class _OnCacheBackend(ConfigurableResource["_OnCacheBackend"]):
    """A resource whose stores sit beside the warehouse in `data_dir` (never inside it), or in the Postgres
    database of the run's instance."""

    data_dir: str

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """When a run starts: open the stores where the run's instance says."""
        self.__dict__["cache_backend"] = cache_backend(context.instance)  # the cached_property below

    @cached_property
    def cache_backend(self) -> CacheBackend:
        """Where the call cache, ledger, embedding cache and report cache live: the run's instance decides
        (setup_for_execution sets this when a run starts); outside a run there is no instance
        (resources/models/cache_backend.py)."""
        return cache_backend(None)


class ModelAccess(_OnCacheBackend):
    """How to reach models (key `models`): a chat client for any model, over the call cache and ledger in
    `data_dir`; the role factories (resources/roles/) decide which model plays what."""

    def setup_for_execution(self, context: InitResourceContext) -> None:
        super().setup_for_execution(context)
        if self.cache_backend.kind == "postgres" and context.log is not None:
            context.log.info(f"call cache and ledger: {self.cache_backend.describe(self.data_dir)}")
        run = context.dagster_run
        limit = run.tags.get(SPEND_LIMIT_TAG) if run is not None else None
        # a command's --max-cost, as the ledger total its runs stop at (eyt_dagster/ops/cli.py sets the tag)
        self.__dict__["spend_limit_usd"] = float(limit) if limit else None

    @cached_property
    def spend_limit_usd(self) -> float | None:
        """The run's --max-cost limit (setup_for_execution reads it from the run's tags); none outside a run."""
        return None

    @cached_property
    def cache(self) -> CallCache:
        return open_call_cache(self.data_dir, self.cache_backend)

    @cached_property
    def _guards(self) -> dict[str, SpendGuard]:
        return {}

    def guard(self, budget: Budget) -> SpendGuard | None:
        """The process's guard of `budget` with the run's --max-cost limit over the call cache, or None when no cap
        applies (no call is then checked)."""
        budget = budget.with_limit(self.spend_limit_usd)
        if not budget.active:
            return None
        key = repr(budget)
        if key not in self._guards:
            self._guards[key] = SpendGuard(self.cache, budget)
        return self._guards[key]

    def client(
        self, ref: ModelRef, role: str, run_id: str | None, slate_seed: int, repeat: int = 0, *, budget: Budget
    ) -> OpenAIChatClient:
        """A chat client for one model in one ledger role (simulator, target, judge, speech_target...), held to the
        slate's spend caps `budget`; for the sample `repeat` of a repeated slate it sends the seed
        `sample_seed(slate_seed, repeat)`."""
        seed = sample_seed(slate_seed, repeat)
        return OpenAIChatClient(
            ref,
            role=role,
            cache=self.cache,
            seed=seed,
            run_id=run_id,
            repeat=repeat,
            clip_dir=self.data_dir,
            guard=self.guard(budget),
        )


class EmbeddingAccess(_OnCacheBackend):
    """Sentence embeddings (key `embeddings`): the opt-in embedding cache beside the call cache, and the process's
    background encoders."""

    @cached_property
    def embedding_cache(self) -> EmbeddingCache | None:
        """The persistent embedding store beside the call cache, or None unless EYT_EMBEDDING_CACHE=on."""
        return open_embedding_cache(self.data_dir, self.cache_backend) if embedding_cache_enabled() else None

    def early_embeddings(self, model_name: str) -> EarlyEmbeddings:
        """The process's background encoder for `model_name`, with the embedding cache: a step hands texts over
        as they appear and a later step takes their vectors (resources/text/embedding_queue.py)."""
        return EarlyEmbeddings(model_name, self.embedding_cache)


class ReportAccess(_OnCacheBackend):
    """What the reports read beyond their inputs (key `reports`): their stored per-cell and per-pair results and
    the warehouse's files."""

    @property
    def warehouse(self) -> Path:
        return Path(self.data_dir) / WAREHOUSE_FILE

    @cached_property
    def cache(self) -> ResultStore:
        """The reports' stored results (resources/storage/report_cache.py), beside the call cache (none kept when
        the call cache is on Postgres: then machines may share the data directory)."""
        return open_report_cache(self.data_dir, shared_by_machines=self.cache_backend.kind == "postgres")
