"""The persona attributes a cell's dialogue list filters by: the keys of dialogue.persona_pool's `attributes`
JSON (age bucket, sex, occupation group, education, ...) and its length bucket, each with the values the pool's
personas have. A key with a value per persona (a name, a city) is not offered: it filters nothing useful."""

from __future__ import annotations

import json
from typing import Any

from eyt_dagster.explorer.reads import Warehouse

LENGTH = "length_bucket"  # a persona_pool column, offered beside the attributes
MAX_VALUES = 30  # a key with more distinct values than this in a pool is not offered


def facets(wh: Warehouse, pool: str) -> dict[str, list[str]]:
    """key -> its values in this pool (sorted), for the keys worth filtering by."""
    rows = wh.query(
        ["dialogue.persona_pool"],
        f"SELECT attributes, {LENGTH} FROM persona_pool WHERE pool = ?",
        [pool],
        partitions={"pool": pool},
    )
    seen: dict[str, set[str]] = {}
    for attributes, length in zip(rows["attributes"], rows[LENGTH]):
        found: dict[str, Any] = {}
        try:
            parsed = json.loads(attributes) if isinstance(attributes, str) else {}
            found = parsed if isinstance(parsed, dict) else {}
        except ValueError:
            pass
        if isinstance(length, str):
            found[LENGTH] = length
        for key, value in found.items():
            if isinstance(value, (str, int, float, bool)) and str(value) != "":
                seen.setdefault(str(key), set()).add(str(value))
    return {k: sorted(v) for k, v in sorted(seen.items()) if 1 < len(v) <= MAX_VALUES}


def parse(text: str, offered: dict[str, list[str]]) -> tuple[str, str] | None:
    """`key:value` (the filter's form) checked against the pool's facets; None for no filter. ValueError names a
    key or value the pool's personas do not have."""
    if not text:
        return None
    key, sep, value = text.partition(":")
    if not sep:
        raise ValueError(f"persona filter '{text}' is not key:value, e.g. age_bucket:30-44")
    if key not in offered:
        raise ValueError(f"unknown persona attribute '{key}'; the attributes are {', '.join(offered) or 'none'}")
    if value not in offered[key]:
        raise ValueError(f"no persona of this pool has {key} '{value}'; the values are {', '.join(offered[key])}")
    return key, value
