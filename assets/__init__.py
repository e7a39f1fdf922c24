"""Thin Dagster asset functions, one module per stage: `eyt_bench/` and `speech_eq/` per benchmark, `reports/` over all partitions."""
