"""`eyt view`: a local, read-only web explorer over the warehouse's Parquet files and the call cache.

It opens neither eyt.duckdb nor the call cache for writing, so it never waits for a run nor blocks one
(docs/explorer.md). Only `eyt_dagster/ops/cli.py` imports this package."""
