"""The shareable HTML report: its sections and the figures (no Dagster)."""
