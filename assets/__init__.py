"""Thin Dagster asset functions, one module per stage, grouped `dialogue/` and `reports/`."""
