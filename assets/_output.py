"""Shared helpers that turn a DataFrame into an asset output with metadata and a content data version."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, DataVersion, MetadataValue, Output

from eyt_dagster.core import explorer_links
from eyt_dagster.core.errors import budget_stops, failures_line
from eyt_dagster.core.replies import CallStats

VOLATILE_COLUMNS = ("created_at", "latency_s", "target_latency_s", "simulator_latency_s", "judge_latency_s")
PREVIEW_ROWS = 10
PREVIEW_CELL_CHARS = 60


def explorer_link(path: str) -> dict[str, Any]:
    """Metadata `explorer`: the URL of the `eyt view` page that shows this partition's rows (path from
    eyt_dagster/core/explorer_links.py; the address from EYT_VIEW_URL). None when EYT_VIEW_URL is not an address
    (the error says so in the metadata instead of failing the step)."""
    try:
        return {"explorer": MetadataValue.url(explorer_links.absolute(path))}
    except ValueError as exc:
        return {"explorer": MetadataValue.text(f"no link: {exc}")}


def table_of(context: AssetExecutionContext) -> str:
    """The warehouse table an asset writes: its key as "schema.table" (dialogue/chat_seeds -> dialogue.chat_seeds)."""
    return ".".join(context.asset_key.path)


def now_utc() -> pd.Timestamp:
    return pd.Timestamp(datetime.now(UTC)).tz_localize(None)


def content_version(df: pd.DataFrame) -> DataVersion:
    """A hash of the rows minus timestamps and timings, so an identical re-run does not make
    downstream partitions stale (docs/operations.md#what-makes-a-result-stale)."""
    stable = df.drop(columns=[c for c in VOLATILE_COLUMNS if c in df.columns])
    digest = hashlib.sha256(pd.util.hash_pandas_object(stable.astype(str), index=False).values.tobytes())
    return DataVersion(digest.hexdigest()[:16])


def values_version(df: pd.DataFrame) -> DataVersion:
    """A hash of the rows minus timestamps and timings in their own types (floats by their bits, text as text) and
    of the column names: content_version without turning every value to text first, which takes about a second for
    a table of 90,000 rows (the pairwise comparisons at 100 targets). A different digest of the same rows than
    content_version's, so a table moved from one to the other gets a new data version once."""
    stable = df.drop(columns=[c for c in VOLATILE_COLUMNS if c in df.columns])
    digest = hashlib.sha256("\x1f".join(map(str, stable.columns)).encode())
    digest.update(pd.util.hash_pandas_object(stable, index=False).to_numpy().tobytes())
    return DataVersion(digest.hexdigest()[:16])


def markdown_preview(df: pd.DataFrame, rows: int = PREVIEW_ROWS) -> MetadataValue:
    """The first rows as a markdown table, long text cut so the UI stays readable."""
    if df.empty:
        return MetadataValue.md("_no rows_")
    head = df.head(rows).copy()
    for col in head.columns:
        if head[col].dtype == object:
            head[col] = head[col].astype(str).str.slice(0, PREVIEW_CELL_CHARS)
    return MetadataValue.md(head.to_markdown(index=False, floatfmt=".3g"))


def stats_metadata(role: str, stats: CallStats) -> dict[str, object]:
    """Calls, cache hits, tokens and cost of one role, for the materialisation's metadata; the reasoning tokens, the
    replies cut at max_tokens and what the provider's profile or refusals changed in the requests, where there are."""
    meta: dict[str, object] = {
        f"{role}_calls": stats.calls,
        f"{role}_cache_hits": stats.cache_hits,
        f"{role}_tokens": stats.tokens_in + stats.tokens_out,
        f"{role}_cost_usd": round(stats.cost_usd, 6),
    }
    if stats.reasoning_tokens:
        meta[f"{role}_reasoning_tokens"] = stats.reasoning_tokens
    if stats.cut_replies:
        meta[f"{role}_cut_replies"] = stats.cut_replies
    if stats.adaptations:
        meta[f"{role}_adaptations"] = "; ".join(stats.adaptations)
    return meta


def table_output(df: pd.DataFrame, **metadata: Any) -> Output[pd.DataFrame]:
    """Wrap a table: row count, preview, error count (when the table has an `error` column), extras."""
    return _output(df, content_version(df), metadata)


def large_table_output(df: pd.DataFrame, **metadata: Any) -> Output[pd.DataFrame]:
    """table_output with values_version as the data version: for a large table no asset reads."""
    return _output(df, values_version(df), metadata)


def _output(df: pd.DataFrame, version: DataVersion, metadata: dict[str, Any]) -> Output[pd.DataFrame]:
    meta: dict[str, Any] = {"dagster/row_count": len(df), "preview": markdown_preview(df)}
    if "error" in df.columns:
        errors = df[df["error"].notna()]
        meta["error_rows"] = len(errors)
        if len(errors):  # what `eyt refresh` and the run summary say about the partition (eyt_dagster/staleness.py)
            meta["failures"] = failures_line(errors)
            meta["budget_rows"] = int(budget_stops(errors).sum())  # stopped by a spend cap: not failed
    meta.update(metadata)
    return Output(df, metadata=meta, data_version=version)
