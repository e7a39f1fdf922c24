"""Kept so tests can `from json_schema_draw import ...`: the generator lives in eyt_dagster/ops/json_schema_draw.py
(the benchmark's localhost server, eyt_dagster/ops/bench_server.py, uses it too)."""

from eyt_dagster.ops.json_schema_draw import UnsupportedSchema, break_instance, draw, is_valid, longest  # noqa: F401 - re-exported for the tests
