"""Where the call cache, the call ledger and the embedding cache live: SQLite files under the data directory, or the
Postgres database of the Dagster instance (docs/storage.md#the-call-cache-on-postgres says why and what it costs).

The rule follows the instance, so a cluster that keeps its runs in Postgres also keeps its calls there, with no
second setting to forget: `EYT_CACHE_BACKEND` is `auto` (the default: Postgres when the instance's run storage is
Postgres, else SQLite), `postgres` (the same, but an instance that is not on Postgres is an error) or `sqlite`
(always the files; only for machines that do not share the data directory). The Postgres URL, with its password,
comes from the instance (which read it from the DAGSTER_PG_* variables or its postgres_url); it is never logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eyt_dagster.core import env_settings
from resources.models.call_cache import CallCache
from resources.text.embedding_cache import EMBEDDING_CACHE_FILE, EmbeddingCache

BACKEND_ENV = env_settings.CACHE_BACKEND.name
BACKEND_CHOICES = env_settings.CACHE_BACKENDS
CALL_CACHE_FILE = "cache/model_calls.sqlite"


class CacheBackendError(ValueError):
    """EYT_CACHE_BACKEND asks for what the Dagster instance cannot give."""


@dataclass(frozen=True)
class CacheBackend:
    """`sqlite`: files under the data directory; `postgres`: schema `eyt` of the instance's database."""

    kind: Literal["sqlite", "postgres"]
    postgres_url: str | None = field(default=None, repr=False)  # holds the password: not in repr

    def describe(self, data_dir: str | Path) -> str:
        """Where the rows go, for a log line (no credentials)."""
        if self.kind == "sqlite":
            return f"SQLite files under {Path(data_dir) / 'cache'}"
        from resources.models.postgres_stores import SCHEMA_NAME
        from resources.storage.postgres_db import describe_url

        assert self.postgres_url is not None
        return f"Postgres {describe_url(self.postgres_url)}, schema {SCHEMA_NAME} (the Dagster instance's database)"


def instance_postgres_url(instance: Any) -> str | None:
    """The URL of the instance's run storage when it is dagster-postgres (`storage: postgres` or a Postgres
    `run_storage`), else None."""
    if instance is None:
        return None
    storage = instance.run_storage
    if not type(storage).__module__.startswith("dagster_postgres"):
        return None
    url = getattr(storage, "postgres_url", None)
    return url if isinstance(url, str) and url else None


def cache_backend(instance: Any = None) -> CacheBackend:
    """The backend for runs of `instance` (None: no instance, e.g. a resource built outside a run) under the
    EYT_CACHE_BACKEND setting."""
    try:
        choice = env_settings.CACHE_BACKEND.get()
    except env_settings.SettingError as exc:
        raise CacheBackendError(
            f"{exc}; unset it to keep the call cache where the Dagster instance keeps its runs (docs/storage.md)"
        ) from None
    if choice == "sqlite":
        return CacheBackend("sqlite")
    url = instance_postgres_url(instance)
    if url is not None:
        return CacheBackend("postgres", url)
    if choice == "postgres":
        where = "no Dagster instance" if instance is None else "a Dagster instance whose run storage is not Postgres"
        raise CacheBackendError(
            f"{BACKEND_ENV}=postgres, but this process runs with {where} (DAGSTER_HOME="
            f"{env_settings.DAGSTER_HOME.raw() or 'unset'}): the call cache uses the instance's Postgres database. "
            f"Give the instance `storage: postgres` in DAGSTER_HOME/dagster.yaml (as deploy/dagster.yaml does), or "
            f"unset {BACKEND_ENV} on a single machine"
        )
    return CacheBackend("sqlite")


def open_call_cache(data_dir: str | Path, backend: CacheBackend) -> CallCache:
    """The call cache and ledger: `data_dir/cache/model_calls.sqlite`, or the Postgres tables."""
    if backend.kind == "postgres":
        from resources.models.postgres_stores import PostgresCallStore

        assert backend.postgres_url is not None
        return CallCache(store=PostgresCallStore(backend.postgres_url))
    path = Path(data_dir) / CALL_CACHE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    return CallCache(path)


def open_embedding_cache(data_dir: str | Path, backend: CacheBackend) -> EmbeddingCache:
    """The embedding cache: `data_dir/cache/embeddings.sqlite`, or the Postgres table."""
    if backend.kind == "postgres":
        from resources.models.postgres_stores import PostgresEmbeddingStore

        assert backend.postgres_url is not None
        return EmbeddingCache(store=PostgresEmbeddingStore(backend.postgres_url))
    return EmbeddingCache(Path(data_dir) / EMBEDDING_CACHE_FILE)
